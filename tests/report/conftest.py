"""The quick report, run once per test session and shared by the tests that read it.

Under ``-n 2`` each xdist worker has its own session fixtures, and the tests
that read the report are spread over the workers, so the first worker to ask
generates the report in a folder all workers share, under a file lock, and
the others read it.
"""

from __future__ import annotations

import contextlib
import fcntl
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
def quick_report(tmp_path_factory: pytest.TempPathFactory,
                 worker_id: str) -> tuple[Path, dict[str, Any]]:
    """``(folder, --json summary)`` of ``run.py report --quick``, generated once."""
    shared = tmp_path_factory.getbasetemp()
    if worker_id != "master":  # every worker's base lies in the session's common folder
        shared = shared.parent
    out, done = shared / "quick-report", shared / "quick-report.json"
    with open(shared / "quick-report.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not done.exists():
            code, summary = run_report(out)
            assert code == 0 and summary is not None
            done.write_text(json.dumps(summary))
    return out, json.loads(done.read_text())
