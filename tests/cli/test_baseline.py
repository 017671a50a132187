"""``python run.py baseline``: the legacy view, its JSON record and its errors."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import cli_run  # tests/support, on pytest's pythonpath
import numpy as np
import pytest

from market.game import qtable
from market.game.grid import PriceGrid
from market.game.play import Ranges, play, record_dict
from market.game.rules import BUYER, Protocol
from market.game.table_files import TablePair, save_tables
from market.view.terminal import Scale, frames, render, scale_for

ROOT = Path(__file__).resolve().parents[2]


def baseline(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    """``run.py baseline ARGS`` in this process (tests/support/cli_run.py), in a bare
    environment: no terminal, no $COLUMNS."""
    return cli_run.run("baseline", *args, cwd=ROOT, stdin=stdin,
                       env={"PATH": "/usr/bin:/bin", "TERM": "dumb"})


def table_file(path: Path, P: int = 5, T: int = 5, seed: int = 0, **pressure: float) -> Path:
    protocol = Protocol(P, T, **pressure)
    r = np.random.default_rng(seed)
    shape = (2, qtable.n_rows(protocol), protocol.n_actions)
    save_tables(path, TablePair(protocol, r.random(shape), r.random(shape)))
    return path


class TestCommand:
    def test_default_is_the_legacy_deal_at_32_in_plain_text(self):
        out = baseline()
        assert out.returncode == 0, out.stderr
        lines = out.stdout.splitlines()
        assert lines[-1] == "DEAL at 32"
        assert "\x1b" not in out.stdout  # not a terminal: no escape codes
        assert sum(line.startswith("Round ") for line in lines) == 5
        assert "Round 5 of 10: buyer offers 32, seller accepts 32" in out.stdout
        assert sum(line.startswith("BUYER") for line in lines) == 5

    def test_step_without_a_terminal_does_not_wait(self):
        out = baseline("--step", stdin="")
        assert out.returncode == 0 and out.stdout.splitlines()[-1] == "DEAL at 32"
        assert "Enter" not in out.stdout

    def test_json_record(self):
        out = baseline("--json")
        assert out.returncode == 0, out.stderr
        data = json.loads(out.stdout)
        assert data["outcome"] == {"deal": True, "level": 33, "price": 32}
        assert data["rounds_used"] == 5 and data["first"] == "buyer"
        assert [m["price"] for m in data["moves"]] == [0, 50, 25, 37, 31, 34, 32, 33, 32, 32]
        assert data["moves"][-1] == {"move": 9, "side": "seller", "action": "accept",
                                     "level": 33, "price": 32}
        assert data["grid"] == {"lo": 0, "hi": 100, "prices": 101}

    def test_options_change_the_game(self):
        out = baseline("--json", "--buyer-max", "15", "--seller-min", "20", "--rounds", "3",
                       "--first", "seller", "--buyer", "hardliner")
        data = json.loads(out.stdout)
        assert out.returncode == 0
        assert data["moves"][0] == {"move": 0, "side": "seller", "action": "offer",
                                    "level": 101, "price": 100}
        assert data["outcome"]["deal"] is False and data["rounds"] == 3

    def test_no_deal_is_printed(self):
        out = baseline("--buyer-max", "15", "--buyer", "hardliner", "--seller", "hardliner")
        assert out.returncode == 0 and out.stdout.splitlines()[-1] == "NO DEAL"

    def test_stochastic_strategies_follow_the_seed(self):
        a = baseline("--json", "--buyer", "zi-c", "--seller", "zi-c", "--seed", "7")
        b = baseline("--json", "--buyer", "zi-c", "--seller", "zi-c", "--seed", "7")
        assert a.returncode == 0 and a.stdout == b.stdout

    def test_q_table_maps_the_price_range_onto_its_levels(self, tmp_path):
        path = table_file(tmp_path / "q.npz")
        out = baseline("--json", "--seller", f"qlearning:{path}")
        assert out.returncode == 0, out.stderr
        data = json.loads(out.stdout)
        assert data["grid"] == {"lo": 0, "hi": 100, "prices": 5} and data["rounds"] == 5
        assert "P=5, T=5" in data["note"] and "0, 25, 50, 75, 100" in data["note"]
        assert all(m["price"] in (None, 0, 25, 50, 75, 100) for m in data["moves"])
        text = baseline("--seller", f"qlearning:{path}")
        assert text.returncode == 0 and text.stdout.startswith("note: the seller Q-table fixes")


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--buyer-min", "90"], "--buyer-min"),
        (["--seller-min", "50", "--seller-max", "40"], "--seller-min"),
        (["--buyer", "nonsense"], "unknown strategy"),
        (["--seller", "averaging:x.npz"], "takes nothing after ':'"),
        (["--rounds", "0"], "--rounds"),
        (["--buyer-max", "8.5"], "--buyer-max"),
        (["--first", "both"], "--first"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, needle):
    out = baseline(*args)
    assert out.returncode == 2
    assert len(out.stderr.strip().splitlines()) == 1 and needle in out.stderr
    assert "Traceback" not in out.stderr and out.stdout == ""


@pytest.mark.parametrize("content", [b"not a zip file", b""])
def test_corrupt_table_file_is_one_line_and_exit_2(tmp_path, content):
    bad = tmp_path / "bad.npz"
    bad.write_bytes(content)
    out = baseline("--seller", f"qlearning:{bad}")
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1
    assert str(bad) in out.stderr and "Traceback" not in out.stderr


def test_table_files_for_different_games_are_refused(tmp_path):
    a = table_file(tmp_path / "a.npz", P=5, T=5)
    b = table_file(tmp_path / "b.npz", P=4, T=5)
    out = baseline("--seller", f"qlearning:{a}", "--buyer", f"qlearning:{b}")
    assert out.returncode == 2 and "different games" in out.stderr


def test_tables_trained_under_other_risks_and_costs_say_what_differs(tmp_path):
    a = table_file(tmp_path / "a.npz", breakdown=0.1, seller_cost=0.02)
    b = table_file(tmp_path / "b.npz")
    out = baseline("--seller", f"qlearning:{a}", "--buyer", f"qlearning:{b}")
    assert out.returncode == 2 and "different games" in out.stderr
    assert "breakdown=0.1" in out.stderr and "seller_cost=0.02" in out.stderr
    assert "breakdown=0," in out.stderr or "breakdown=0;" in out.stderr, out.stderr


def test_rounds_conflicting_with_a_table_file_are_refused(tmp_path):
    out = baseline("--seller", f"qlearning:{table_file(tmp_path / 'q.npz')}", "--rounds", "7")
    assert out.returncode == 2 and "T=5" in out.stderr


class TestRenderer:
    """The legacy view as text: one screen per round, bars where the money says."""

    @pytest.fixture
    def legacy(self):
        import strategies

        grid = PriceGrid.whole_units(0, 100)
        ranges = Ranges(buyer=(0.0, 80.0), seller=(20.0, 100.0))
        record = play(Protocol(grid.prices, 10), grid, strategies.make("averaging", "seller"),
                      strategies.make("averaging", "buyer"), ranges, BUYER,
                      np.random.default_rng(0))
        return grid, ranges, record

    def test_one_frame_per_round_with_the_standing_offers(self, legacy):
        grid, _, record = legacy
        fr = frames(record, grid)
        assert [f.round for f in fr] == [0, 1, 2, 3, 4] and fr[-1].last
        assert fr[0].offers == {"buyer": 0.0, "seller": 50.0}
        assert fr[-1].events == ["buyer offers 32", "seller accepts 32"]

    def test_bars_and_marks_sit_on_their_prices(self, legacy):
        grid, ranges, record = legacy
        width = 101 + 8 + 28
        screens = [t.plain for t in render(record, grid, ranges, 10, console_width=width)]
        scale = scale_for(grid, width)
        assert scale.width == 101  # one column per whole unit
        buyer_row, seller_row = screens[0].splitlines()[2:4]
        assert buyer_row.startswith("BUYER") and seller_row.startswith("SELLER")
        assert buyer_row[scale.col(0)] == "B" and seller_row[scale.col(50)] == "S"
        # ranges: Buyer 0-80, Seller 20-100
        assert buyer_row[scale.col(80)] == "=" and buyer_row[scale.col(81)] == " "
        assert seller_row[scale.col(19)] == " " and seller_row[scale.col(20)] == "="
        ruler = screens[0].splitlines()[1]
        assert ruler[scale.col(50) - 1 : scale.col(50) + 1] == "50"
        assert screens[-1] == "DEAL at 32"

    @pytest.mark.parametrize("lo,hi,width", [(0, 100, 48), (0, 7, 10), (35, 1234, 60),
                                             (0, 3, 101), (20, 21, 30)])
    def test_ruler_labels_end_on_their_column_and_stay_apart(self, lo, hi, width):
        scale = Scale(lo, hi, width)
        ruler = scale.ruler().plain
        labels = list(re.finditer(r"\S+", ruler))
        assert len(labels) >= 2
        for m in labels:
            assert m.end() - 1 == scale.col(float(m.group()))
            assert lo <= float(m.group()) <= hi

    def test_json_record_prices(self, legacy):
        grid, _, record = legacy
        data = record_dict(record, grid)
        assert data["outcome"]["price"] == 32 and data["moves"][0]["price"] == 0


def test_a_breakdown_risk_can_end_the_talks_and_says_so():
    ended = []
    for seed in range(6):
        res = baseline("--breakdown", "0.5", "--seed", str(seed), "--json")
        assert res.returncode == 0, res.stderr
        data = json.loads(res.stdout)
        if data.get("broke_down"):
            assert not data["outcome"]["deal"] and data["moves"][-1]["action"] == "offer"
            ended.append(seed)
    assert ended  # at 0.5 per counter-offer, some of six talks break down
    text = baseline("--breakdown", "0.5", "--seed", str(ended[0])).stdout
    assert "NO DEAL (the talks broke down)" in text
    assert "broke_down" not in baseline("--json").stdout  # the document's game as before


def test_tables_trained_under_time_pressure_play_their_game_and_refuse_another(tmp_path):
    path = tmp_path / "costly.npz"
    game = Protocol(5, 5, seller_cost=0.05)
    rng = np.random.default_rng(0)
    shape = (qtable.n_rows(game), game.n_actions)
    save_tables(path, TablePair(game, rng.random(shape), rng.random(shape)))
    ok = baseline("--seller", f"qlearning:{path}", "--json")
    assert ok.returncode == 0, ok.stderr
    bad = baseline("--seller", f"qlearning:{path}", "--seller-cost", "0.1")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
    assert "trained with seller_cost 0.05, not 0.1" in bad.stderr


def test_a_deal_outside_a_side_s_range_is_remarked_where_it_happens(tmp_path, capsys):
    """A Q-table promises no individual rationality: its deal below the Seller's range is
    said beside the outcome (and in --json), not left for the strategies table."""
    import json

    from market.cli import main

    tables = tmp_path / "q.npz"
    assert main(["train", "--seeds", "1", "--save", str(tables), "--json"]) == 0
    capsys.readouterr()
    assert main(["baseline", "--seller", f"qlearning:{tables}", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["outcome"]["price"] < 20  # seed 0's table: a deal at 0
    assert "outside the Seller's range 20-100" in out["remark"]
    assert main(["baseline", "--json"]) == 0  # averaging against averaging: inside, silent
    assert "remark" not in json.loads(capsys.readouterr().out)
