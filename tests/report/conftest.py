"""The quick report, run once per session and shared by the tests that read it.

Every test that uses it is in the xdist group ``report``, so under ``-n 2`` the
report is generated once, on one worker (``--dist loadgroup``).
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest

from market.cli import main


def run_report(out: Path, *args: str) -> tuple[int, dict[str, Any] | None]:
    """``run.py report --out OUT --quick --json --processes 1 ARGS`` in this process."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = main(["report", "--out", str(out), "--quick", "--json", "--processes", "1",
                     *args])
    return code, (json.loads(buf.getvalue()) if code == 0 else None)


@pytest.fixture
def report_runner() -> Any:
    """:func:`run_report`, for tests that run their own report."""
    return run_report


@pytest.fixture(scope="session")
def quick_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("report")
    code, summary = run_report(out)
    assert code == 0 and summary is not None
    return out, summary
