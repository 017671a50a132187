"""The two-agent page: one Buyer and one Seller, played move by move in the legacy view.

The game is the document's baseline (Buyer 0-80, Seller 20-100, one price
level per whole unit, 10 rounds, Buyer first, both averaging: a deal at 32)
with any registered strategy on either side, a saved Q-table (``.npz``,
a path relative to the folder the server runs in, which the page shows),
or a pair of learners trained on the spot: the *Train* button runs the
default preset's self-play (:func:`market.game.training.train`) with a
progress bar, and the trained tables then play the game and show as
heatmaps. A Q-table fixes the game's sizes: its P levels are spread over
the price range and its T is the number of rounds.

:func:`setup_game` and :func:`train_pair` do the work and are what the tests
call; the page only holds the inputs and how many moves are shown.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from html import escape

import numpy as np
import solara
import solara.lab

import strategies
from market.files import shown
from market.game import evaluation, theory
from market.game.grid import PriceGrid
from market.game.play import Ranges, fmt, game_for, play
from market.game.record import NegotiationRecord
from market.game.rules import BUYER, SELLER, Protocol
from market.game.table_files import TablePair, peek_tables
from market.game.training import preset, train
from market.view import pair_figures as pf
from market.view.chart import Chart
from market.view.server import readable_table
from market.view.settings import DISCOUNT_MIN
from strategies import specs

PRICE_MIN, PRICE_MAX = 0, 100
ROUNDS_MAX = 20
#: cells of one side's tables the page loads and draws (its heatmaps draw every cell)
PAGE_TABLE_CELLS_MAX = 200_000
#: the Train button's episodes: the default preset's count, adjustable in steps of one cycle
TRAIN_PRESET = "default"
EPISODES_MAX = 300_000
TRAINED = "trained just now"


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
    #: the Q-tables each side plays, ``(R, S, A)``, for the heatmaps (None: not a table)
    seller_table: np.ndarray | None = None
    buyer_table: np.ndarray | None = None


@dataclass(frozen=True)
class Trained:
    """A pair of learners trained on the page: their tables and how the training went."""

    tables: TablePair
    episodes: int
    seed: int
    seconds: float
    nash_conv: float


def strategy_spec(name: str, table: str) -> str:
    """``qlearning`` with a table path becomes ``qlearning:PATH``; other names stay.

    The path must be one the page may read (:func:`market.view.server.readable_table`),
    and its tables small enough to draw (:data:`PAGE_TABLE_CELLS_MAX`): both are
    checked from the file's headers, before it is loaded.
    """
    table = table.strip()
    if name != "qlearning" or not table:
        return name
    protocol, cells = peek_tables(readable_table(table))
    if cells > PAGE_TABLE_CELLS_MAX:
        raise ValueError(f"{shown(table)}: tables of {cells:,} cells (P={protocol.prices}, "
                         f"T={protocol.rounds}); this page draws at most "
                         f"{PAGE_TABLE_CELLS_MAX:,}: use run.py evaluate or baseline for it")
    return f"qlearning:{table}"


def default_episodes() -> int:
    """The default preset's episode count (what the Train button trains by default)."""
    return preset(TRAIN_PRESET).total_episodes


def train_pair(episodes: int | None = None, seed: int = 0,
               progress: Callable[[int, int], None] | None = None,
               discount: tuple[float, float] = (1.0, 1.0)) -> Trained:
    """Train a Seller and a Buyer by the default preset's self-play; ``episodes`` rounded
    to whole cycles (default: the preset's count); ``progress(done, total)`` as training goes;
    ``discount``: the game's time costs (Seller, Buyer factors per offer) they train under.
    """
    base = preset(TRAIN_PRESET)
    episodes = base.total_episodes if episodes is None else int(episodes)
    if not base.episodes <= episodes <= EPISODES_MAX:
        raise ValueError(f"episodes must be in [{base.episodes:,}, {EPISODES_MAX:,}] "
                         f"(got {episodes:,})")
    config = preset(TRAIN_PRESET, seeds=1, seed=int(seed),
                    cycles=max(1, episodes // base.episodes),
                    seller_discount=float(discount[0]), buyer_discount=float(discount[1]))
    t0 = time.perf_counter()
    result = train(config, nash_conv=False, exact=False, progress=progress)
    seconds = time.perf_counter() - t0
    seller, buyer = result.tables(0)
    nc = float(evaluation.nash_conv(seller, buyer, config.protocol))
    return Trained(TablePair(config.protocol, seller, buyer), config.total_episodes, int(seed),
                   seconds, nc)


def _tables_of(spec: str, side: str, protocol: Protocol) -> np.ndarray | None:
    """The Q-table a spec plays (a saved file), for the heatmap; None for other strategies."""
    parsed = specs.parse(spec, side)
    if parsed.name != "qlearning" or parsed.arg is None:
        return None
    return np.asarray(parsed.cls.spec_params(parsed.arg, side, protocol)["tables"], dtype=float)


def setup_game(
    seller: str = "averaging",
    buyer: str = "averaging",
    seller_range: tuple[int, int] = (20, 100),
    buyer_range: tuple[int, int] = (0, 80),
    rounds: int = 10,
    first: str = "buyer",
    seed: int = 0,
    trained: TablePair | None = None,
    discount: tuple[float, float] = (1.0, 1.0),
) -> Game:
    """Play one negotiation; ``ValueError`` with one readable line on bad input.

    ``seller``/``buyer`` are registered names or ``qlearning:FILE.npz``;
    ``trained`` (tables trained on the page) overrides both and plays greedily.
    ``discount``: the game's time costs, (Seller, Buyer) factors per offer in (0, 1]
    (checked by :class:`~market.game.rules.Protocol`, which names the side).
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
    tables: dict[str, np.ndarray | None] = {"seller": None, "buyer": None}
    ds, db = float(discount[0]), float(discount[1])
    if trained is not None:
        protocol, grid, note = game_for(lo, hi, trained.protocol.rounds, trained.protocol,
                                        ["seller", "buyer"])
        was = (trained.protocol.seller_discount, trained.protocol.buyer_discount)
        if was != (ds, db):
            raise ValueError(f"the tables {TRAINED} were trained under discounts {was[0]:g} "
                             f"(Seller) and {was[1]:g} (Buyer), not {ds:g} and {db:g}: "
                             "train again, or set the discounts back")
        protocol = replace(protocol, seller_discount=ds, buyer_discount=db)
        note = f"Both sides play the tables {TRAINED}; {note}."
        tables = {"seller": np.asarray(trained.seller), "buyer": np.asarray(trained.buyer)}
        players = {side: strategies.make("qlearning", side, 1, protocol, tables=tables[side],
                                         learning=False) for side in tables}
        seller = buyer = f"qlearning ({TRAINED})"
    else:
        fixed = specs.fixed_game({"seller": seller, "buyer": buyer})
        if fixed is None:
            protocol, grid, note = game_for(lo, hi, int(rounds))
        else:
            protocol, grid, note = game_for(lo, hi, fixed[0].rounds, *fixed)
            note = note[0].upper() + note[1:] + "."
        protocol = replace(protocol, seller_discount=ds, buyer_discount=db)
        players = {side: specs.build(spec, side, protocol, option=side)
                   for side, spec in (("seller", seller), ("buyer", buyer))}
        tables = {side: _tables_of(spec, side, protocol)
                  for side, spec in (("seller", seller), ("buyer", buyer))}
    ranges = Ranges(buyer=tuple(map(float, buyer_range)), seller=tuple(map(float, seller_range)))
    record = play(protocol, grid, players["seller"], players["buyer"], ranges,
                  BUYER if first == "buyer" else SELLER, np.random.default_rng(int(seed)))
    return Game(protocol, grid, ranges, record, seller, buyer, note, tables["seller"],
                tables["buyer"])


def theory_rows(game: Game) -> list[dict[str, object]]:
    """The first mover's share of the surplus (two-agent rewards: a deal at level ``p`` gives
    the Seller ``p / P``), in this negotiation and by theory: the grid's subgame-perfect
    equilibrium (``evaluation.spe``), the finite game's split without a grid (Ståhl) and,
    with time costs, Rubinstein's infinite-horizon split. Empty for a game whose SPE is too
    large to solve on a page (over :data:`PAGE_TABLE_CELLS_MAX` cells)."""
    pr = game.protocol
    if pr.prices * pr.rounds * pr.n_actions > PAGE_TABLE_CELLS_MAX:
        return []
    first = SELLER if game.record.first == "seller" else BUYER
    ds, db = pr.seller_discount, pr.buyer_discount

    def mine(level: int) -> float:
        return level / pr.prices if first == SELLER else 1.0 - level / pr.prices

    rows: list[dict[str, object]] = []
    if game.record.deal_level is not None:
        rows.append({"what": "this negotiation", "share": mine(game.record.deal_level)})
    level, _ = evaluation.deals(*evaluation.spe(pr), pr, first, policies=True)
    if level[0] > 0:
        rows.append({"what": "grid SPE", "share": mine(int(level[0]))})
    rows.append({"what": "finite split (no grid)",
                 "share": theory.horizon_split(ds, db, 2 * pr.rounds - 1, first)[first]})
    if pr.discounted:
        rows.append({"what": "Rubinstein (T → ∞)",
                     "share": theory.rubinstein_split(ds, db, first)[first]})
    return rows


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


def table_panels(tables: np.ndarray) -> list[tuple[str, np.ndarray]]:
    """One heatmap per role of an ``(R, S, A)`` table."""
    tables = np.asarray(tables)
    if tables.ndim == 2:
        tables = tables[None]
    names = ["moved first", "moved second"] if tables.shape[0] == 2 else ["any role"]
    return list(zip(names, tables, strict=True))


@solara.component
def TableInput(side: str, value: solara.Reactive[str]) -> None:
    """A Q-table path, with the folder a relative path is read from."""
    solara.InputText(f"{side.capitalize()} Q-table (.npz path, empty: untrained)", value=value)
    solara.Text(f"relative paths are read from the working folder {os.getcwd()}",
                style={"font-size": "12px", "color": "#555"})


@solara.component
def TrainCard(trained: solara.Reactive[Trained | None], use_trained: solara.Reactive[bool],
              discount: tuple[float, float] = (1.0, 1.0)) -> None:
    """Train a Seller and a Buyer by self-play (under the page's time costs), with a progress
    bar; then play their tables."""
    episodes = solara.use_reactive(default_episodes())
    seed = solara.use_reactive(0)

    def run() -> Trained:
        def progress(done: int, total: int) -> None:
            task.progress = 100.0 * done / max(total, 1)

        result = train_pair(episodes.value, seed.value or 0, progress, discount)
        trained.set(result)
        use_trained.set(True)
        return result

    task = solara.lab.use_task(run, dependencies=None, raise_error=False)
    costs = "" if discount == (1.0, 1.0) else (f", discounts {discount[0]:g} (Seller) and "
                                                f"{discount[1]:g} (Buyer) per offer")
    base = preset(TRAIN_PRESET)
    with solara.Card("Train a pair of learners", margin=0):
        solara.Text(f"Self-play, the {TRAIN_PRESET} preset: role-aware tables, P = "
                    f"{base.prices}, T = {base.rounds}{costs}.", style={"font-size": "13px"})
        solara.SliderInt(f"Episodes: {episodes.value:,}", value=episodes, min=base.episodes,
                         max=EPISODES_MAX, step=base.episodes)
        solara.InputInt("Training seed", value=seed)
        solara.Button("Train", color="primary", on_click=task, disabled=task.pending)
        if task.pending:
            done = task.progress or 0.0
            solara.ProgressLinear(value=done if done else True)
            solara.Text(f"training: {done:.0f}%")
        elif task.error:
            solara.Error(" ".join(str(task.exception).split()))
        if trained.value is not None:
            t = trained.value
            solara.Text(f"Trained {t.episodes:,} episodes (seed {t.seed}) in {t.seconds:.1f} s; "
                        f"NashConv {t.nash_conv:.3f} (0 = equilibrium).",
                        style={"font-size": "13px"})
            solara.Checkbox(label="Play the trained tables", value=use_trained)


@solara.component
def TwoAgentPage() -> None:
    """Controls in the sidebar; the legacy-view chart, the moves and the Q-tables beside."""
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
    seller_discount = solara.use_reactive(1.0)
    buyer_discount = solara.use_reactive(1.0)
    shown = solara.use_reactive(0)
    trained = solara.use_reactive(None)
    use_trained = solara.use_reactive(False)

    pair = trained.value.tables if (trained.value is not None and use_trained.value) else None
    key = (seller.value, buyer.value, seller_table.value, buyer_table.value,
           tuple(seller_range.value), tuple(buyer_range.value), rounds.value, first.value,
           seed.value, id(pair), seller_discount.value, buyer_discount.value)
    discount = (seller_discount.value, buyer_discount.value)

    def make() -> Game | str:
        try:
            return setup_game(
                strategy_spec(seller.value, seller_table.value),
                strategy_spec(buyer.value, buyer_table.value),
                tuple(seller_range.value), tuple(buyer_range.value), rounds.value,
                first.value, seed.value or 0, trained=pair, discount=discount,
            )
        except ValueError as exc:
            return " ".join(str(exc).split())

    game = solara.use_memo(make, list(key))
    solara.use_effect(lambda: shown.set(0), list(key))

    with solara.AppBar():
        solara.AppBarTitle("Two agents: one Buyer, one Seller")
    with solara.Sidebar(), solara.Column(gap="12px"):
        with solara.Card("Strategies", margin=0):
            if pair is not None:
                solara.Text(f"Both sides play the tables {TRAINED} (untick “Play the trained "
                            "tables” below to choose).", style={"font-size": "13px"})
            solara.Select("Seller strategy", values=names, value=seller, disabled=pair is not None)
            if seller.value == "qlearning" and pair is None:
                TableInput("seller", seller_table)
            solara.Select("Buyer strategy", values=names, value=buyer, disabled=pair is not None)
            if buyer.value == "qlearning" and pair is None:
                TableInput("buyer", buyer_table)
        with solara.Card("Game", margin=0):
            (s_lo, s_hi), (b_lo, b_hi) = seller_range.value, buyer_range.value
            solara.SliderRangeInt(f"Seller accepts {s_lo}-{s_hi}", value=seller_range,
                                  min=PRICE_MIN, max=PRICE_MAX)
            solara.SliderRangeInt(f"Buyer accepts {b_lo}-{b_hi}", value=buyer_range,
                                  min=PRICE_MIN, max=PRICE_MAX)
            solara.SliderInt(f"Rounds T: {rounds.value}", value=rounds, min=1, max=ROUNDS_MAX,
                             disabled=pair is not None)
            solara.Text("First mover", style={"font-size": "13px"})
            solara.ToggleButtonsSingle(value=first, values=["buyer", "seller"], dense=True)
            solara.InputInt("Seed", value=seed)
            for who, value in (("Seller", seller_discount), ("Buyer", buyer_discount)):
                solara.SliderFloat(f"{who}'s discount per offer: {value.value:.2f}",
                                   value=value, min=DISCOUNT_MIN, max=1.0, step=0.01)
        TrainCard(trained, use_trained, discount)

    if isinstance(game, str):
        solara.Error(game)
        return
    n = len(game.record.moves)
    k = min(shown.value, n)
    with solara.Row(style={"align-items": "center"}):
        solara.Button("Restart", color="primary", on_click=lambda: shown.set(0), disabled=k == 0)
        solara.Button("Next move", color="primary", on_click=lambda: shown.set(min(k + 1, n)),
                      disabled=k >= n)
        solara.Button("Play to the end", color="primary", on_click=lambda: shown.set(n),
                      disabled=k >= n)
        solara.Text(f"Move {k} of {n}")
        if k == n and n:
            solara.HTML(tag="div", unsafe_innerHTML=pf.banner_html(game.record, game.grid))
    if game.note:
        solara.Info(game.note)
    title = f"{game.seller} (seller) vs {game.buyer} (buyer)"
    with solara.Row(style={"flex-wrap": "wrap", "gap": "24px"}):
        Chart(pf.negotiation_chart(game.record, game.grid, game.ranges, shown=k,
                                   rounds=game.protocol.rounds, title=title, width=560))
        if k:
            solara.HTML(tag="div", unsafe_innerHTML=moves_html(game, k))
        rows = theory_rows(game) if k == n else []
        if rows:
            Chart(pf.split_chart(rows, f"The {game.record.first}'s share (it moved first): "
                                       "this negotiation beside theory"))
    with solara.Row(style={"flex-wrap": "wrap", "gap": "24px"}):
        for side, table in (("seller", game.seller_table), ("buyer", game.buyer_table)):
            if table is not None:
                Chart(pf.qtable_chart(table_panels(table), game.protocol,
                                      title=f"The {side}'s Q-table"))
