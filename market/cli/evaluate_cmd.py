"""Exact game-theoretic evaluation of a pair of Q-tables (or of the equilibrium itself).

For each side and each first mover: the side's expected two-agent reward
when both play their greedy policies (ties split uniformly), the value of
its exact best response to the other's policy, and the gain; then NashConv
(the gains summed, averaged over both first movers; 0 is an equilibrium)
and the exact expectation of a greedy test run alternating the first mover.
Everything is computed by backward induction, no sampling. Give a FILE.npz
saved by `train --save`, or --spe (with --prices and --rounds) to evaluate
a subgame-perfect equilibrium itself (indifferent responders accept; the game
has several, see the subgame-perfect outcomes printed). With --spe,
--discount (or --seller-discount, --buyer-discount) gives the game time
costs: a deal on the k-th offer is worth d^k to a side with factor d, and
the equilibrium's split is printed beside theory's, the finite game's
without a grid and Rubinstein's infinite-horizon limit.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from typing import Any

from market.cli import common
from market.cli.common import (
    add_pressure,
    emit_json,
    int_in,
    path_text,
    pressure,
    refuse_other_game,
)
from market.cli.progress import progress_bar
from market.errors import UsageError
from market.game import outcome_sets, theory
from market.game import pressure as kinds
from market.game.rules import SIDE_NAMES
from market.limits import check_memory, check_time

HELP = ("exact evaluation: values, best responses, NashConv and subgame perfection of saved "
        "Q-tables or of a subgame-perfect equilibrium")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", nargs="?", type=path_text("FILE.npz"), metavar="FILE.npz",
                   help="Q-tables saved by `train --save` (arrays seller, buyer)")
    p.add_argument("--spe", action="store_true",
                   help="evaluate a subgame-perfect equilibrium (indifferent responders accept) "
                   "instead of a file")
    p.add_argument("--prices", type=int_in("--prices", 2, 10_000), default=None,
                   help="price levels P (with --spe; default 5; with a file: must match it)")
    p.add_argument("--rounds", type=int_in("--rounds", 1, 10_000), default=None,
                   help="rounds T (with --spe; default 5; with a file: must match it)")
    p.add_argument("--episodes", type=int_in("--episodes", 1, 10**9), default=1000,
                   help="length of the greedy test run whose expectation is shown (default 1000)")
    add_pressure(p)  # with --spe: the equilibrium of the game under time pressure


def check_cost(protocol: Any, quiet: bool) -> None:
    """Refuse an evaluation that would not fit in memory or take over an hour, with the
    estimate; say the estimate first when it is over ten seconds."""
    from market.game import evaluation

    peak, seconds = evaluation.cost(protocol)
    what = f"evaluating P={protocol.prices}, T={protocol.rounds}"
    check_memory(peak, what, "lower --prices or --rounds")
    check_time(seconds, what, "lower --prices or --rounds", quiet)


def evaluate(args: argparse.Namespace) -> dict[str, Any]:
    """The figures the command prints, as a JSON-ready dict."""
    from market.game import evaluation
    from market.game.rules import Protocol
    from market.game.table_files import load_tables, peek_tables

    if args.spe == bool(args.file):
        got = "both" if args.spe else "neither"
        raise UsageError(f"give exactly one of FILE.npz or --spe (got {got})")
    asked = pressure(args)
    if args.spe:
        protocol = Protocol(args.prices or 5, args.rounds or 5, **asked)
        check_cost(protocol, args.json)
        seller, buyer = evaluation.spe(protocol)
        policies, source = True, "spe"
        layout = "a subgame-perfect equilibrium (indifferent responders accept), pure policies"
    else:
        have = peek_tables(args.file)[0]
        refuse_other_game(str(args.file), have, asked)
        want = None
        check_cost(peek_tables(args.file)[0], args.json)  # from the headers, before loading
        if args.prices is not None or args.rounds is not None:
            pair = load_tables(args.file)
            have = pair.protocol
            want = replace(have, prices=args.prices or have.prices,
                           rounds=args.rounds or have.rounds)
        pair = load_tables(args.file, want)
        protocol, seller, buyer = pair.protocol, pair.seller, pair.buyer
        policies, source = False, str(args.file)
        layout = "role-aware (2, S, A)" if pair.role_aware else "document layout (S, A)"

    with progress_bar("evaluate", 5, "steps", quiet=args.json) as update:
        update(description="values, best responses, NashConv")
        rep = evaluation.report(seller, buyer, protocol, policies=policies)
        update(advance=1, description="the greedy test's expectation")
        test = evaluation.exact_test(seller, buyer, protocol, args.episodes, policies=policies)
        update(advance=1, description="one-shot deviations in every subgame")
        gaps = evaluation.subgame_gaps(seller, buyer, protocol, policies=policies)
        update(advance=1, description="outcomes")
        outcomes = evaluation.outcomes(seller, buyer, protocol, policies=policies)
        update(advance=1, description="the game's pure subgame-perfect outcomes")
        spe_outcomes = (outcome_sets.spe_outcome_offers(protocol)
                        if outcome_sets.outcome_sets_affordable(protocol)
                        else {})
    names = ("seller", "buyer")
    rows = [
        {
            "side": names[side],
            "first": names[first],
            "value": rep["value"][first][side],
            "best_response": rep["best_response"][first][side],
            "gain": rep["gain"][first][side],
        }
        for side in (0, 1)
        for first in (0, 1)
    ]
    return {
        "source": source,
        "prices": protocol.prices,
        "rounds": protocol.rounds,
        "layout": layout,
        "rows": rows,
        "deal_probability": {f"{names[f]}_first": rep["deal"][f] for f in (0, 1)},
        "nash_conv": rep["nash_conv"],
        "subgame_gap": {names[side]: float(gaps[:, side].max()) for side in (0, 1)},
        "subgame_perfect": bool(not gaps.any()),
        "outcome": {f"{names[f]}_first": [float(outcomes[f, 0]), float(outcomes[f, 1])]
                    for f in (0, 1)},
        # each outcome once: its level, the offer the deal is made on (counted from 0; None
        # without time costs, where only the level matters) and the two rewards
        "spe_outcomes": {f"{k}_first": [{"level": lv, "offer": k_, "seller": s, "buyer": b}
                                        for lv, k_, s, b in v]
                         for k, v in spe_outcomes.items()},
        "discount": {"seller": protocol.seller_discount, "buyer": protocol.buyer_discount},
        **pressure_record(protocol),
        "theory": _theory(protocol),
        "test": test,
    }


def _theory(protocol: Any) -> dict[str, Any] | None:
    """What theory gives the first proposer under the game's time pressure: with discounts
    or a breakdown risk, the finite game's split without a grid (its 2T - 1 offers) and
    Rubinstein's infinite-horizon limit (Binmore-Rubinstein-Wolinsky's with the risk); with
    fixed costs alone, Rubinstein's fixed-cost limit (the first proposer's share, a range
    when the costs are equal). None without time pressure, or with costs and another kind
    at once, or with a kind of pressure declared after the five, which no standard result
    covers (none to set beside the grid)."""

    ds, db, offers = protocol.seller_discount, protocol.buyer_discount, 2 * protocol.rounds - 1
    q = protocol.breakdown
    if set(kinds.in_force(protocol)) - {"discount", kinds.BREAKDOWN.name, "cost"}:
        return None  # a kind no standard result covers
    if protocol.costly:
        if protocol.discounted or q > 0:
            return None
        return {f"{name}_first": {
            "fixed_costs": list(theory.cost_split(*protocol.costs, f)),
        } for f, name in enumerate(("seller", "buyer"))}
    if not protocol.timed:
        return None
    return {f"{name}_first": {
        "finite_horizon": list(theory.horizon_split(ds, db, offers, f, q)),
        "rubinstein": list(theory.rubinstein_split(ds, db, f, q)),
    } for f, name in enumerate(("seller", "buyer"))}


#: a list of subgame-perfect outcomes longer than this is summarised in the printed text
OUTCOMES_SHOWN = 12


def pressure_record(protocol: Any) -> dict[str, Any]:
    """The time pressure of a game other than its discounts (recorded apart, always), for a
    JSON record: each kind in force (:func:`market.game.pressure.in_force`) by its name, one
    number or a number per side, so a game without any records what it always did."""
    discount = next(k.name for k in kinds.KINDS if k.params == kinds.DISCOUNTS)
    return {name: values[0] if len(values) == 1 else dict(zip(SIDE_NAMES, values, strict=True))
            for name, values in kinds.in_force(protocol).items() if name != discount}


def num(x: float, digits: int = 3) -> str:
    """``x`` to ``digits`` significant digits, more where fewer would print a whole number
    that ``x`` is not (a discount of 0.99999999 is not "1", a share of 4e-9 not "0")."""
    for d in range(digits, 18):
        text = f"{x:.{d}g}"
        if float(text) != round(float(text)) or float(text) == x:
            return text
    return repr(x)


def _pressure_text(result: dict[str, Any]) -> str:
    """The header's words for the game's time pressure: each kind the record holds off its
    default, in the words it declares (:attr:`market.game.pressure.Kind.text`)."""
    text = ""
    for kind in kinds.KINDS:
        v = result.get(kind.name)
        values = tuple(v[s] for s in SIDE_NAMES) if isinstance(v, dict) else (v,)
        if v is not None and values != tuple(d.default for d in kind.params):
            text += ", " + kind.text.format(*(num(x, 6) for x in values))
    return text


def run(args: argparse.Namespace) -> int:
    result = evaluate(args)
    if args.json:
        emit_json(result)
        return 0
    from rich.table import Table

    console = common.console()
    table = Table(
        title=f"Exact evaluation: {result['source']}",
        caption=f"P={result['prices']}, T={result['rounds']}{_pressure_text(result)}, "
                f"{result['layout']}",
    )
    for col in ("side", "first mover", "value", "best response", "gain"):
        table.add_column(col, justify="left" if col in ("side", "first mover") else "right")
    for r in result["rows"]:
        table.add_row(r["side"], r["first"], f"{r['value']:.4f}", f"{r['best_response']:.4f}",
                      f"{r['gain']:.4f}")
    console.print(table)
    deal = result["deal_probability"]
    console.print(
        f"deal probability: {deal['seller_first']:.4f} (seller first), "
        f"{deal['buyer_first']:.4f} (buyer first)"
    )
    console.print(f"[bold]NashConv: {result['nash_conv']:.6g}[/bold]  (0 = equilibrium)")
    gap = result["subgame_gap"]
    verdict = "subgame perfect" if result["subgame_perfect"] else "not subgame perfect"
    console.print(
        f"[bold]subgame perfection:[/bold] largest one-shot deviation gain in any subgame: "
        f"seller {gap['seller']:.4g}, buyer {gap['buyer']:.4g} ({verdict})"
    )

    def pairs(xs: list[list[float]]) -> str:
        return ", ".join(f"({num(a)}, {num(b)})" for a, b in xs)

    def outcomes_text(xs: list[dict]) -> str:
        """Each outcome's rewards, and where it is reached when that matters (time costs);
        a long list as its count, the range of its levels and offers, its first and last
        (``--json`` has every one)."""
        def one(o: dict) -> str:
            return (f"({num(o['seller'])}, {num(o['buyer'])})"
                    + (f" at level {o['level']} on offer {o['offer']}"
                       if o["offer"] is not None else ""))

        if len(xs) <= OUTCOMES_SHOWN:
            return ", ".join(one(o) for o in xs)
        levels = [o["level"] for o in xs]
        offers = sorted({o["offer"] for o in xs if o["offer"] is not None})
        where = f" on offers {offers[0]}-{offers[-1]}" if offers else ""
        return (f"{len(xs)} outcomes, levels {min(levels)}-{max(levels)}{where}, from "
                f"{one(xs[0])} to {one(xs[-1])} (every one in --json)")

    out, spe, theory = result["outcome"], result["spe_outcomes"], result["theory"]
    for first in ("seller", "buyer"):
        key = first + "_first"
        said = (f"pure subgame-perfect outcomes of the game: {outcomes_text(spe[key])}" if spe
                else
                "pure subgame-perfect outcomes: not computed at this size with time costs")
        if theory and "fixed_costs" in theory[key]:
            lo, hi = theory[key]["fixed_costs"]
            share = num(lo) if lo == hi else f"anything in [{num(lo)}, {num(hi)}]"
            said += (f"; theory: the first proposer gets {share} in Rubinstein's infinite game "
                     "with fixed costs")
        elif theory:
            limit = ("Binmore-Rubinstein-Wolinsky's infinite one" if "breakdown" in result
                     else "Rubinstein's infinite one")
            said += (f"; theory: {pairs([theory[key]['finite_horizon']])} in this finite game "
                     f"without a grid, {pairs([theory[key]['rubinstein']])} in {limit}")
        console.print(f"{first} first: outcome ({num(out[key][0])}, {num(out[key][1])}); {said}",
                      highlight=False)
    t = result["test"]
    console.print(
        f"greedy test, {t['episodes']:,} episodes alternating the first mover (exact "
        f"expectation): Seller wallet {t['seller_wallet']:,.1f}, deals {t['deals']:,.1f}, "
        f"Seller reward {t['seller_reward']:,.1f}, Buyer reward {t['buyer_reward']:,.1f}"
    )
    return 0
