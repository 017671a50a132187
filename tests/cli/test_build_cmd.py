"""``run.py build``: what a first run compiles, compiled ahead; said in a table or as JSON."""

from __future__ import annotations

import json

from cli_run import run

from market.compiled import build


def test_build_readies_the_engines_and_names_its_folder():
    out = run("build", "--json")
    assert out.returncode == 0, out.stderr
    said = json.loads(out.stdout)
    assert set(said["seconds"]) == {"two-agent game", "market engine (pairs)",
                                    "training kernel"}
    assert said["folder"] == str(build.folder()) and len(build.folder().name) == 16
    again = run("build")  # built: loaded, said in lines
    assert again.returncode == 0 and "market engine (pairs): ready in" in again.stdout
