"""Round-robin tournament: every strategy against every other, on both sides.

Each pairing (a Seller strategy against a Buyer strategy) is one batch of
negotiations on arrays, one :func:`~market.game.protocol.negotiate` call with all
repetitions as rows: half of the rows with the Seller moving first, half with
the Buyer first. Rewards are the document's two-agent rewards (Seller
``p / P``, Buyer ``1 - p / P`` at a deal on level ``p``, 0 without a deal), so
a pairing's payoffs are comparable across strategies whatever the price grid.

Randomness: each pairing gets its own generator derived from the tournament
seed and the two strategy *names* (not their position in the list), so adding
an entrant leaves every other pairing's outcome unchanged.

Entrants are factories ``side -> negotiator`` so that strategies which need
a trained table (Q-learning) can be given one; nothing learns during the
tournament.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from market.errors import UsageError
from market.files import all_or_nothing, write_text
from market.game.pressure import KINDS, PRESSURE, in_force
from market.game.protocol import Side, negotiation_bytes
from market.game.record import two_agent_rewards
from market.game.rules import BUYER, SELLER, Negotiator, Protocol
from market.limits import check_memory, check_table_cells, check_time

#: builds a fresh negotiator for a side ("seller" or "buyer")
Factory = Callable[[str], Negotiator]


@dataclass
class Entrant:
    """One contestant: a name, the sides it can play and how to build it."""

    name: str
    sides: tuple[str, ...]
    factory: Factory
    note: str = ""


@dataclass
class TournamentResult:
    """Mean payoffs per pairing. Matrices: rows = Seller strategy, columns = Buyer strategy.

    ``mean_payoff`` (rows and columns = strategies that play both sides) is the row
    strategy's payoff against the column strategy averaged over its two roles: as Seller
    against the column's Buyer, and as Buyer against the column's Seller."""

    protocol: Protocol
    repetitions: int
    seed: int
    seller_range: tuple[int, int]
    buyer_range: tuple[int, int]
    seller_payoff: pd.DataFrame
    buyer_payoff: pd.DataFrame
    deal_rate: pd.DataFrame
    mean_level: pd.DataFrame
    mean_payoff: pd.DataFrame
    notes: dict[str, str] = field(default_factory=dict)

    def ranking(self) -> pd.Series:
        """Mean over opponents of :attr:`mean_payoff`, best first."""
        return self.mean_payoff.mean(axis=1).sort_values(ascending=False)

    def as_dict(self) -> dict[str, Any]:
        def mat(df: pd.DataFrame) -> dict[str, dict[str, float]]:
            return {str(r): {str(c): float(df.loc[r, c]) for c in df.columns} for r in df.index}

        return {
            "prices": self.protocol.prices,
            "rounds": self.protocol.rounds,
            **{d.name: getattr(self.protocol, d.name) for kind in KINDS
               if kind.name in in_force(self.protocol) for d in kind.params},
            "repetitions": self.repetitions,
            "seed": self.seed,
            "seller_range": list(self.seller_range),
            "buyer_range": list(self.buyer_range),
            "seller_payoff": mat(self.seller_payoff),
            "buyer_payoff": mat(self.buyer_payoff),
            "deal_rate": mat(self.deal_rate),
            "mean_level": mat(self.mean_level),
            "mean_payoff": mat(self.mean_payoff),
            "ranking": {str(k): float(v) for k, v in self.ranking().items()},
            "notes": dict(self.notes),
        }


def pair_rng(seed: int, seller: str, buyer: str) -> np.random.Generator:
    """Generator for one pairing, from the tournament seed and the two names."""
    key = zlib.crc32(f"{seller}\x00{buyer}".encode())
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(key,)))


def play_pairing(
    protocol: Protocol,
    seller: Negotiator,
    buyer: Negotiator,
    repetitions: int,
    rng: np.random.Generator,
    seller_range: tuple[int, int],
    buyer_range: tuple[int, int],
) -> dict[str, float]:
    """Play ``repetitions`` negotiations with each first mover in one batch; mean outcomes."""
    from market import compiled_game  # numba's loading: not for checking the arguments

    n = 2 * repetitions
    first = np.where(np.arange(n) < repetitions, SELLER, BUYER)
    record = compiled_game.negotiate(
        protocol,
        Side.single(seller, n, *seller_range),
        Side.single(buyer, n, *buyer_range),
        first,
        rng,
    )
    r_seller, r_buyer = two_agent_rewards(record)
    deal = record.deal
    return {
        "seller": float(r_seller.mean()),
        "buyer": float(r_buyer.mean()),
        "deal_rate": float(deal.mean()),
        "mean_level": float(record.level[deal].mean()) if deal.any() else float("nan"),
    }


@dataclass
class TournamentPlan:
    """A tournament as the command asks for it, every value checked once
    (:func:`plan_tournament`): the market's ``Params`` for the tournament."""

    protocol: Protocol
    repetitions: int
    seed: int
    #: registered strategies to enter (None: every registered one but negmas and genius)
    names: list[str] | None
    seller_range: tuple[int, int] | None
    buyer_range: tuple[int, int] | None
    #: ANAC agents to add
    genius: list[str]
    #: saved Q-tables for the qlearning entrant (None: trained by self-play, cached)
    tables: Any = None

    @property
    def cache_name(self) -> str:
        """The file the self-play tables are kept in, inside the output folder."""
        pr = self.protocol
        force = in_force(pr)
        costs = "".join(f"_{kind.tag}" + "-".join(f"{v:g}" for v in force[kind.name])
                        for kind in KINDS if kind.name in force)
        return f"qlearning_selfplay_P{pr.prices}_T{pr.rounds}{costs}.npz"

    def entrants(self, cache: Any, progress: Callable[[int, int], None] | None = None
                 ) -> list[Entrant]:
        """The registry's entrants, then the ANAC agents'."""
        return (registry_entrants(self.protocol, self.names, tables=self.tables,
                                  train_seed=self.seed, cache=cache, progress=progress)
                + genius_entrants(self.protocol, self.genius))


def plan_tournament(prices: int, rounds: int, strategies: str, repetitions: int, seed: int,
                    seller_range: tuple[int, int] | None, buyer_range: tuple[int, int] | None,
                    genius: str | None, qtable: str | None, quiet: bool = False,
                    discount: tuple[float, float] | None = None,
                    pressure: dict[str, float] | None = None) -> TournamentPlan:
    """Check the command's values (each error one line naming its option) and the
    tournament's size and time up front; the plan to run. ``discount``: the game's time
    costs (Seller, Buyer factors per offer; None: none), which the payoffs count;
    ``pressure``: any of the game's time pressure as :class:`Protocol` fields (discounts
    included)."""
    from market.game.table_files import load_tables
    from strategies import registry, specs

    game = dict(zip(("seller_discount", "buyer_discount"), discount or (), strict=False))
    game.update(pressure or {})  # the command line's time pressure, discounts included
    protocol = Protocol(prices, rounds, **game)
    names = _entrant_names(strategies)
    for opt, rng in (("--seller-range", seller_range), ("--buyer-range", buyer_range)):
        if rng is not None:
            check_range(opt, rng, protocol.prices)
    agents = genius_lineup(genius, protocol) if genius is not None else []
    try:
        tables = load_tables(qtable, protocol) if qtable else None
    except ValueError as exc:
        raise UsageError(f"--qtable: {exc}") from None
    listed = names if names is not None else registry.names()
    # the registered names are classes already: parsing them would import NegMAS and the
    # ANAC agents (over a second) only to check specs the default field does not play
    classes = ([specs.parse(n).cls for n in names] if names is not None
               else [registry.get(n) for n in listed])
    trains = tables is None and any(cls.plays_trained_tables for cls in classes)
    check_size(protocol, repetitions, trains=trains,
               advice="lower --repetitions, --prices or --rounds", entrants=len(listed),
               genius=len(agents), quiet=quiet)
    return TournamentPlan(protocol, repetitions, seed, names, seller_range, buyer_range,
                          agents, tables)


def _entrant_names(strategies: str) -> list[str] | None:
    """The ``--strategies`` list, each a spec the tournament can play (None: every registered
    strategy)."""
    from strategies import specs

    names = [s.strip() for s in strategies.split(",") if s.strip()] or None
    if names is None and strategies.strip():  # "," or ", ,": a list of nothing
        raise UsageError(f"--strategies names no strategy (got {strategies!r}); give "
                         "comma-separated names, or leave it out for every registered one")
    for n in names or []:
        spec = specs.parse(n, "--strategies")
        if spec.cls.plays_trained_tables and spec.arg is not None:
            raise UsageError(f"--strategies: give a saved table with --qtable (got {n!r})")
    return names


def run_tournament(
    entrants: Sequence[Entrant],
    protocol: Protocol,
    repetitions: int = 100,
    seed: int = 0,
    seller_range: tuple[int, int] | None = None,
    buyer_range: tuple[int, int] | None = None,
    on_pairing: Callable[[str, str], None] | None = None,
) -> TournamentResult:
    """Every Seller-capable entrant against every Buyer-capable one.

    Reservation ranges are levels ``(lo, hi)``; the default is the whole
    range ``(1, P)`` for both sides (every level acceptable to both).
    """
    if repetitions < 1:
        raise ValueError(f"repetitions must be >= 1 (got {repetitions})")
    check_size(protocol, repetitions)
    P = protocol.prices
    seller_range = check_range("seller range", seller_range or (1, P), P)
    buyer_range = check_range("buyer range", buyer_range or (1, P), P)
    sellers, buyers = _sides(entrants)
    shape = ([e.name for e in sellers], [e.name for e in buyers])
    mats = {k: pd.DataFrame(np.nan, index=shape[0], columns=shape[1], dtype=float)
            for k in ("seller", "buyer", "deal_rate", "mean_level")}
    for s in sellers:
        for b in buyers:
            out = play_pairing(protocol, s.factory("seller"), b.factory("buyer"), repetitions,
                               pair_rng(seed, s.name, b.name), seller_range, buyer_range)
            for k, df in mats.items():
                df.loc[s.name, b.name] = out[k]
            if on_pairing is not None:
                on_pairing(s.name, b.name)
    for df in mats.values():
        df.index.name, df.columns.name = "seller", "buyer"
    return TournamentResult(
        protocol=protocol,
        repetitions=repetitions,
        seed=seed,
        seller_range=seller_range,
        buyer_range=buyer_range,
        seller_payoff=mats["seller"],
        buyer_payoff=mats["buyer"],
        deal_rate=mats["deal_rate"],
        mean_level=mats["mean_level"],
        mean_payoff=_mean_payoff(mats["seller"], mats["buyer"]),
        notes={e.name: e.note for e in entrants if e.note},
    )


def _sides(entrants: Sequence[Entrant]) -> tuple[list[Entrant], list[Entrant]]:
    """The entrants that can sell and those that can buy (names unique, both sides filled)."""
    names = [e.name for e in entrants]
    if len(set(names)) != len(names):
        raise ValueError(f"entrant names must be unique (got {names})")
    sellers = [e for e in entrants if "seller" in e.sides]
    buyers = [e for e in entrants if "buyer" in e.sides]
    if not sellers or not buyers:
        raise ValueError("a tournament needs at least one Seller and one Buyer strategy")
    return sellers, buyers


def _mean_payoff(seller: pd.DataFrame, buyer: pd.DataFrame) -> pd.DataFrame:
    """For strategies that play both sides: the row's payoff against the column, averaged
    over its two roles."""
    both = [n for n in seller.index if n in seller.columns]
    return pd.DataFrame(
        [[(seller.loc[a, b] + buyer.loc[b, a]) / 2 for b in both] for a in both],
        index=pd.Index(both, name="strategy"),
        columns=pd.Index(both, name="opponent"),
    )


#: measured here (2 cores) for ANAC agents in NegMAS's mechanism, one negotiation at a time:
#: 2.9 ms a negotiation at T = 5, 6.4 ms at T = 10 (P = 101) and 16.6 ms at T = 20, so about
#: 0.85 ms per round of T as an upper estimate (many negotiations end before the deadline)
GENIUS_SECONDS_PER_ROUND = 0.85e-3


def genius_seconds(protocol: Protocol, repetitions: int, others: int, genius: int) -> float:
    """The estimated time of a tournament's negotiations that involve an ANAC agent.

    ``others`` entrants play on arrays (their pairings cost next to nothing);
    every pairing with one of the ``genius`` agents plays its ``2 x
    repetitions`` negotiations one at a time at NegMAS's speed.
    """
    pairings = (others + genius) ** 2 - others ** 2
    return pairings * 2 * repetitions * protocol.rounds * GENIUS_SECONDS_PER_ROUND


def check_size(protocol: Protocol, repetitions: int, trains: bool = False,
               advice: str = "lower the repetitions, P or T", entrants: int = 0,
               genius: int = 0, quiet: bool = False) -> None:
    """Refuse, before any work, a tournament too large for this machine.

    Each pairing plays its ``2 x repetitions`` negotiations at once
    (:func:`~market.game.protocol.negotiation_bytes`); ``trains``: the
    Q-learning entrant is trained by self-play first (:func:`selfplay_config`,
    checked as the train command checks its runs, and its NashConv
    computed). ``genius`` ANAC agents beside ``entrants`` others: their
    negotiations' time is estimated (:func:`genius_seconds`), refused over an
    hour and said first over ten seconds. ``advice`` says what to lower, in
    the caller's words.
    """
    from market.game import qtable, training

    check_memory(negotiation_bytes(protocol, 2 * repetitions),
                 f"{repetitions:,} negotiations per pairing and first mover at "
                 f"P={protocol.prices}, T={protocol.rounds}", advice)
    if trains:
        config = selfplay_config(protocol)
        training.check_size(config, advice)
        # backward induction keeps a handful of (2, S, A) arrays per side and seed
        check_table_cells(16 * config.seeds * qtable.n_rows(protocol) * protocol.n_actions,
                          f"the NashConv of {config.seeds} self-play seeds at "
                          f"P={protocol.prices}, T={protocol.rounds}", advice)
    if genius:
        check_time(genius_seconds(protocol, repetitions, entrants, genius),
                   f"a tournament with {genius} ANAC agent(s) among {entrants + genius} "
                   f"entrants, {repetitions:,} negotiations per pairing and first mover",
                   f"{advice}, or name fewer agents with --genius", quiet)


def check_range(name: str, rng: tuple[int, int], P: int) -> tuple[int, int]:
    """A side's acceptable levels ``(LO, HI)``, checked against the game: the one check the
    command (``--seller-range``) and :func:`run_tournament` share."""
    lo, hi = int(rng[0]), int(rng[1])
    if not 1 <= lo <= hi <= P:
        raise ValueError(f"{name} must satisfy 1 <= LO <= HI <= P={P} (got {lo}-{hi})")
    return lo, hi


def registry_entrants(
    protocol: Protocol,
    names: Sequence[str] | None = None,
    tables: Any = None,
    train_seed: int = 0,
    cache: Any = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[Entrant]:
    """Entrants for registered strategies, each built fresh per pairing.

    By default every registered strategy except those that play at another
    library's speed (classifier ``long_run_time``: ``negmas``, ``genius``),
    which join when named or through :func:`genius_entrants`. Strategies
    that learn are frozen (``learning=False``). A Q-learner plays ``tables``
    (a :class:`~market.game.table_files.TablePair`) when given, otherwise a pair
    of tables trained by self-play (:func:`selfplay_tables`, kept in ``cache``;
    ``progress(done, total)`` hears its training episodes).
    """
    import strategies
    from strategies import specs

    chosen = list(names) if names else [
        n for n in strategies.names() if not strategies.get(n).classifier.get("long_run_time")
    ]
    out = []
    for name in chosen:
        spec = specs.parse(name, "--strategies")  # a name, or a spec such as negmas:CLASS
        name = spec.label  # a user's strategy by its name, not its file's path
        cls = spec.cls
        sides = tuple(cls.classifier.get("sides", ("seller", "buyer")))
        note = ""
        params: dict[str, Any] = {}
        if cls.classifier.get("learns"):
            params["learning"] = False
        if cls.plays_trained_tables:
            if tables is None:
                tables, note = selfplay_tables(protocol, seed=train_seed, cache=cache,
                                               progress=progress)
            else:
                note = "tables given by the user"
            pair = tables

            def factory(side: str, _name: str = name, _pair: Any = pair,
                        _params: dict[str, Any] = params) -> Negotiator:
                return strategies.make(_name, side, 1, protocol, tables=getattr(_pair, side),
                                       **_params)
        else:

            def factory(side: str, _spec: Any = spec,
                        _params: dict[str, Any] = params) -> Negotiator:
                return specs.build(_spec, side, protocol, **_params)

        out.append(Entrant(name, sides, factory, note))
    return out


def genius_entrants(protocol: Protocol, agents: Sequence[str]) -> list[Entrant]:
    """Entrants for ANAC agents (``genius:AGENT``), named by their spec, built fresh per pairing.

    Each plays through :mod:`strategies.negmas_agents`: one NegMAS negotiator
    per negotiation, at NegMAS's speed.
    """
    from strategies import specs

    out = []
    for agent in agents:
        spec = specs.parse(f"genius:{agent}", "--genius")

        def factory(side: str, _spec: Any = spec) -> Negotiator:
            return specs.build(_spec, side, protocol, option="--genius")

        out.append(Entrant(str(spec), ("seller", "buyer"), factory))
    return out


def genius_lineup(text: str, protocol: Protocol) -> list[str]:
    """The ANAC agents ``--genius`` names: a count N (the first N, competition by competition
    from 2010, that can play this game) or a comma list of agent names.

    :class:`~market.errors.UsageError` (one line, naming ``--genius`` and the fix) when the
    extra is missing, a name is unknown, a count is out of range or a named agent cannot
    play a game of this size."""
    from strategies import specs
    from strategies.negmas_agents import anac_agents, check_game, check_name

    text = str(text).strip()
    if text.isdigit():
        if int(text) < 1:  # refused before the agents load (seconds)
            raise UsageError(f"--genius must be a count of at least 1 or a comma list of "
                             f"ANAC agents (got {text!r})")
        try:
            agents = anac_agents()  # imports the agents (over a second): only for a count
        except ValueError as exc:
            raise UsageError(f"--genius: {exc}") from None
        n = int(text)
        if not 1 <= n <= len(agents):
            raise UsageError(f"--genius must be a count in [1, {len(agents)}] or a comma list "
                             f"of ANAC agents (got {text!r})")
        playable = []
        for agent in agents:
            try:
                check_game(agent, protocol)
            except ValueError:
                continue
            playable.append(agent)
        return playable[:n]
    names = [a.strip() for a in text.split(",") if a.strip()]
    if not names:
        raise UsageError(f"--genius takes a count or a comma list of ANAC agents (got {text!r})")
    for name in names:  # every name, before the first is imported and tried
        try:
            check_name("genius", name)
        except ValueError as exc:
            raise UsageError(f"--genius: {exc}") from None
    for name in names:
        specs.parse(f"genius:{name}", "--genius")
        try:
            check_game(name, protocol)
        except ValueError as exc:
            raise UsageError(f"--genius: {exc}") from None
    if len(set(names)) != len(names):
        raise UsageError(f"--genius names an agent twice (got {text!r})")
    return names


#: self-play seeds trained for the tournament's Q-learning entrant (the best one plays)
SELFPLAY_SEEDS = 4


def selfplay_config(protocol: Protocol, seed: int = 0, seeds: int = SELFPLAY_SEEDS,
                    **overrides: Any) -> Any:
    """The training run behind the Q-learning entrant: the ``default`` preset on this game."""
    from market.game import training

    return training.preset("default", prices=protocol.prices, rounds=protocol.rounds,
                           **{d.name: getattr(protocol, d.name) for d in PRESSURE},
                           seed=seed, seeds=seeds, test_episodes=0, **overrides)


def selfplay_tables(
    protocol: Protocol, seed: int = 0, cache: Any = None, seeds: int = SELFPLAY_SEEDS,
    progress: Callable[[int, int], None] | None = None, **overrides: Any
) -> tuple[Any, str]:
    """Q-tables for the tournament's ``qlearning`` entrant, and a note saying what they are.

    The project's trainer (:mod:`market.game.training`, ``default`` preset:
    role-aware tables, both sides learning at once, exploration decaying to
    0) trains ``seeds`` seeds in parallel; the pair with the lowest NashConv
    plays. Training takes well under a second once the kernel is compiled;
    the tables are still kept in ``cache`` (an ``.npz`` path) and reused when
    it holds tables for the same game and seed, so reruns play the same
    tables. ``progress(done, total)`` hears the training episodes per seed.
    ``overrides`` replace fields of the preset (smaller runs in tests).
    """

    from market.game import evaluation, training
    from market.game.table_files import TablePair, load_tables, save_tables

    if cache is not None and Path(cache).exists():
        try:
            pair = load_tables(cache, protocol)
            if pair.meta.get("tournament_seed") == seed:
                nc = pair.meta.get("nash_conv")
                return pair, f"self-play tables reused from {cache} (NashConv {nc})"
        except ValueError:
            pass  # stale or foreign file: train again
    config = selfplay_config(protocol, seed, seeds, **overrides)
    result = training.train(config, nash_conv=False, exact=False, progress=progress)
    nc = np.asarray(evaluation.nash_conv(result.seller, result.buyer, protocol), dtype=float)
    best = int(np.argmin(nc))
    meta = {**config.as_dict(), "tournament_seed": seed, "picked_seed_index": best,
            "nash_conv": round(float(nc[best]), 6)}
    pair = TablePair(protocol, result.seller[best], result.buyer[best], meta)
    if cache is not None:
        save_tables(cache, pair)
    note = (f"self-play tables (market.game.training default preset, {config.total_episodes} "
            f"episodes, best of {seeds} seeds by NashConv = {nc[best]:.3f})")
    return pair, note


#: the payoff matrices written as CSV, then the heatmap
MATRICES = ("seller_payoff", "buyer_payoff", "deal_rate", "mean_payoff")
HEATMAP = "heatmap.png"


def output_files(out_dir: Any, dynamics: Sequence[str] = ()) -> list[Any]:
    """The files :func:`write_outputs` writes to ``out_dir``, to check before any work (and
    those of the evolutionary ``dynamics`` asked for)."""

    out = Path(out_dir)
    return ([out / f"{name}.csv" for name in MATRICES] + [out / HEATMAP]
            + [out / name for name in evolution_files(dynamics)])


def evolution_files(dynamics: Sequence[str]) -> list[str]:
    """What the dynamics write: trajectories, fixation probabilities, alpha-Rank, the plot."""
    out = []
    if {"replicator", "ecological"} & set(dynamics):
        out.append("dynamics.csv")
    if "moran" in dynamics:
        out.append("fixation.csv")
    if "alpharank" in dynamics:
        out.append("alpharank.csv")
    if {"replicator", "ecological", "alpharank"} & set(dynamics):
        out.append("dynamics.png")
    return out


def write_outputs(result: TournamentResult, out_dir: Any, evolution: Any = None) -> list[Any]:
    """Write the payoff matrices (CSV) and the heatmap (PNG) to ``out_dir``, and what the
    ``evolution`` (:class:`~market.runs.dynamics.Evolution`) found, all or none; return the
    paths."""
    from market.plots.tournament import plot_heatmap

    out = Path(out_dir)
    with all_or_nothing():
        files = [write_text(getattr(result, name).to_csv(float_format="%.6g"),
                            out / f"{name}.csv") for name in MATRICES]
        files.append(plot_heatmap(result, out / HEATMAP))  # market/plots/tournament.py
        if evolution is not None:
            files += _write_evolution(evolution, out)
    return files


def _write_evolution(evolution: Any, out: Path) -> list[Any]:
    from market.plots.dynamics import plot_dynamics

    files = []
    if evolution.trajectories:
        files.append(write_text(evolution.long_frame().to_csv(index=False,
                                                               float_format="%.6g"),
                                out / "dynamics.csv"))
    if evolution.fixation is not None:
        files.append(write_text(evolution.fixation.to_csv(float_format="%.6g"),
                                out / "fixation.csv"))
    if evolution.alpharank is not None:
        files.append(write_text(evolution.alpharank.rename("mass").to_csv(
            float_format="%.6g", index_label="strategy"), out / "alpharank.csv"))
    if evolution.trajectories or evolution.alpharank is not None:
        files.append(plot_dynamics(evolution, out / "dynamics.png"))
    return files
