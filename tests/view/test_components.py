"""The browser view without a browser: the two-agent game, the figures, the model wrapper,
the Solara pages rendered in-process, and the ``viz`` command's input checks."""

from __future__ import annotations

import socket

import numpy as np
import pytest

import strategies
from market.cli import main
from market.game import qtable
from market.game.qtable import legal_rows
from market.game.rules import BUYER, SELLER, Protocol
from market.game.tables import TablePair, save_tables
from market.view import figures as vf
from market.view.components import (
    ViewMarket,
    learner_tables,
    mix_of,
    model_params,
    pair_ranges,
    qtable_panels,
)
from market.view.two_agent import moves_html, setup_game, strategy_spec


def _gid(ax, gid):
    return [a for a in [*ax.patches, *ax.lines, *ax.collections, *ax.texts, *ax.images]
            if a.get_gid() == gid]


# --- the two-agent game --------------------------------------------------------------------------
def test_legacy_numbers_end_in_a_deal_at_32():
    game = setup_game()  # Buyer 0-80, Seller 20-100, 10 rounds, Buyer first, averaging both
    rec = game.record
    assert rec.first == "buyer"
    assert rec.deal and float(game.grid.price(rec.deal_level)) == 32.0
    assert game.protocol == Protocol(101, 10)
    assert [m.action for m in rec.moves][-1] == "accept"
    assert "<td style='padding: 2px 14px 2px 0; text-align: left'>accept</td>" in moves_html(
        game, len(rec.moves))


def _accepting_seller_tables(path, protocol: Protocol) -> None:
    """A Seller table that accepts whatever is offered and opens at the top level."""
    S, A, P = qtable.n_rows(protocol), protocol.n_actions, protocol.prices
    seller = np.zeros((S, A))
    seller[0, P - 1] = 1.0  # start: offer the top level
    seller[1:, P] = 1.0  # every offer: accept
    save_tables(path, TablePair(protocol, seller, np.zeros((S, A))))


def test_a_saved_q_table_plays_and_fixes_the_game(tmp_path):
    path = tmp_path / "q.npz"
    _accepting_seller_tables(path, Protocol(5, 5))
    game = setup_game(seller=strategy_spec("qlearning", str(path)), buyer="averaging")
    assert game.protocol == Protocol(5, 5)
    assert "P=5, T=5" in game.note
    # the averaging Buyer opens at its lowest price (0); averaging Sellers never accept that,
    # the table's Seller always accepts: the table is what played
    assert game.record.deal_level == 1
    assert float(game.grid.price(1)) == 0.0
    assert setup_game().record.deal_level != 1


def test_two_agent_input_errors_are_one_readable_line(tmp_path):
    a, b = tmp_path / "a.npz", tmp_path / "b.npz"
    _accepting_seller_tables(a, Protocol(5, 5))
    _accepting_seller_tables(b, Protocol(4, 5))
    with pytest.raises(ValueError, match="different games"):
        setup_game(seller=f"qlearning:{a}", buyer=f"qlearning:{b}")
    with pytest.raises(ValueError, match="no such file"):
        setup_game(seller=f"qlearning:{tmp_path / 'missing.npz'}")
    with pytest.raises(ValueError, match="seller's range"):
        setup_game(seller_range=(60, 20))
    with pytest.raises(ValueError, match="unknown strategy"):
        setup_game(buyer="nonsense")
    assert strategy_spec("averaging", "ignored.npz") == "averaging"
    assert strategy_spec("qlearning", "  ") == "qlearning"


def test_negotiation_figure_draws_ranges_offers_and_the_deal():
    game = setup_game()
    full = vf.negotiation_figure(game.record, game.grid, game.ranges, rounds=10)
    top, bottom = full.axes[:2]
    (buyer_bar,) = _gid(top, "range-buyer")
    (seller_bar,) = _gid(top, "range-seller")
    assert (buyer_bar.get_x(), buyer_bar.get_width()) == (0.0, 80.0)
    assert (seller_bar.get_x(), seller_bar.get_width()) == (20.0, 80.0)
    (outcome,) = _gid(top, "outcome")
    assert outcome.get_text() == "DEAL at 32"
    assert len(_gid(bottom, "accept")) == 1

    partial = vf.negotiation_figure(game.record, game.grid, game.ranges, shown=3, rounds=10)
    top, bottom = partial.axes[:2]
    assert not _gid(top, "outcome")
    assert "round 2 of 10" in top.get_title(loc="left")
    (buyer_line,) = _gid(bottom, "offers-buyer")
    assert list(buyer_line.get_xdata()) == [0.0, 25.0]
    assert list(buyer_line.get_ydata()) == [1, 2]
    (seller_line,) = _gid(bottom, "offers-seller")
    assert list(seller_line.get_xdata()) == [50.0]


# --- the market wrapper and its figures ----------------------------------------------------------
def test_controls_map_onto_the_model():
    m = ViewMarket(n_sellers=10, n_buyers=7, seller_strategy="averaging",
                   seller_other="qlearning", seller_share=30, buyer_strategy="zi-c",
                   buyer_other="zi-c", buyer_share=50, prices=6, rounds=4, period=3, seed=5)
    assert m.mixes[SELLER] == pytest.approx({"averaging": 0.3, "qlearning": 0.7})
    assert m.mixes[BUYER] == {"zi-c": 1.0}
    counts = np.bincount(m.sellers.strategy)
    assert dict(zip(m.strategy_names(SELLER), counts.tolist(), strict=True)) == {
        "averaging": 3, "qlearning": 7}
    assert (len(m.sellers), len(m.buyers)) == (10, 7)
    assert m.protocol == Protocol(6, 4) and m.period_length == 3
    assert mix_of("averaging", "hardliner", 0) == {"averaging": 0.0, "hardliner": 1.0}
    with pytest.raises(ValueError, match="percentage"):
        mix_of("averaging", "hardliner", 120)


@pytest.mark.parametrize("name", strategies.names())
def test_every_registered_strategy_can_be_chosen_and_drawn(name):
    """The Select controls list every registered strategy; each must run and draw."""
    assert name in model_params()["seller_strategy"]["values"]
    m = ViewMarket(n_sellers=12, n_buyers=12, seller_strategy=name, buyer_strategy=name,
                   seller_other="qlearning", buyer_share=100, period=2, seed=0)
    for _ in range(3):
        m.step()
    trace = m.trace(0)
    fig = vf.negotiation_figure(trace.record, trace.grid, pair_ranges(trace), rounds=5)
    moves = [mv for mv in trace.record.moves if mv.action == "offer"]
    drawn = sum(len(line.get_xdata()) for side in ("buyer", "seller")
                for line in _gid(fig.axes[1], f"offers-{side}"))
    assert drawn == len(moves)


def test_model_params_match_the_model_signature():
    """Mesa's ModelCreator rejects controls the model does not take; every control is valid."""
    from mesa.visualization.solara_viz import _check_model_params, split_model_params

    params = model_params()
    _check_model_params(ViewMarket.__init__, params)
    user, fixed = split_model_params(params)
    assert not fixed
    defaults = {k: v.value if hasattr(v, "value") else v["value"] for k, v in user.items()}
    m = ViewMarket(**defaults)
    assert m.protocol == Protocol(5, 5)


def test_period_trades_are_this_periods_deals():
    m = ViewMarket(n_sellers=30, n_buyers=30, period=3, seed=3)
    for _ in range(5):  # into the second period
        m.step()
        df = m.model_frame()
        assert len(m.period_trades) == int(df["period_deals"].iloc[-1])
    assert m.period == 1


def test_market_figures_show_the_collected_data():
    m = ViewMarket(n_sellers=40, n_buyers=40, seed=11)
    for _ in range(6):
        m.step()
    df = m.model_frame()
    d = df[df["step"] > 0]

    ax = vf.prices_figure(df, m.grid).axes[0]
    assert _gid(ax, "band")
    (mean,) = _gid(ax, "mean-price")
    has = d["deals"] > 0
    np.testing.assert_allclose(mean.get_ydata(), d.loc[has, "mean_price"])

    ax = vf.deals_figure(df).axes[0]
    heights = [p.get_height() for p in _gid(ax, "deals")]
    assert heights == d["deals"].tolist()

    ax = vf.earnings_figure(df).axes[0]
    bars = _gid(ax, "earnings")
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels == ["seller: averaging", "seller: qlearning", "buyer: averaging"]
    assert [b.get_width() for b in bars] == pytest.approx(
        [d[c].iloc[-1] for c in ("earnings.seller.averaging", "earnings.seller.qlearning",
                                 "earnings.buyer.averaging")])

    ax = vf.supply_demand_figure(m.values, m.costs, m.period_trades, m.grid).axes[0]
    (trades,) = _gid(ax, "trades")
    assert list(trades.get_ydata()) == m.period_trades
    (demand,) = _gid(ax, "demand")
    assert demand.get_ydata()[0] == pytest.approx(m.values.max())

    trace = m.trace(0)
    r = pair_ranges(trace)
    assert r.seller == (trace.seller.cost, m.grid.hi) and r.buyer == (m.grid.lo, trace.buyer.value)


def test_figures_before_the_first_step_say_so():
    m = ViewMarket(seed=1)
    df = m.model_frame()
    for fig in (vf.prices_figure(df, m.grid), vf.deals_figure(df), vf.earnings_figure(df)):
        assert any("no step yet" in t.get_text() for t in fig.axes[0].texts)


def test_qtable_heatmap_is_the_learners_table():
    m = ViewMarket(n_sellers=20, n_buyers=20, seed=2)
    for _ in range(8):
        m.step()
    found = learner_tables(m)
    assert [side for side, _, _ in found] == ["seller"]
    _, strat, member = found[0]
    assert np.abs(strat.tables[member]).sum() > 0  # the most-learned member has learned
    panels = qtable_panels(strat, member)
    assert [label for label, _ in panels] == ["moved first", "moved second"]
    fig = vf.qtable_figure(panels, m.protocol, legal_rows(m.protocol))
    image = _gid(fig.axes[0], "qtable")[0].get_array()
    legal = legal_rows(m.protocol)
    np.testing.assert_array_equal(image.mask, ~legal)
    np.testing.assert_allclose(image.data[legal], strat.tables[member, 0][legal])

    nobody = ViewMarket(seller_other="averaging", seed=1)
    assert learner_tables(nobody) == []


# --- the pages, rendered in-process --------------------------------------------------------------
def _render(page):
    import solara

    @solara.component
    def App():
        with solara.AppLayout():
            page()

    return solara.render(App(), handle_error=False)[1]


def _images(rc):
    import ipywidgets

    return [bytes(w.value) for w in rc.find(ipywidgets.Image).widgets]


def test_market_page_steps_and_redraws():
    import ipyvuetify as v

    from market.view.components import MarketPage

    rc = _render(MarketPage)
    rc.find(v.Html, children=["Step: 0"]).assert_single()
    before = _images(rc)
    for _ in range(2):
        rc.find(v.Btn, children=["Step"]).widget.click()
    rc.find(v.Html, children=["Step: 2"]).assert_single()
    after = _images(rc)
    # before the first step the trace panel has no picture; after, every panel has one
    assert len(after) == len(before) + 1 == 6
    assert sum(a != b for a, b in zip(before, after, strict=False)) == len(before)
    assert not rc.find(v.Alert).widgets  # Mesa shows step errors as an alert


def test_two_agent_page_plays_move_by_move():
    import ipyvuetify as v

    from market.view.two_agent import TwoAgentPage

    rc = _render(TwoAgentPage)
    rc.find(v.Html, children=["Move 0 of 10"]).assert_single()
    (start,) = _images(rc)
    rc.find(v.Btn, children=["Next move"]).widget.click()
    rc.find(v.Html, children=["Move 1 of 10"]).assert_single()
    rc.find(v.Btn, children=["Play to the end"]).widget.click()
    rc.find(v.Html, children=["Move 10 of 10"]).assert_single()
    (end,) = _images(rc)
    assert end != start
    assert rc.find(v.Btn, children=["Next move"]).widget.disabled


def test_two_agent_page_plays_a_saved_table(tmp_path):
    import ipyvuetify as v

    from market.view.two_agent import TwoAgentPage

    path = tmp_path / "seller.npz"
    _accepting_seller_tables(path, Protocol(5, 5))
    rc = _render(TwoAgentPage)
    rc.find(v.Select, label="Seller strategy").widget.v_model = "qlearning"
    field = rc.find(v.TextField, label="Seller Q-table (.npz path, empty: untrained)").widget
    field.v_model = str(path)
    field.fire_event("focusout")  # the path is taken when the field loses focus or on Enter
    rc.find(v.Alert).assert_single()  # the note: the table fixes P and T
    assert "P=5, T=5" in rc.find(v.Alert).widget.children[0]
    rc.find(v.Btn, children=["Play to the end"]).widget.click()
    # the averaging Buyer opens at 0 and the table's Seller accepts: 2 moves
    rc.find(v.Html, children=["Move 2 of 2"]).assert_single()

    field.v_model = str(tmp_path / "missing.npz")
    field.fire_event("keyup.enter")
    assert "no such file" in str(rc.find(v.Alert).widget.children)


# --- the command's input checks ------------------------------------------------------------------
@pytest.mark.parametrize("port", ["80", "1023", "65536", "http"])
def test_viz_port_out_of_range_is_one_line_exit_2(port, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["viz", "--port", port])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--port must be an integer in [1024, 65535]" in err[0]


def test_viz_port_in_use_is_one_line_exit_2(capsys):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        if port < 1024:
            pytest.skip("the OS handed out a privileged port")
        assert main(["viz", "--port", str(port)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"--port {port}" in err[0] and "not available" in err[0]


# --- training on the page ------------------------------------------------------------------------
def test_train_pair_saves_a_playable_pair_of_tables():
    from market.view.two_agent import train_pair, trained_heatmaps

    done = train_pair("default", seed=2)
    assert done.pair.role_aware and done.pair.meta["cycles"] == 150
    assert "150,000 episodes" in done.note and "NashConv" in done.note
    game = setup_game(strategy_spec("qlearning", done.path), strategy_spec("qlearning", done.path))
    assert game.protocol == Protocol(5, 5) and game.record.deal_level > 0
    fig = trained_heatmaps(done)
    assert len([ax for ax in fig.axes if _gid(ax, "qtable")]) == 4  # 2 sides x 2 roles
    with pytest.raises(ValueError, match="preset must be one of"):
        train_pair("fast")


def test_two_agent_page_trains_a_pair_and_plays_it():
    import ipyvuetify as v

    from market.view.two_agent import TwoAgentPage

    rc = _render(TwoAgentPage)
    before = len(_images(rc))
    rc.find(v.Btn, children=["Train (150,000 episodes)"]).widget.click()
    assert "Both sides now play these tables" in str(rc.find(v.Alert).widgets[0].children)
    assert rc.find(v.Select, label="Seller strategy").widget.v_model == "qlearning"
    assert rc.find(v.Select, label="Buyer strategy").widget.v_model == "qlearning"
    assert len(_images(rc)) == before + 1  # the heatmaps of the trained tables
    rc.find(v.Btn, children=["Play to the end"]).widget.click()
    assert rc.find(v.Btn, children=["Next move"]).widget.disabled
