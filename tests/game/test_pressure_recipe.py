"""The architecture page's recipe for a new kind of time pressure, walked: a copy of the
project whose ``market/game/pressure.py`` alone declares one more kind (a breakdown risk that
grows with each offer, as a user tried) takes it everywhere a kind of pressure is taken, with
no other file of ``market/`` or ``strategies/`` touched. Its rule (``market/game/moves.py``)
is the recipe's other step; it is left out here because it only changes what the compiled
game does, not where the kind reaches."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]

#: the recipe's one edit: a declaration, its place among the fields and its kind
DECLARATION = '''
RISK_GROWTH = Param(
    "risk_growth", "float", 0.0, "added to the breakdown risk after each counter-offer, in "
    "[0, 1) (default 0)", lo=0, hi=1, closed=True, below=True, flag="--risk-growth",
    metavar="G", extension=True, control=Control("Risk growth per offer", 0.0, 0.1),
    resolution=RESOLUTION)

#: every kind of time pressure'''

PROBE = r'''
import dataclasses, inspect, io, json, sys
from contextlib import redirect_stdout

from market.cli import build_parser, evaluate_cmd
from market.game.pressure import Pressure
from market.game.rules import Protocol
import numpy as np

from market.game import qtable
from market.game.table_files import ARRAYS, TablePair, load_tables, save_tables
from market.game.train_config import TrainConfig
from market.interop.gymnasium_env import BargainingEnv
from market.interop.pettingzoo_env import env
from market.sim import params
from market.sim.model import MarketModel
from market.view import settings

game = Protocol(5, 5, risk_growth=0.05)
out = {
    "record": Pressure.of(game).risk_growth,
    "timed": game.timed,
    "undiscounted": game.undiscounted().risk_growth,
    "trainer": TrainConfig(risk_growth=0.05).risk_growth,
    "market": params.check({"risk_growth": 0.05}).protocol.risk_growth,
    "model_keyword": "risk_growth" in inspect.signature(MarketModel.__init__).parameters,
    "slider": settings.PRESSURE_SLIDERS["risk_growth"].label,
    "view_default": settings.DEFAULTS["risk_growth"],
    "pettingzoo": env(risk_growth=0.05).unwrapped.settings.protocol.risk_growth,
    "gymnasium": BargainingEnv(risk_growth=0.05).settings.protocol.risk_growth,
    "header": evaluate_cmd._pressure_text({"discount": {"seller": 1.0, "buyer": 1.0},
                                           **evaluate_cmd.pressure_record(game)}),
    "table_file_array": "risk_growth" in ARRAYS,
}
path = sys.argv[1]
zeros = np.zeros((qtable.n_rows(game), game.n_actions))
save_tables(path, TablePair(game, zeros, zeros))
out["table_file"] = load_tables(path).protocol.risk_growth
commands = build_parser()._subparsers._group_actions[0].choices
out["flag"] = sorted(name for name, parser in commands.items()
                     if "--risk-growth" in parser.format_help())
print(json.dumps(out))
'''


def _copy_with_the_new_kind(dest: Path) -> None:
    for top in ("market", "strategies"):
        shutil.copytree(ROOT / top, dest / top, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "run.py", dest / "run.py")
    f = dest / "market" / "game" / "pressure.py"
    text = f.read_text()
    edits = [("\n#: every kind of time pressure", DECLARATION),
             ("BREAKDOWN, SELLER_COST, BUYER_COST)\n",
              "BREAKDOWN, SELLER_COST, BUYER_COST, RISK_GROWTH)\n"),
             ('"cost per offer: Seller {}, Buyer {}", True))',
              '"cost per offer: Seller {}, Buyer {}", True),\n'
              '         Kind("risk_growth", "g", (RISK_GROWTH,), '
              '"breakdown risk growing {} per offer", False))')]
    for old, new in edits:
        assert text.count(old) == 1, f"the recipe's edit no longer applies: {old!r}"
        text = text.replace(old, new)
    f.write_text(text)


@pytest.mark.slow
def test_a_new_kind_of_pressure_declared_alone_reaches_every_place_that_takes_one(tmp_path):
    """Declared in ``pressure.py`` alone, the new kind is a field of the game's record, the
    protocol, the trainer's config and the market's parameters; the model's keyword, the
    view's slider, both environments' keywords, the evaluator's header, a table file's
    arrays, and a flag of every command that takes time pressure, refused there out of its
    range in one line."""
    _copy_with_the_new_kind(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(tmp_path),
           "NEGOTIATION_MARKET_CACHE": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path / "t.npz")], env=env,
                          cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.splitlines()[-1])
    assert out == {
        "record": 0.05, "timed": True, "undiscounted": 0.05, "trainer": 0.05, "market": 0.05,
        "model_keyword": True, "slider": "Risk growth per offer", "view_default": 0.0,
        "pettingzoo": 0.05,
        "gymnasium": 0.05, "header": ", breakdown risk growing 0.05 per offer",
        "table_file_array": True, "table_file": 0.05,
        "flag": ["baseline", "batch", "evaluate", "market", "tournament", "train"]}

    bad = subprocess.run([sys.executable, str(tmp_path / "run.py"), "market", "--risk-growth", "1"],
                         env=env, cwd=tmp_path, capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1, bad.stderr
    assert "risk_growth" in bad.stderr or "--risk-growth" in bad.stderr
