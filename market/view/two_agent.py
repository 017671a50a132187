"""The two-agent page: one Buyer and one Seller, played move by move in the legacy view.

The game is the document's baseline (Buyer 0-80, Seller 20-100, one price
level per whole unit, 10 rounds, Buyer first, both averaging: a deal at 32)
with any registered strategy on either side, or a saved Q-table
(``.npz``) played greedily. A Q-table fixes the game's sizes: its P levels
are spread over the price range and its T is the number of rounds.

The page can also train a pair of learners on the spot (:func:`train_pair`:
one seed of a training preset, a fraction of a second once the training
kernel is compiled); the trained tables are saved to a temporary ``.npz``
that both sides then play, and shown as heatmaps.

:func:`setup_game` does the work and is what the tests call; the page only
holds the inputs and how many moves are shown.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from dataclasses import dataclass
from html import escape
from pathlib import Path

import numpy as np
import solara

import strategies
from market.errors import CompileError
from market.game.grid import PriceGrid
from market.game.play import Ranges, fmt, game_for, play
from market.game.qtable import legal_rows
from market.game.record import NegotiationRecord
from market.game.rules import BUYER, SELLER, Protocol
from market.game.tables import TablePair, save_tables
from market.view import figures as vf
from strategies import specs

PRICE_MIN, PRICE_MAX = 0, 100
ROUNDS_MAX = 20


@dataclass
class Game:
    """A finished negotiation and everything needed to draw it."""

    protocol: Protocol
    grid: PriceGrid
    ranges: Ranges
    record: NegotiationRecord
    seller: str
    buyer: str
    note: str = ""


def strategy_spec(name: str, table: str) -> str:
    """``qlearning`` with a table path becomes ``qlearning:PATH``; other names stay."""
    table = table.strip()
    return f"qlearning:{table}" if name == "qlearning" and table else name


def setup_game(
    seller: str = "averaging",
    buyer: str = "averaging",
    seller_range: tuple[int, int] = (20, 100),
    buyer_range: tuple[int, int] = (0, 80),
    rounds: int = 10,
    first: str = "buyer",
    seed: int = 0,
) -> Game:
    """Play one negotiation; ``ValueError`` with one readable line on bad input.

    ``seller``/``buyer`` are registered names or ``qlearning:FILE.npz``.
    """
    for side, (lo, hi) in (("seller", seller_range), ("buyer", buyer_range)):
        if lo > hi:
            raise ValueError(f"the {side}'s range must have min <= max (got {lo}-{hi})")
    lo = min(seller_range[0], buyer_range[0])
    hi = max(seller_range[1], buyer_range[1])
    if hi <= lo:
        raise ValueError(f"the two ranges must span at least two whole units (got {lo}-{hi})")
    if not 1 <= int(rounds) <= ROUNDS_MAX:
        raise ValueError(f"rounds must be in [1, {ROUNDS_MAX}] (got {rounds})")
    if first not in ("buyer", "seller"):
        raise ValueError(f"first must be buyer or seller (got {first!r})")
    fixed = specs.fixed_game({"seller": seller, "buyer": buyer})
    if fixed is None:
        protocol, grid, note = game_for(lo, hi, int(rounds))
    else:
        protocol, grid, note = game_for(lo, hi, fixed[0].rounds, *fixed)
        note = note[0].upper() + note[1:] + "."
    s = specs.build(seller, "seller", protocol, option="seller")
    b = specs.build(buyer, "buyer", protocol, option="buyer")
    ranges = Ranges(buyer=tuple(map(float, buyer_range)), seller=tuple(map(float, seller_range)))
    record = play(protocol, grid, s, b, ranges, BUYER if first == "buyer" else SELLER,
                  np.random.default_rng(int(seed)))
    return Game(protocol, grid, ranges, record, seller, buyer, note)


@dataclass
class Trained:
    """A pair of tables trained on the page: where they are saved and what they are."""

    path: str
    pair: TablePair
    note: str


_trained_dir: Path | None = None


def _scratch() -> Path:
    """A private temporary folder for tables trained in this server, removed at exit."""
    global _trained_dir
    if _trained_dir is None:
        _trained_dir = Path(tempfile.mkdtemp(prefix="negotiation-view-"))
        atexit.register(shutil.rmtree, _trained_dir, True)
    return _trained_dir


def train_pair(preset_name: str = "default", seed: int = 0) -> Trained:
    """Train one seed of a preset (self-play or the document's trainer) and save the pair.

    Raises ``ValueError`` (or :class:`~market.errors.CompileError`) with one
    readable line.
    """
    from market.game.evaluation import nash_conv
    from market.game.training import PRESETS, preset, train

    if preset_name not in PRESETS:
        raise ValueError(f"preset must be one of {', '.join(PRESETS)} (got {preset_name!r})")
    if int(seed) < 0:
        raise ValueError(f"seed must be >= 0 (got {seed})")
    cfg = preset(preset_name, seed=int(seed), seeds=1, test_episodes=0)
    res = train(cfg, nash_conv=False, exact=False)
    nc = float(nash_conv(res.seller[0], res.buyer[0], cfg.protocol))
    pair = TablePair(cfg.protocol, res.seller[0], res.buyer[0],
                     {**cfg.as_dict(), "nash_conv": nc})
    path = _scratch() / f"trained-{preset_name}-seed{int(seed)}.npz"
    save_tables(path, pair)
    note = (f"Trained with the {preset_name} preset, seed {int(seed)}: "
            f"{cfg.total_episodes:,} episodes in {res.train_seconds:.2f} s, NashConv {nc:.3f}. "
            "Both sides now play these tables.")
    return Trained(str(path), pair, note)


def trained_heatmaps(trained: Trained) -> object:
    """Heatmaps of the trained Seller's and Buyer's tables (one panel per side and role)."""
    pair = trained.pair
    roles = pair.seller.shape[0]
    panels = []
    for name, tables in (("Seller", pair.seller), ("Buyer", pair.buyer)):
        for r in range(roles):
            role = "" if roles == 1 else (", moved first" if r == 0 else ", moved second")
            panels.append((f"{name}{role}", tables[r]))
    return vf.qtable_figure(panels, pair.protocol, legal_rows(pair.protocol),
                            title="Q-tables trained on this page")


def moves_html(game: Game, shown: int) -> str:
    """The moves shown so far as an HTML table (move, round, who, action, price).

    Plain HTML rather than Markdown: Solara's Markdown loads KaTeX from a CDN,
    which an offline machine cannot reach.
    """
    cell = "style='padding: 2px 14px 2px 0; text-align: left'"
    head = "".join(f"<th {cell}>{h}</th>" for h in ("move", "round", "who", "action", "price"))
    rows = []
    for m in game.record.moves[:shown]:
        price = fmt(float(game.grid.price(m.level))) if m.level > 0 else ""
        cells = (m.move + 1, m.move // 2 + 1, m.side, m.action, price)
        rows.append("<tr>" + "".join(f"<td {cell}>{escape(str(c))}</td>" for c in cells) + "</tr>")
    return f"<table class='moves'><tr>{head}</tr>{''.join(rows)}</table>"


@solara.component
def TwoAgentPage() -> None:
    """Controls in the sidebar; the legacy-view figure and the move list in the main area."""
    names = strategies.names()
    seller = solara.use_reactive("averaging")
    buyer = solara.use_reactive("averaging")
    seller_table = solara.use_reactive("")
    buyer_table = solara.use_reactive("")
    seller_range = solara.use_reactive((20, 100))
    buyer_range = solara.use_reactive((0, 80))
    rounds = solara.use_reactive(10)
    first = solara.use_reactive("buyer")
    seed = solara.use_reactive(0)
    shown = solara.use_reactive(0)
    train_preset = solara.use_reactive("default")
    trained = solara.use_reactive(None)  # a Trained, or an error line

    # the game depends on the specs actually played: a table path typed while the side plays
    # another strategy changes nothing
    key = (strategy_spec(seller.value, seller_table.value),
           strategy_spec(buyer.value, buyer_table.value),
           tuple(seller_range.value), tuple(buyer_range.value), rounds.value, first.value,
           seed.value)

    def make() -> Game | str:
        try:
            return setup_game(
                strategy_spec(seller.value, seller_table.value),
                strategy_spec(buyer.value, buyer_table.value),
                tuple(seller_range.value), tuple(buyer_range.value), rounds.value,
                first.value, seed.value or 0,
            )
        except ValueError as exc:
            return " ".join(str(exc).split())

    game = solara.use_memo(make, list(key))
    solara.use_effect(lambda: shown.set(0), list(key))
    n = 0 if isinstance(game, str) else len(game.record.moves)
    k = min(shown.value, n)

    def draw() -> object:
        if isinstance(game, str):
            return None
        return vf.negotiation_figure(game.record, game.grid, game.ranges, shown=k,
                                     rounds=game.protocol.rounds,
                                     title=f"{game.seller} (seller) vs {game.buyer} (buyer)")

    # every state change re-renders the page; the figures are drawn only when what they show
    # changes
    fig = solara.use_memo(draw, [game, k])
    heat_of = trained.value if isinstance(trained.value, Trained) else None
    heat = solara.use_memo(lambda: None if heat_of is None else trained_heatmaps(heat_of),
                           [heat_of])

    def do_train() -> None:
        try:
            done = train_pair(train_preset.value, seed.value or 0)
        except (ValueError, CompileError) as exc:
            trained.set(" ".join(str(exc).split()))
            return
        trained.set(done)
        seller_table.set(done.path)  # tables first: the game changes only with the strategies
        buyer_table.set(done.path)
        seller.set("qlearning")
        buyer.set("qlearning")

    from market.game.training import PRESETS

    with solara.AppBar():
        solara.AppBarTitle("Two agents: one Buyer, one Seller")
    with solara.Sidebar(), solara.Column():
        with solara.Card("Strategies"):
            solara.Select("Seller strategy", values=names, value=seller)
            if seller.value == "qlearning":
                solara.InputText("Seller Q-table (.npz path, empty: untrained)",
                                 value=seller_table)
            solara.Select("Buyer strategy", values=names, value=buyer)
            if buyer.value == "qlearning":
                solara.InputText("Buyer Q-table (.npz path, empty: untrained)", value=buyer_table)
        with solara.Card("Game"):
            (s_lo, s_hi), (b_lo, b_hi) = seller_range.value, buyer_range.value
            solara.SliderRangeInt(f"Seller accepts {s_lo}-{s_hi}", value=seller_range,
                                  min=PRICE_MIN, max=PRICE_MAX)
            solara.SliderRangeInt(f"Buyer accepts {b_lo}-{b_hi}", value=buyer_range,
                                  min=PRICE_MIN, max=PRICE_MAX)
            solara.SliderInt(f"Rounds T = {rounds.value}", value=rounds, min=1, max=ROUNDS_MAX)
            solara.Text("First mover")
            solara.ToggleButtonsSingle(value=first, values=["buyer", "seller"])
            solara.InputInt("Seed", value=seed)
        with solara.Card("Train a pair of learners"):
            solara.Select("Training preset", values=list(PRESETS), value=train_preset)
            episodes = PRESETS[train_preset.value].total_episodes
            solara.Button(f"Train ({episodes:,} episodes)", color="primary", on_click=do_train)

    if isinstance(trained.value, str):
        solara.Error(trained.value)
    elif trained.value is not None:
        solara.Success(trained.value.note)
    if isinstance(game, str):
        solara.Error(game)
        return
    with solara.Row():
        solara.Button("Restart", color="primary", on_click=lambda: shown.set(0), disabled=k == 0)
        solara.Button("Next move", color="primary", on_click=lambda: shown.set(min(k + 1, n)),
                      disabled=k >= n)
        solara.Button("Play to the end", color="primary", on_click=lambda: shown.set(n),
                      disabled=k >= n)
        solara.Text(f"Move {k} of {n}")
    if game.note:
        solara.Info(game.note)
    solara.FigureMatplotlib(fig, dependencies=[game, k], format="png", dpi=100)
    if k:
        solara.HTML(tag="div", unsafe_innerHTML=moves_html(game, k))
    if heat is not None and heat_of.path in (seller_table.value, buyer_table.value):
        solara.FigureMatplotlib(heat, dependencies=[heat_of.path], format="png", dpi=100)
