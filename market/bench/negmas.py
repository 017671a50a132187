"""Speed next to NegMAS: negotiations per CPU second of our protocol and of NegMAS's mechanism.

The pair of the NegMAS comparison: a Boulware Seller against a Conceder
Buyer on 101 price levels (a price issue 0..100, Seller range 20-100, Buyer
0-80), 10 rounds, half of the negotiations opened by each side.

- Ours: ``boulware`` against ``conceder``, all negotiations in one
  lockstep :func:`~market.game.protocol.negotiate` call.
- NegMAS: its own ``BoulwareTBNegotiator`` against ``ConcederTBNegotiator``
  in ``SAOMechanism``, one negotiation after another (the way NegMAS runs
  negotiations), each side with this project's utility function
  (:func:`strategies.negmas_agents.level_ufun`).
- Also timed: our two strategies inside ``SAOMechanism`` through
  :class:`~market.interop.negmas_adapter.StrategyNegotiator`, so the same
  strategies with the same outcomes, at NegMAS's pace.

Rates are per CPU second of this process (``time.process_time``), since the
machine is shared; repeats interleave the two so that both see the same
load, and the ratio is taken per repeat and reported as the median with its
spread.
"""

from __future__ import annotations

import statistics
import time

import numpy as np

from market.bench import BenchRow, at_least, spread

TITLE = "NegMAS comparison (Boulware Seller vs Conceder Buyer, P=101, T=10)"
P, T = 101, 10
SELLER_FLOOR, BUYER_CEILING = 21, 81  # levels of prices 20 and 80 on 0..100


def _ours(n: int) -> tuple[float, np.ndarray]:
    """CPU seconds for ``n`` negotiations in one lockstep call, and their deal levels."""
    import strategies
    from market.game.protocol import Side, negotiate
    from market.game.rules import BUYER, SELLER, Protocol

    protocol = Protocol(P, T)
    seller = strategies.make("boulware", SELLER, 1, protocol)
    buyer = strategies.make("conceder", BUYER, 1, protocol)
    first = np.where(np.arange(n) % 2 == 0, SELLER, BUYER)
    t0 = time.process_time()
    rec = negotiate(protocol, Side.single(seller, n, SELLER_FLOOR, P),
                    Side.single(buyer, n, 1, BUYER_CEILING), first, np.random.default_rng(0))
    return time.process_time() - t0, rec.level


def _ours_each(n: int, compiled: bool) -> float:
    """CPU seconds for ``n`` negotiations, one call each: the lockstep protocol, or the
    compiled engine (:func:`market.sim.engine.negotiate`)."""
    import strategies
    from market.game import protocol as lockstep
    from market.game.protocol import Side
    from market.game.rules import BUYER, SELLER, Protocol
    from market.sim import engine

    run = engine.negotiate if compiled else lockstep.negotiate
    proto = Protocol(P, T)
    seller = strategies.make("boulware", SELLER, 1, proto)
    buyer = strategies.make("conceder", BUYER, 1, proto)
    sides = (Side.single(seller, 1, SELLER_FLOOR, P), Side.single(buyer, 1, 1, BUYER_CEILING))
    rng = np.random.default_rng(0)
    t0 = time.process_time()
    for i in range(n):
        run(proto, *sides, i % 2, rng)
    return time.process_time() - t0


def _negmas(n: int, adapted: bool) -> tuple[float, list[int]]:
    """CPU seconds for ``n`` negotiations in NegMAS, one at a time, and their deal levels."""
    from negmas.sao import BoulwareTBNegotiator, ConcederTBNegotiator

    from market.interop.negmas_adapter import run_negotiation

    levels = []
    t0 = time.process_time()
    for i in range(n):
        if adapted:
            seller, buyer = "boulware", "conceder"
        else:
            seller, buyer = BoulwareTBNegotiator(), ConcederTBNegotiator()
        out = run_negotiation(seller, buyer, prices=P, rounds=T, seller_floor=SELLER_FLOOR,
                              buyer_ceiling=BUYER_CEILING, first=i % 2)
        levels.append(out.level)
    return time.process_time() - t0, levels


def run(repeats: int = 5, quick: bool = False) -> list[BenchRow]:
    try:
        import negmas  # noqa: F401
    except ImportError:  # the rest of the bench runs without the extra
        from strategies.negmas_agents import INSTALL

        return [BenchRow("negmas", "not measured", float("nan"), "",
                         note=f"the negmas extra is not installed: {INSTALL}")]
    n_ours, n_negmas = (2_000, 6) if quick else (20_000, 40)
    _ours(100)  # warm-up: imports, first calls
    _negmas(2, False)
    _negmas(2, True)
    n_each = 200 if quick else 2_000
    _ours_each(10, True)  # the engine compiled or loaded
    ours, native, adapted, ratio = [], [], [], []
    each, each_c, ratio_each = [], [], []
    for _ in range(repeats):
        secs, ours_levels = _ours(n_ours)
        ours.append(n_ours / secs)
        each.append(n_each / _ours_each(n_each, False))
        each_c.append(n_each / _ours_each(n_each, True))
        secs, native_levels = _negmas(n_negmas, adapted=False)
        native.append(n_negmas / secs)
        secs, adapted_levels = _negmas(n_negmas, adapted=True)
        adapted.append(n_negmas / secs)
        ratio.append(ours[-1] / native[-1])
        ratio_each.append(max(each[-1], each_c[-1]) / native[-1])
    price = lambda levels: f"{levels[0] - 1}/{levels[1] - 1}"  # noqa: E731 - price = level - 1
    same = list(adapted_levels[:2]) == [int(x) for x in ours_levels[:2]]
    return [
        BenchRow("negmas", f"our protocol, batched ({n_ours:,} in one lockstep call)",
                 statistics.median(ours), "negotiations/CPU s", spread=spread(ours),
                 note=f"boulware vs conceder; deals at {price(ours_levels)} "
                      "(Seller/Buyer first)"),
        BenchRow("negmas", "our protocol, one negotiation per call (lockstep)",
                 statistics.median(each), "negotiations/CPU s", spread=spread(each),
                 note="the way a NegMAS user runs negotiations, one at a time"),
        BenchRow("negmas", "our protocol, one negotiation per call (compiled engine)",
                 statistics.median(each_c), "negotiations/CPU s", spread=spread(each_c),
                 note="market.sim.engine.negotiate with one row"),
        BenchRow("negmas", "NegMAS SAOMechanism, one at a time (BoulwareTB vs ConcederTB)",
                 statistics.median(native), "negotiations/CPU s", spread=spread(native),
                 note=f"{n_negmas} negotiations; deals at {price(native_levels)} "
                      "(Seller/Buyer first)"),
        BenchRow("negmas", "NegMAS SAOMechanism, our boulware vs conceder (adapter)",
                 statistics.median(adapted), "negotiations/CPU s", spread=spread(adapted),
                 note=f"same deals as our protocol: {'yes' if same else 'NO'}"),
        BenchRow("negmas", "speed-up of our protocol over NegMAS, batched",
                 statistics.median(ratio), "x", spread=spread(ratio),
                 target=at_least(1_000, ">= 1,000x"),
                 note="NegMAS and ANAC agents inside our protocol run at NegMAS's speed"),
        BenchRow("negmas", "speed-up over NegMAS, one negotiation per call",
                 statistics.median(ratio_each), "x", spread=spread(ratio_each),
                 note="the faster of the two one-per-call rows"),
    ]
