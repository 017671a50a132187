"""A damaged cache file of a generated module is repaired, not reported on every run.

numba keeps each generated module's compiled code in an index (``.nbi``) and
data files (``.nbc``); one cut short or overwritten made every later run end
in "numba cannot compile ... (EOFError ...)". Now each function's damaged files are
discarded and it is compiled afresh, with one note.
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
    files = sorted(tmp_path.rglob("*.nb[ic]"))
    assert files, "no cache files written"
    for path in files:  # garbage in every index, nothing in every data file
        path.write_bytes(b"garbage\n" if path.suffix == ".nbi" else b"")
    again = _run(tmp_path)
    assert again.returncode == 0, again.stderr
    assert again.stdout == first.stdout and "Traceback" not in again.stderr
    notes = again.stderr.splitlines()
    assert notes and all("note: numba's cache of" in n and "was damaged" in n for n in notes)
    assert len(notes) == len(set(notes))  # one note for each function's files
    third = _run(tmp_path)  # and cached again after: not a word
    assert third.returncode == 0 and third.stderr == "", third.stderr
