"""The round-robin tournament: matrix shapes, known outcomes, seeding, files and CLI."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import cli_run  # tests/support, on pytest's pythonpath
import numpy as np
import pandas as pd
import pytest

import strategies
from market.errors import UsageError
from market.game import qtable
from market.game.rules import Protocol
from market.game.table_files import TablePair, save_tables
from market.runs.tournament import (
    Entrant,
    genius_entrants,
    genius_lineup,
    registry_entrants,
    run_tournament,
    selfplay_tables,
    write_outputs,
)

ROOT = Path(__file__).resolve().parents[2]
P5T5 = Protocol(5, 5)


def entrants(*names: str) -> list[Entrant]:
    return registry_entrants(P5T5, list(names))


def test_matrix_shape_and_orientation():
    res = run_tournament(entrants("averaging", "hardliner", "zi-u"), P5T5, repetitions=20, seed=1)
    for df in (res.seller_payoff, res.buyer_payoff, res.deal_rate, res.mean_level):
        assert df.shape == (3, 3)
        assert list(df.index) == ["averaging", "hardliner", "zi-u"]
        assert list(df.columns) == ["averaging", "hardliner", "zi-u"]
        assert df.notna().to_numpy().all() or df is res.mean_level
    assert res.mean_payoff.shape == (3, 3)
    # the mean over both sides combines A as Seller vs B and A as Buyer vs B
    a, b = "hardliner", "averaging"
    expected = (res.seller_payoff.loc[a, b] + res.buyer_payoff.loc[b, a]) / 2
    assert res.mean_payoff.loc[a, b] == pytest.approx(expected)
    # two-agent rewards: at a deal they sum to 1, without one to 0
    total = res.seller_payoff + res.buyer_payoff
    np.testing.assert_allclose(total.to_numpy(), res.deal_rate.to_numpy())


def test_averaging_against_averaging_on_the_whole_range():
    # Seller first: 5, 3, 4, 3 -> deal at 3; Buyer first: 1, 3, 2, 2 -> deal at 2.
    res = run_tournament(entrants("averaging"), P5T5, repetitions=10)
    assert res.deal_rate.loc["averaging", "averaging"] == 1.0
    assert res.mean_level.loc["averaging", "averaging"] == pytest.approx(2.5)
    assert res.seller_payoff.loc["averaging", "averaging"] == pytest.approx(0.5)


def test_hardliner_against_hardliner_on_the_whole_range():
    # Neither concedes; the second mover takes the final decision and accepts the
    # first mover's extreme: level 5 when the Seller opens, level 1 when the Buyer does.
    res = run_tournament(entrants("hardliner"), P5T5, repetitions=10)
    assert res.deal_rate.loc["hardliner", "hardliner"] == 1.0
    assert res.seller_payoff.loc["hardliner", "hardliner"] == pytest.approx((1.0 + 0.2) / 2)
    assert res.buyer_payoff.loc["hardliner", "hardliner"] == pytest.approx((0.0 + 0.8) / 2)


def test_disjoint_reservation_ranges_never_deal():
    res = run_tournament(entrants("averaging", "hardliner"), P5T5, repetitions=5,
                         seller_range=(4, 5), buyer_range=(1, 3))
    assert (res.deal_rate.to_numpy() == 0).all()
    assert (res.seller_payoff.to_numpy() == 0).all()


def test_same_seed_same_matrix_and_pairings_independent_of_the_field():
    small = run_tournament(entrants("zi-u", "zi-c"), P5T5, repetitions=50, seed=7)
    again = run_tournament(entrants("zi-u", "zi-c"), P5T5, repetitions=50, seed=7)
    pd.testing.assert_frame_equal(small.seller_payoff, again.seller_payoff)
    # adding an entrant leaves the other pairings' outcomes unchanged
    big = run_tournament(entrants("averaging", "zi-u", "zi-c"), P5T5, repetitions=50, seed=7)
    assert big.seller_payoff.loc["zi-u", "zi-c"] == small.seller_payoff.loc["zi-u", "zi-c"]
    other = run_tournament(entrants("zi-u", "zi-c"), P5T5, repetitions=50, seed=8)
    assert not other.seller_payoff.equals(small.seller_payoff)


def test_one_negotiate_call_per_pairing(monkeypatch):
    from market import compiled_game

    calls = []
    real = compiled_game.negotiate

    def counting(protocol, seller, buyer, first, rng):
        calls.append(len(seller.group))
        return real(protocol, seller, buyer, first, rng)

    monkeypatch.setattr(compiled_game, "negotiate", counting)
    run_tournament(entrants("averaging", "hardliner"), P5T5, repetitions=30)
    assert calls == [60] * 4  # 2 x 2 pairings, each with both first movers as rows


def test_qlearning_plays_given_tables_frozen():
    # A table that makes the Seller open at 5 and accept anything, the Buyer open at 1
    # and accept anything: whoever opens gets its extreme accepted.
    S, A = qtable.n_rows(P5T5), P5T5.n_actions
    seller = np.zeros((S, A))
    buyer = np.zeros((S, A))
    seller[0, 4] = seller[1:, 5] = 1.0
    buyer[0, 0] = buyer[1:, 5] = 1.0
    pair = TablePair(P5T5, seller, buyer)
    ents = registry_entrants(P5T5, ["qlearning"], tables=pair)
    res = run_tournament(ents, P5T5, repetitions=10)
    assert res.seller_payoff.loc["qlearning", "qlearning"] == pytest.approx((1.0 + 0.2) / 2)
    assert "given" in res.notes["qlearning"]


def test_selfplay_tables_are_reused_from_the_cache(tmp_path, monkeypatch):
    cache = tmp_path / "q.npz"
    S, A = qtable.n_rows(P5T5), P5T5.n_actions
    save_tables(cache, TablePair(P5T5, np.ones((2, S, A)), np.ones((2, S, A)),
                                 {"tournament_seed": 3, "nash_conv": 0.0}))
    import market.game.training as training

    monkeypatch.setattr(training, "train", lambda *a, **k: pytest.fail("trained again"))
    pair, note = selfplay_tables(P5T5, seed=3, cache=cache)
    assert pair.seller.shape == (2, S, A) and "reused" in note


def test_selfplay_training_feeds_the_qlearning_entrant(tmp_path):
    cache = tmp_path / "q.npz"
    calls = []
    pair, note = selfplay_tables(P5T5, seed=1, cache=cache, seeds=2, cycles=2, episodes=50,
                                 progress=lambda done, total: calls.append((done, total)))
    assert calls and calls[-1] == (100, 100)  # the CLI's progress bar hears every chunk
    assert pair.role_aware and pair.seller.shape == (2, qtable.n_rows(P5T5), P5T5.n_actions)
    assert "100 episodes" in note and "best of 2 seeds" in note and cache.exists()
    again, note2 = selfplay_tables(P5T5, seed=1, cache=cache)
    np.testing.assert_array_equal(again.seller, pair.seller)
    assert "reused" in note2


def test_every_registered_strategy_that_can_sell_is_a_row():
    names = [n for n in strategies.names() if n != "qlearning"]  # no training in the test
    res = run_tournament(registry_entrants(P5T5, names), P5T5, repetitions=2)
    sellers = [n for n in names if "seller" in strategies.get(n).classifier["sides"]]
    assert list(res.seller_payoff.index) == sellers
    assert res.deal_rate.notna().to_numpy().all()


def test_files_written(tmp_path):
    res = run_tournament(entrants("averaging", "zi-c"), P5T5, repetitions=5)
    files = write_outputs(res, tmp_path)
    assert {f.name for f in files} == {"seller_payoff.csv", "buyer_payoff.csv", "deal_rate.csv",
                                       "mean_payoff.csv", "heatmap.png"}
    back = pd.read_csv(tmp_path / "seller_payoff.csv", index_col=0)
    np.testing.assert_allclose(back.to_numpy(), res.seller_payoff.to_numpy(), rtol=1e-5)
    assert (tmp_path / "heatmap.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def run_cli(*args: str) -> subprocess.CompletedProcess:
    """``run.py tournament ARGS`` in this process (tests/support/cli_run.py)."""
    return cli_run.run("tournament", *args, cwd=ROOT)


def test_cli_json_and_files(tmp_path):
    out = run_cli("--strategies", "averaging,hardliner", "--repetitions", "5",
                  "--out", str(tmp_path), "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["seller_payoff"]["hardliner"]["hardliner"] == pytest.approx(0.6)
    assert (tmp_path / "mean_payoff.csv").exists() and (tmp_path / "heatmap.png").exists()


def test_default_lineup_leaves_out_strategies_at_another_library_speed():
    names = [e.name for e in registry_entrants(P5T5, tables="unused")]
    slow = [n for n in strategies.names() if strategies.get(n).classifier.get("long_run_time")]
    assert {"negmas", "genius"} <= set(slow)
    assert not set(slow) & set(names) and "averaging" in names


def test_genius_lineup_by_count_and_by_name():
    pytest.importorskip("negmas_genius_agents")
    from strategies.negmas_agents import anac_agents

    agents = anac_agents()
    assert agents[:3] == ["AgentK", "Yushu", "Nozomi"]  # ANAC 2010 first
    assert genius_lineup("3", P5T5) == agents[:3]
    everyone = genius_lineup(str(len(agents)), P5T5)
    assert "SAGA" not in everyone and len(everyone) == len(agents) - 1  # needs P >= 20
    assert "SAGA" in genius_lineup(str(len(agents)), Protocol(21, 5))
    assert genius_lineup(" HardHeaded, AgentK ", P5T5) == ["HardHeaded", "AgentK"]
    for bad, needle in (("0", "a count of at least 1"), (str(len(agents) + 1), "count in \\[1, "),
                        ("Nope", "unknown class 'Nope'"),
                        ("SAGA", "SAGA cannot play P=5"), ("AgentK,AgentK", "twice"),
                        (",", "a count or a comma list")):
        with pytest.raises(UsageError, match=needle):
            genius_lineup(bad, P5T5)


def test_anac_agents_play_in_the_tournament():
    pytest.importorskip("negmas_genius_agents")
    field = entrants("hardliner") + genius_entrants(P5T5, ["HardHeaded", "AgentK"])
    res = run_tournament(field, P5T5, repetitions=2, seed=3)
    assert list(res.seller_payoff.index) == ["hardliner", "genius:HardHeaded", "genius:AgentK"]
    assert res.deal_rate.notna().to_numpy().all()
    again = run_tournament(field, P5T5, repetitions=2, seed=3)
    pd.testing.assert_frame_equal(res.seller_payoff, again.seller_payoff)


@pytest.mark.parametrize("args, names", [
    (["--genius", "0"], "--genius"),
    (["--genius", "NotAnAgent"], "--genius"),
    (["--strategies", "nope"], "--strategies"),
    (["--seller-range", "0-9"], "--seller-range"),
    (["--buyer-range", "x"], "--buyer-range"),
    (["--repetitions", "0"], "--repetitions"),
])
def test_cli_bad_input_is_one_line_exit_2(tmp_path, capsys, args, names):
    from market.cli import main

    try:
        code = main(["tournament", *args, "--out", str(tmp_path)])
    except SystemExit as exc:  # argparse's own errors
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and names in lines[0] and "Traceback" not in err


def test_an_unwritable_heatmap_is_refused_before_any_pairing(tmp_path, capsys, monkeypatch):
    import market.runs.tournament as tournament
    from market.cli import main

    monkeypatch.setattr(tournament, "play_pairing", lambda *a, **k: pytest.fail("played"))
    (tmp_path / "heatmap.png").mkdir()
    assert main(["tournament", "--strategies", "averaging,hardliner", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.strip() == (f"run.py tournament: error: --out: {tmp_path / 'heatmap.png'} is a "
                           "directory, not a file")
    assert [p.name for p in tmp_path.iterdir()] == ["heatmap.png"]  # no CSV file


def test_the_outputs_are_written_all_or_none(tmp_path, monkeypatch):
    import market.plots.tournament as heatmap

    res = run_tournament(entrants("averaging", "hardliner"), P5T5, repetitions=2)
    monkeypatch.setattr(heatmap, "plot_heatmap", lambda *a: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        write_outputs(res, tmp_path / "t")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("args, needle", [
    (["--prices", "1000", "--rounds", "1000"],
     "training 4 seed(s) at P=1000, T=1000 would need 48,096,096,192 Q-table cells"),
    (["--strategies", "averaging,hardliner", "--prices", "1000", "--rounds", "1000",
      "--repetitions", "1000000"],
     "1,000,000 negotiations per pairing and first mover at P=1000, T=1000 would need about"),
])
def test_sizes_beyond_the_caps_are_refused_before_any_work(tmp_path, capsys, args, needle):
    from market.cli import main

    assert main(["tournament", *args, "--out", str(tmp_path / "t")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and needle in err
    assert "lower --repetitions, --prices or --rounds" in err
    assert list(tmp_path.iterdir()) == []
