"""A new institution is its own file: the registry finds it, and every command takes it.

The posted-offer market of ``tests/support/posted_offer.py`` is copied into
a copy of the package, as a user adding a fourth institution would write it,
touching no other file; the market command then lists it, runs it compiled and
records it (the build is the copy's own: cold, about a minute).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_a_fourth_institution_is_one_file_in_the_package(tmp_path):
    copy = tmp_path / "repo"
    ignore = shutil.ignore_patterns("__pycache__")
    for top in ("market", "strategies"):
        shutil.copytree(ROOT / top, copy / top, ignore=ignore)
    shutil.copy(ROOT / "run.py", copy)
    shutil.copy(ROOT / "tests" / "support" / "posted_offer.py",
                copy / "market" / "sim" / "institutions" / "posted.py")
    env = {**os.environ, "NEGOTIATION_MARKET_CACHE": str(tmp_path / "cache")}

    def market(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "run.py", "market", *args], cwd=copy, env=env,
                              capture_output=True, text=True, timeout=600)

    shown = market("--help")
    assert "pairs|cda|call|posted" in shown.stdout and "posted (Sellers post asks" in " ".join(
        shown.stdout.split()), shown.stdout
    run = market("--institution", "posted", "--buyer-mix", "zi-c=1", "--seller-mix", "zi-c=1",
                 "--prices", "20", "--steps", "30", "--json", "--out", str(tmp_path / "out"))
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert out["parameters"]["institution"] == "posted"
    s = out["summary"]
    assert s["deals"] > 0 and 0.5 < s["efficiency"] <= 1.0, s  # ZI-C traders, constrained
    # refused where it has no meaning, as every book institution is: time pressure
    bad = market("--institution", "posted", "--discount", "0.9", "--steps", "1")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1, bad.stderr
    assert "institution posted has no offers to discount" in bad.stderr
