"""Section 3: which equilibrium do the learners find, and is it subgame perfect?

The two-agent game has several subgame-perfect equilibria, because a
responder offered its zero-surplus price gets 0 whether it accepts or
rejects. The default preset's self-play is trained over many seeds and
several P and T; the exact evaluator (:mod:`market.game.evaluation`) says for
each seed whether the pair is a Nash equilibrium (NashConv 0), whether it is
subgame perfect (:func:`~market.game.evaluation.subgame_gaps` all 0) and which
outcome it plays, against the set of pure subgame-perfect outcomes
(:func:`~market.game.outcome_sets.spe_outcomes`) and the one ``spe`` plays. Why
that outcome: the learned values at the tie, the same tables evaluated with
the tie broken otherwise, and training with other exploration schedules.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from market.game import evaluation, outcome_sets, policies, qtable
from market.game.rules import BUYER, SELLER, Protocol
from market.game.training import preset, train
from market.report.section import Context, Section

NAME = "equilibrium"
TITLE = "Which equilibrium do the learners find?"
#: the literature this section's answer sits in (with citations)
RELATED = (
    'Gale, Binmore and Samuelson (1995) showed that learners in the ultimatum game settle '
    'away from the subgame-perfect split when responders are noisy where they are nearly '
    'indifferent: the proposer then leaves them something. The same force acts here at the '
    'exact point of indifference (the responder offered its zero-surplus price flips a '
    'coin), and the learners select the equilibrium in which the last proposer leaves one '
    'price step. People bargain differently again: in the ultimatum game most offers are '
    'near an equal split and low ones are rejected (Güth, Schmittberger and Schwarze 1982), '
    'and in multi-round games players neither fully follow backward induction nor ignore it '
    '(Binmore, Shaked and Sutton 1985; Neelin, Sonnenschein and Spiegel 1988). These agents '
    'model equilibrium play, not people.'
)
ZERO = 1e-9
#: the deal bonus that breaks the responder's tie toward accept in training: far below one
#: price step, so it changes no strict preference of the game
BONUS = 0.001


@dataclass(frozen=True)
class Variant:
    key: str
    label: str
    overrides: dict[str, Any]


VARIANTS = (
    Variant("default", "default preset", {}),
    Variant("eps_end", "exploration ends at 0.05, not 0", {"epsilon_end": 0.05}),
    Variant("optimistic", "optimistic start (every cell 0.01)", {"init": 0.01}),
    Variant("bonus", "a deal bonus of 0.001 in training (ties broken toward accept)",
            {"deal_bonus": BONUS}),
)
#: the variants that change only how the learners explore
SCHEDULES = ("eps_end", "optimistic")
#: how a tie of the greedy policy is broken when the tables are evaluated
TIE_RULES = ("split", "accept", "reject")


def tie_policy(tables: np.ndarray, protocol: Protocol, rule: str) -> np.ndarray:
    """Greedy policies ``(n, 2, S, A)`` of ``tables`` with ties between accepting and
    another best action broken by ``rule``: ``split`` (uniformly, as the learner does),
    ``accept`` (an indifferent responder accepts, as ``spe`` does) or ``reject``."""
    pol = policies.greedy_policy(tables, protocol)
    if rule == "split":
        return pol
    P = protocol.prices
    pick = P if rule == "accept" else P + 1
    tied = (pol[..., pick] > 0) & (pol[..., pick] < 1)
    out = np.where(tied[..., None], 0.0, pol)
    out[..., pick] = np.where(tied, 1.0, out[..., pick])
    return out


def _outcome_level(out: np.ndarray, P: int) -> np.ndarray:
    """(n, 2) deal level per seed and first mover where the pair's outcome is one sure deal
    at one level; 0 where there is surely no deal; NaN where the outcome is a lottery."""
    level = out[..., 0] * P
    sure = (np.abs(out[..., 2] - 1) < ZERO) & (np.abs(level - np.round(level)) < 1e-6)
    none = out[..., 2] < ZERO
    return np.where(sure, np.round(level), np.where(none, 0.0, np.nan))


def _game(ctx: Context, P: int, T: int, v: Variant, seeds: int, k: int) -> dict[str, Any]:
    protocol = Protocol(P, T)
    cfg = preset("default", prices=P, rounds=T, seeds=seeds, test_episodes=0,
                 seed=ctx.seed_for(NAME, P, T, k), **v.overrides)
    res = train(cfg, nash_conv=False, exact=False)
    row: dict[str, Any] = {"P": P, "T": T, "variant": v.key, "label": v.label, "seeds": seeds}
    for rule in TIE_RULES if v.key == "default" else ("split",):
        s_pol, b_pol = (tie_policy(t, protocol, rule) for t in (res.seller, res.buyer))
        nc = np.asarray(evaluation.nash_conv(s_pol, b_pol, protocol, policies=True))
        gaps = evaluation.subgame_gaps(s_pol, b_pol, protocol, policies=True)
        perfect = gaps.reshape(len(gaps), -1).max(axis=1) < ZERO
        suffix = "" if rule == "split" else f"_ties_{rule}"
        row[f"nash{suffix}"] = int((nc < ZERO).sum())
        if rule == "split":
            at_nash = nc < ZERO
        row[f"perfect{suffix}"] = int(perfect.sum())
        if rule == "split":
            levels = _outcome_level(evaluation.outcomes(s_pol, b_pol, protocol,
                                                        policies=True), P)
            at_eq = nc < ZERO
            for f, who in ((SELLER, "seller"), (BUYER, "buyer")):
                lv = levels[at_eq, f]
                for lvl in range(0, P + 1):
                    row[f"{who}_first_level_{lvl}"] = int((lv == lvl).sum())
                row[f"{who}_first_lottery"] = int(np.isnan(lv).sum())
    # the learned values behind the choice, in the last round: the Seller's last offer (it
    # moved first, so it offers at move 2T - 2, after the Buyer's offer of round T - 2; mean
    # over that offer) and the Buyer's answer to an offer of P in round T - 1 (it moved second)
    last = res.seller[:, 0, qtable.round_rows(protocol, max(T - 2, 0)), :P]
    row["seller_last_offer_q_P"] = float(last[:, :, P - 1].mean())
    row["seller_last_offer_q_P_minus_1"] = float(last[:, :, P - 2].mean())
    reply = res.buyer[:, 1, int(qtable.row(protocol, P, T - 1))]
    row["buyer_tie_at_P"] = int((reply[:, P] == reply[:, P + 1]).sum())
    accepts, rejects = reply[:, P] > reply[:, P + 1], reply[:, P] < reply[:, P + 1]
    row["buyer_prefers_accept_P"] = int(accepts.sum())
    row["buyer_prefers_reject_P"] = int(rejects.sum())
    row["nash_where_buyer_accepts_P"] = int((at_nash & accepts).sum())
    row["nash_where_buyer_rejects_P"] = int((at_nash & rejects).sum())
    row["buyer_q_accept_P"] = float(reply[:, P].mean())
    row["buyer_q_reject_P"] = float(reply[:, P + 1].mean())
    return row


def run(ctx: Context) -> Section:
    games = ctx.pick(((3, 3), (5, 3), (5, 5), (10, 2)), ((3, 3),))  # all with T >= 2
    seeds = ctx.pick(200, 8)
    todo = [(P, T, v, k) for P, T in games for k, v in enumerate(VARIANTS)]
    rows = []
    with ctx.progress("report equilibrium", len(todo), "trainings") as update:
        for P, T, v, k in todo:
            update(description=f"P={P} T={T} {v.key}")
            rows.append(_game(ctx, P, T, v, seeds, k))
            update(advance=1)
    table = pd.DataFrame(rows)
    counts = [c for c in table.columns if c.startswith(("nash", "perfect", "seller_first_",
                                                         "buyer_first_"))]
    table[counts] = table[counts].fillna(-1).astype(int)  # -1: not evaluated that way
    spe_rows = []
    for P, T in games:
        protocol = Protocol(P, T)
        sets = outcome_sets.spe_outcomes(protocol)
        played = evaluation.outcomes(*evaluation.spe(protocol), protocol, policies=True)
        spe_rows.append({
            "P": P, "T": T,
            "spe_outcomes_seller_first": " ".join(f"({s:.2g}, {b:.2g})" for _, s, b in
                                                  sets["seller"]),
            "spe_outcomes_buyer_first": " ".join(f"({s:.2g}, {b:.2g})" for _, s, b in
                                                 sets["buyer"]),
            "spe_plays_seller_first": f"({played[SELLER, 0]:.2g}, {played[SELLER, 1]:.2g})",
            "spe_plays_buyer_first": f"({played[BUYER, 0]:.2g}, {played[BUYER, 1]:.2g})",
        })
    spe_df = pd.DataFrame(spe_rows)
    fig = _figure(table, games)
    answer, why = _texts(table, spe_df, games, seeds)
    d = table[table["variant"] == "default"].reset_index(drop=True)
    show = pd.DataFrame({
        "P, T": [f"{p}, {t}" for p, t in zip(d["P"], d["T"], strict=True)],
        "pure SPE outcomes, Seller first": spe_df["spe_outcomes_seller_first"],
        "pure SPE outcomes, Buyer first": spe_df["spe_outcomes_buyer_first"],
        "`spe` plays (Seller first)": spe_df["spe_plays_seller_first"],
        "NashConv 0": [f"{n}/{seeds}" for n in d["nash"]],
        "subgame perfect": [f"{n}/{seeds}" for n in d["perfect"]],
        "learned outcome, Seller first (at NashConv 0)": [
            _outcome_text(r, "seller") for _, r in d.iterrows()],
        "learned outcome, Buyer first": [_outcome_text(r, "buyer") for _, r in d.iterrows()],
        "equilibria if ties -> accept": [f"{n}/{seeds}" for n in d["nash_ties_accept"]],
    })
    return Section(
        name=NAME, title=TITLE, related=RELATED,
        question=("The game has several subgame-perfect equilibria. Which one do self-play "
                  "learners end in, is it subgame perfect (the README said \"Nash, not "
                  "subgame perfect\"), and why that one rather than the one `spe` plays?"),
        experiment=(f"Self-play with the default preset at (P, T) = "
                    f"{', '.join(f'({p}, {t})' for p, t in games)}, {seeds} seeds each. For "
                    "every seed the exact evaluator gives NashConv, each side's largest gain "
                    "from a one-shot deviation in any subgame, reachable or not (0 for both: "
                    "subgame perfect; `run.py evaluate` prints it), and the outcome per first "
                    "mover, compared with the set of pure subgame-perfect outcomes of the game "
                    "(backward induction over sets) and with what `spe` plays, \"a "
                    "subgame-perfect equilibrium (indifferent responders accept)\". To see why: "
                    "the learned values where the Buyer is offered its zero-surplus price, the "
                    "same tables evaluated with that tie broken toward accept or reject instead "
                    "of split, training with two other exploration schedules, and training with "
                    f"a deal bonus of {BONUS} (`train --deal-bonus {BONUS}`), which breaks the "
                    "tie toward accept."),
        answer=answer, why=why,
        figures={"equilibrium.png": fig},
        tables={"equilibrium.csv": table, "equilibrium_spe.csv": spe_df},
        display=[("Default preset: equilibria found, the outcome selected (Seller reward, "
                  "Buyer reward), and the tables re-evaluated with ties broken toward accept",
                  show)],
        numbers={"perfect_share": {f"P={r.P},T={r.T}": r.perfect / seeds
                                   for r in d.itertuples()},
                 "nash_share": {f"P={r.P},T={r.T}": r.nash / seeds for r in d.itertuples()}},
    )


def _outcome_text(row: pd.Series, who: str) -> str:
    P, total = int(row["P"]), int(row["nash"])
    parts = []
    for lvl in range(P, -1, -1):
        n = int(row.get(f"{who}_first_level_{lvl}", 0))
        if n:
            parts.append(f"({lvl / P:.2g}, {1 - lvl / P:.2g}): {n}" if lvl else f"no deal: {n}")
    lottery = int(row.get(f"{who}_first_lottery", 0))
    if lottery:
        parts.append(f"mixed: {lottery}")
    return "; ".join(parts) + f" of {total}" if parts else "-"


def _texts(table: pd.DataFrame, spe_df: pd.DataFrame, games: tuple[tuple[int, int], ...],
           seeds: int) -> tuple[str, str]:
    d = table[table["variant"] == "default"]
    nash, perfect = int(d["nash"].sum()), int(d["perfect"].sum())
    total = seeds * len(d)
    perfect_of_nash = perfect / nash if nash else float("nan")
    sel = sum(int(r[f"seller_first_level_{int(r['P']) - 1}"]) for _, r in d.iterrows())
    top = sum(int(r[f"seller_first_level_{int(r['P'])}"]) for _, r in d.iterrows())
    buyer_one = sum(int(r["buyer_first_level_1"]) for _, r in d.iterrows())
    games_word = f"{len(d)} games" if len(d) > 1 else "the game"
    s1 = (f"Self-play ends at a Nash equilibrium on {nash} of {total} seeds over {games_word}, "
          f"and {perfect} of them ({perfect_of_nash:.0%} of those equilibria) "
          f"are subgame perfect: the gain from a one-shot deviation is 0 in every subgame, "
          f"reachable or not")
    s1 += (", so \"Nash, not subgame perfect\" is wrong: the learned pair is a subgame-perfect "
           "equilibrium." if perfect_of_nash > 0.9 else
           ", so \"subgame perfect\" holds only for part of the learned equilibria.")
    s2 = (f"With the Seller first they select the outcome ((P - 1)/P, 1/P) on {sel} of {nash} "
          f"equilibria and (1, 0), the one `spe` plays, on {top}; with the Buyer first, "
          f"(1/P, (P - 1)/P) on {buyer_one} of {nash}, the game's only pure subgame-perfect "
          f"outcome there. Both Seller-first outcomes are subgame perfect: the game has two, "
          f"and `spe` is \"a subgame-perfect equilibrium (indifferent responders accept)\", "
          f"not the equilibrium.")
    if top == 0 and sel > 0:
        s2 += " Surprising at first sight: the learners never pick the equilibrium `spe` plays."
    r5 = d.iloc[-1] if not len(d[(d["P"] == 5) & (d["T"] == 5)]) else \
        d[(d["P"] == 5) & (d["T"] == 5)].iloc[0]
    P5 = int(r5["P"])
    tie = int(d["buyer_tie_at_P"].sum())
    acc = int(d["nash_ties_accept"].sum())
    rej = int(d["nash_ties_reject"].sum())
    others = table[table["variant"].isin(SCHEDULES)]
    o_sel = sum(int(r[f"seller_first_level_{int(r['P']) - 1}"]) for _, r in others.iterrows())
    o_top = sum(int(r[f"seller_first_level_{int(r['P'])}"]) for _, r in others.iterrows())
    o_nash = int(others["nash"].sum())
    why = (f"In the last round the Buyer offered level P gets 0 whether it accepts or rejects, "
           f"so both its Q-values stay exactly 0 (tied on {tie} of {total} seeds) and its "
           f"greedy policy, like the learner in training, flips a coin there. The Seller's last "
           f"offer at P is then worth about half a deal: at P={P5}, T={int(r5['T'])} it learned "
           f"{r5['seller_last_offer_q_P']:.2f} for a last offer of P against "
           f"{r5['seller_last_offer_q_P_minus_1']:.2f} for P - 1 (a sure deal at "
           f"{(P5 - 1) / P5:.2f}), so it asks P - 1, and backward induction carries that value "
           f"to the first round (with no discount the pair may haggle before the same deal). "
           + ("The tie-breaking is what makes this an equilibrium: " if acc < rej else
              "Re-evaluated with the tie broken either way: ")
           + f"evaluated with indifferent responders accepting, as `spe` assumes, the same "
           f"tables are an equilibrium on {acc} of {total} seeds"
           + (" (the Seller would gain by asking P last)" if acc < rej else "")
           + f", and with them rejecting on {rej}. "
           + ("The exploration schedule does not change the selection: " if o_top == 0 else
              "With other exploration schedules: ")
           + f"with exploration ending at 0.05 or an optimistic start, the equilibria select "
           f"((P - 1)/P, 1/P) on {o_sel} of their {o_nash} equilibria and (1, 0) on {o_top}, "
           f"with the Seller first.")
    why += " " + _optimistic_text(table) + " " + _bonus_text(table, seeds)
    return " ".join([s1, s2]), why


def _optimistic_text(table: pd.DataFrame) -> str:
    """Why the optimistic start, whose values are not exactly tied, selects the same split."""
    o = table[table["variant"] == "optimistic"]
    n = int(o["seeds"].sum())
    tie, acc, rej = (int(o[c].sum()) for c in ("buyer_tie_at_P", "buyer_prefers_accept_P",
                                                "buyer_prefers_reject_P"))
    nash_acc, nash_rej = (int(o[c].sum()) for c in ("nash_where_buyer_accepts_P",
                                                     "nash_where_buyer_rejects_P"))
    return (f"With an optimistic start the Buyer's two values there are tied on only {tie} of "
            f"{n} seeds, yet the selection is the same: both values start at 0.01 and fall "
            f"toward 0 as they are tried, so the one tried less stays higher and the learner "
            f"alternates between accepting and rejecting throughout training; the Seller meets "
            f"the same coin flip as with an exact tie and learns to ask P - 1. At the end the "
            f"Buyer's greedy answer is to accept on {acc} seed(s) and to reject on {rej}; the "
            f"pair is an equilibrium on {nash_rej} of the rejecting seeds and on {nash_acc} of "
            f"the accepting ones (a Buyer that surely accepts P invites the Seller to ask P).")


def _bonus_text(table: pd.DataFrame, seeds: int) -> str:
    """What the learners select when the tie is broken toward accept in training."""
    b = table[table["variant"] == "bonus"]
    nash = int(b["nash"].sum())
    top = sum(int(r[f"seller_first_level_{int(r['P'])}"]) for _, r in b.iterrows())
    sel = sum(int(r[f"seller_first_level_{int(r['P']) - 1}"]) for _, r in b.iterrows())
    acc = int(b["buyer_prefers_accept_P"].sum())
    total = seeds * len(b)
    text = (f"The test of this explanation is to break the tie in training: with a deal bonus "
            f"of {BONUS} (both sides' reward for any deal, far below one price step; evaluated "
            f"on the game's own rewards), the Buyer learns to accept P on {acc} of {total} "
            f"seeds, the pair is an equilibrium on {nash}, and with the Seller first it selects "
            f"(1, 0), the outcome `spe` plays, on {top} of them and ((P - 1)/P, 1/P) on {sel}.")
    if nash and top / nash > 0.9:
        text += (" The learners select whichever subgame-perfect outcome the responder's "
                 "tie-breaking makes a best response: the split they found is the coin flip's.")
    return text


def _figure(table: pd.DataFrame, games: tuple[tuple[int, int], ...]) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, ax_t) = plt.subplots(1, 2, figsize=(12, 4), gridspec_kw={"width_ratios": [1.6,
                                                                                          1]})
    labels, bottoms = [], []
    colours = {"top": "tab:red", "next": "tab:blue", "other": "0.7", "none": "white"}
    x = 0
    ticks = []
    for P, T in games:
        for v in VARIANTS:
            r = table[(table["P"] == P) & (table["T"] == T) & (table["variant"] == v.key)].iloc[0]
            n = r["seeds"]
            top = r[f"seller_first_level_{P}"] / n
            nxt = r[f"seller_first_level_{P - 1}"] / n
            other = r["nash"] / n - top - nxt
            none = 1 - r["nash"] / n
            bottom = 0.0
            for key, h in (("next", nxt), ("top", top), ("other", other), ("none", none)):
                ax.bar(x, h, bottom=bottom, color=colours[key], edgecolor="0.4", lw=0.5)
                bottom += h
            ticks.append(x)
            labels.append(f"{P}, {T}: {v.key}")
            x += 1
        x += 0.6
    bottoms.append(0)
    ax.set_xticks(ticks, labels, fontsize=7, rotation=45, ha="right")
    ax.set_xlabel("P, T: training")
    ax.set_ylabel("share of seeds (Seller moves first)")
    ax.set_title("outcome of the learned pair: ((P-1)/P, 1/P) blue, (1, 0) red, other "
                 "equilibrium outcome grey, not an equilibrium white", fontsize=8)
    ax.set_ylim(0, 1)
    width = 0.25
    for i, rule in enumerate(TIE_RULES):
        col = "nash" if rule == "split" else f"nash_ties_{rule}"
        d = table[table["variant"] == "default"]
        ax_t.bar(np.arange(len(d)) + (i - 1) * width, d[col] / d["seeds"], width,
                 label=f"ties {rule}" if rule != "split" else "ties split (as learned)")
    ax_t.set_xticks(range(len(games)), [f"P={p} T={t}" for p, t in games], fontsize=8)
    ax_t.set_ylabel("share of seeds at NashConv 0")
    ax_t.set_title("the same default tables, ties broken three ways", fontsize=9)
    ax_t.legend(fontsize=8)
    ax_t.set_ylim(0, 1.05)
    fig.tight_layout()
    return fig
