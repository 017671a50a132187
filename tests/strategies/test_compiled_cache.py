"""A damaged cache file of a generated module is repaired, not reported on every run.

numba keeps each generated module's compiled code in an index (``.nbi``) and
data files (``.nbc``); one cut short or overwritten made every later run end
in "numba cannot compile ... (EOFError ...)". Now the module's cache files are
removed and it is compiled afresh, once, with the usual notice.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # end-to-end: run by CI, skippable locally (-m 'not slow')

ROOT = Path(__file__).resolve().parents[2]
def _run(cache: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "run.py", "baseline", "--json"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "NEGOTIATION_MARKET_CACHE": str(cache)})


def test_a_damaged_index_or_data_file_is_compiled_afresh(tmp_path):
    first = _run(tmp_path)
    assert first.returncode == 0, first.stderr
    files = sorted((tmp_path / "compiled" / "__pycache__").glob("*.nb[ic]"))
    assert files, "no cache files written"
    for path in files:  # garbage in every index, nothing in every data file
        path.write_bytes(b"garbage\n" if path.suffix == ".nbi" else b"")
    again = _run(tmp_path)
    assert again.returncode == 0, again.stderr
    assert again.stdout == first.stdout
    assert "compiling averaging's rule" in again.stderr  # compiled afresh, said once
    third = _run(tmp_path)  # and cached again after
    assert third.returncode == 0 and "compiling" not in third.stderr, third.stderr
