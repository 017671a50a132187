"""Exact evaluation by backward induction: hand-worked games, best responses, NashConv.

Layout reminder (document): rows ``s``, then ``p.t`` at ``1 + t*P + (p-1)``,
then ``d``; columns offers ``1..P`` (index ``p-1``), accept ``P``, reject
``P+1``. Policies are ``(2, S, A)``: role 0 = the agent moved first.
"""

import json
from pathlib import Path

import cli_run  # tests/support, on pytest's pythonpath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import strategies
from market.cli import main
from market.game import evaluation as ev
from market.game import outcome_sets, policies, qtable, theory
from market.game.protocol import Side, negotiate
from market.game.qtable import legal_rows as q_legal_rows
from market.game.record import two_agent_rewards
from market.game.rules import BUYER, SELLER, Protocol
from market.game.table_files import TablePair, save_tables
from strategies.qlearning import QLearning

ROOT = Path(__file__).resolve().parents[2]


def row(protocol: Protocol, p: int, t: int) -> int:
    return 1 + t * protocol.prices + (p - 1)


def pure(protocol: Protocol, side: int, choices: dict[tuple[int, int], int]) -> np.ndarray:
    """A pure policy: ``choices[(role, row)] = action``; other rows take a legal default."""
    pol = ev._default_policy(protocol, side).copy()
    for (role, r), a in choices.items():
        pol[role, r] = 0.0
        pol[role, r, a] = 1.0
    return pol


def naive_values(ps, pb, protocol, first, br=None):
    """Independent recursive walk of the whole game tree (exponential, tiny games only).

    ``br``: a side that maximises its own reward instead of following its policy.
    """
    P = protocol.prices
    pols = (ps, pb)

    def walk(m, p):
        mover = first if m % 2 == 0 else 1 - first
        r = 0 if m == 0 else 1 + ((m - 1) // 2) * P + p - 1
        results = []
        for a in np.flatnonzero(protocol.legal(m)):
            if a < P:
                v = walk(m + 1, a + 1)
                if m >= 1:  # a counter-offer: the talks survive it with probability 1 - Q
                    v = tuple((1 - protocol.breakdown) * x for x in v)
            elif a == P:  # the offer of move m - 1, discounted and costed per offer before it
                k = m - 1
                v = (p / P * protocol.seller_discount ** k - k * protocol.seller_cost,
                     (1 - p / P) * protocol.buyer_discount ** k - k * protocol.buyer_cost)
            else:
                v = (0.0, 0.0)
            results.append((a, v))
        if br == mover:  # any maximiser will do: only its own component is checked
            return max((v for _, v in results), key=lambda v: v[mover])
        pi = pols[mover][m % 2, r]
        return tuple(sum(pi[a] * v[k] for a, v in results) for k in (0, 1))

    return walk(0, 0)


def literal_spe_outcomes(pr: Protocol, first: int) -> set[tuple[int, int]]:
    """The pure subgame-perfect outcomes read literally from their definition: in every
    subgame, a child's outcome is kept when the mover weakly prefers it to the worst every
    other child can be made to give it. Outcomes are ``(level, move of the deal)`` (level 0:
    none); without time costs the move does not change what they are worth."""
    P, T = pr.prices, pr.rounds
    after: list[set[tuple[int, int]]] = []
    for m in range(2 * T - 1, -1, -1):
        mover = first if m % 2 == 0 else 1 - first
        legal = pr.legal(m)
        now = []
        for p in [0] if m == 0 else range(1, P + 1):
            kids = [after[k - 1] for k in range(1, P + 1) if legal[k - 1]]
            kids += [{(p, m)}, {(0, 0)}] if m > 0 else []
            worst = [min(literal_value(pr, o, mover, m) for o in c) for c in kids]
            now.append({o for i, c in enumerate(kids) for o in c
                        if literal_value(pr, o, mover, m) >= max(
                            (w for j, w in enumerate(worst) if j != i), default=-np.inf)
                        - ev.TIE_TOL})  # values within the evaluator's tolerance are ties
        after = now
    return after[0]


def literal_value(pr: Protocol, outcome: tuple[int, int], side: int, at: int = 1) -> float:
    """What ``outcome`` is worth to ``side`` in expectation, seen from the subgame at move
    ``at``: its reward, times the chance that the counter-offers between (those at moves
    ``max(at, 1) .. move - 1``) do not end the talks."""
    level, move = outcome
    if level == 0:
        return 0.0
    d = (pr.seller_discount, pr.buyer_discount)[side] ** (move - 1)
    c = (pr.seller_cost, pr.buyer_cost)[side] * (move - 1)
    reach = (1 - pr.breakdown) ** (move - max(at, 1))
    return ((level / pr.prices if side == SELLER else 1.0 - level / pr.prices) * d - c) * reach


# --- hand-worked games --------------------------------------------------------------------------
def test_values_p2_t1_by_hand():
    # P=2, T=1: the first mover offers once, the second accepts or rejects.
    # Rows: s=0, "1.0"=1, "2.0"=2, d=3; actions: offer1=0, offer2=1, accept=2, reject=3.
    pr = Protocol(2, 1)
    seller = np.zeros((2, qtable.n_rows(pr), pr.n_actions))
    seller[0, 0, [0, 1]] = 0.5  # first: offer 1 or 2, half each
    seller[1, 1, 2] = 1.0  # second, facing 1: accept
    seller[1, 2, 2] = 1.0  # second, facing 2: accept
    seller[0, 1, 2] = seller[0, 2, 2] = seller[1, 0, 0] = 1.0  # unreachable rows
    buyer = np.zeros_like(seller)
    buyer[1, 1, 2] = 1.0  # facing 1: accept
    buyer[1, 2, [2, 3]] = [0.25, 0.75]  # facing 2: accept a quarter of the time
    buyer[0, 0, 0] = 1.0  # first: offer 1
    buyer[0, 1, 2] = buyer[0, 2, 2] = buyer[1, 0, 0] = 1.0
    # Seller first: 1/2 * (1/2) + 1/2 * 1/4 * (2/2) = 0.375 for the Seller,
    # 1/2 * (1 - 1/2) + 1/2 * 1/4 * 0 = 0.25 for the Buyer.
    assert ev.values(seller, buyer, pr, SELLER) == pytest.approx((0.375, 0.25))
    # Buyer first: offers 1, the Seller accepts: (1/2, 1/2).
    assert ev.values(seller, buyer, pr, BUYER) == pytest.approx((0.5, 0.5))
    # Deals: seller first 1/2 + 1/2 * 1/4 = 0.625, buyer first 1.
    assert ev.outcomes(seller, buyer, pr, policies=True)[:, 2] == pytest.approx([0.625, 1.0])
    # Seller's best response: offer 1 when first (1/2 beats 1/4), accept when second (1/2).
    v_sf, v_bf, br = ev.best_response(buyer, SELLER, pr)
    assert (v_sf, v_bf) == pytest.approx((0.5, 0.5))
    assert br[0, 0].argmax() == 0 and br[0, 0].max() == 1.0
    # NashConv: Seller gains 0.5 - 0.375 when first, 0 when second. Buyer, when second,
    # facing 1 accepts (1/2 > 0), facing 2 is indifferent (0): no gain; when first it
    # already offers 1 (the best): no gain. So NashConv = (0.125 + 0) / 2.
    assert ev.nash_conv(seller, buyer, pr, policies=True) == pytest.approx(0.0625)
    # A 1,000-episode test alternating the first mover: 500 * 0.375 + 500 * 0.5 Seller reward,
    # wallet = P * that = 875, deals 500 * 0.625 + 500 = 812.5.
    test = ev.exact_test(seller, buyer, pr, 1000, policies=True)
    assert test["seller_wallet"] == pytest.approx(875.0)
    assert test["deals"] == pytest.approx(812.5)
    assert test["seller_reward"] == pytest.approx(437.5)
    assert test["buyer_reward"] == pytest.approx(500 * 0.25 + 500 * 0.5)
    # Odd run: the side named `first` moves first once more.
    odd = ev.exact_test(seller, buyer, pr, 3, policies=True, first=BUYER)
    assert (odd["seller_first_episodes"], odd["buyer_first_episodes"]) == (1, 2)
    assert odd["deals"] == pytest.approx(0.625 + 2)


def test_spe_p3_t2_by_hand():
    # P=3, T=2. Seller first: at move 3 the Buyer accepts any p (1 - p/3 >= 0; at p=3 it
    # is indifferent and the tie-break favours the opponent: accept). So at move 2 the
    # Seller offers 3 and gets 1; at move 1 the Buyer can get at most 0 by continuing and
    # accepts; at move 0 the Seller asks 3. Values (1, 0). Buyer first, mirror image: the
    # Buyer asks 1, the Seller accepts: (1/3, 2/3).
    pr = Protocol(3, 2)
    s, b = ev.spe(pr)
    assert ev.values(s, b, pr, SELLER) == pytest.approx((1.0, 0.0), abs=1e-15)
    assert ev.values(s, b, pr, BUYER) == pytest.approx((1 / 3, 2 / 3), abs=1e-15)
    assert s[0, 0].argmax() == 2 and b[0, 0].argmax() == 0  # first offers: 3 and 1
    for p in (1, 2, 3):  # the second mover accepts every opening offer
        assert b[1, row(pr, p, 0)].argmax() == pr.accept
        assert s[1, row(pr, p, 0)].argmax() == pr.accept
    assert ev.nash_conv(s, b, pr, policies=True) == 0.0


def test_best_response_p3_t2_by_hand():
    # P=3, T=2, a fixed Buyer. When second: facing 1 accept; facing 2 offer 1; facing 3
    # offer 2; in the last round accept p <= 2, reject 3. When first: offer 1, then
    # accept whatever the Seller counters.
    pr = Protocol(3, 2)
    A = pr.accept
    buyer = pure(pr, BUYER, {
        (1, row(pr, 1, 0)): A, (1, row(pr, 2, 0)): 0, (1, row(pr, 3, 0)): 1,
        (1, row(pr, 1, 1)): A, (1, row(pr, 2, 1)): A, (1, row(pr, 3, 1)): A + 1,
        (0, 0): 0, (0, row(pr, 1, 0)): A, (0, row(pr, 2, 0)): A, (0, row(pr, 3, 0)): A,
    })
    v_sf, v_bf, br = ev.best_response(buyer, SELLER, pr)
    # Seller first. Move 2, facing the Buyer's q: accept gives q/3, offering 2 gets
    # accepted at move 3 (2/3), offering 3 gets rejected. So move 2 is worth 2/3 for q <= 2.
    # Move 0: ask 1 -> accepted, 1/3; ask 2 -> Buyer counters 1 -> 2/3; ask 3 -> Buyer
    # counters 2 -> 2/3. Best: 2/3. Ask 2 and ask 3 tie for the Seller and for the Buyer
    # (1/3 each); the tie-break takes the Seller's most favourable offer: 3.
    assert v_sf == pytest.approx(2 / 3)
    assert br[0, 0].argmax() == 2
    assert br[0, row(pr, 2, 0)].argmax() == A  # facing 2 at move 2: accept (ties go to accept)
    assert br[0, row(pr, 1, 0)].argmax() == 1  # facing 1 at move 2: offer 2
    # Buyer first: it offers 1; the Seller counters 3 and the Buyer (first, round 0) accepts.
    assert v_bf == pytest.approx(1.0)
    assert br[1, row(pr, 1, 0)].argmax() == 2
    # The returned policy attains those values, and nothing does better.
    assert ev.values(br, buyer, pr, SELLER)[0] == pytest.approx(v_sf)
    assert ev.values(br, buyer, pr, BUYER)[0] == pytest.approx(v_bf)
    s_spe, _ = ev.spe(pr)
    assert ev.values(s_spe, buyer, pr, SELLER)[0] <= v_sf + 1e-12


# --- equilibrium and NashConv -------------------------------------------------------------------
@pytest.mark.parametrize("P,T", [(2, 1), (2, 3), (3, 1), (3, 2), (5, 5), (4, 7), (10, 10)])
def test_spe_has_nash_conv_zero(P, T):
    pr = Protocol(P, T)
    s, b = ev.spe(pr)
    assert abs(ev.nash_conv(s, b, pr, policies=True)) <= 1e-12
    # The first mover makes the last offer, so it takes everything (up to the grid).
    assert ev.values(s, b, pr, SELLER) == pytest.approx((1.0, 0.0))
    assert ev.values(s, b, pr, BUYER) == pytest.approx((1 / P, 1 - 1 / P))
    # As tables (a one-hot policy is its own greedy policy) it is the same pair.
    assert ev.nash_conv(s, b, pr) <= 1e-12


def test_spe_is_cached_but_returns_copies():
    pr = Protocol(4, 3)
    s1, _ = ev.spe(pr)
    s1[:] = 0
    s2, _ = ev.spe(pr)
    assert s2.sum() > 0


def random_policy(rng, pr, power=3.0):
    legal = ev.legal_rows(pr)
    x = rng.random((2, qtable.n_rows(pr), pr.n_actions)) ** power * legal
    x[:, :-1] /= x[:, :-1].sum(-1, keepdims=True)
    return x


@pytest.mark.parametrize("P,T,seed", [(2, 1, 0), (2, 2, 1), (3, 2, 2), (4, 3, 3), (3, 4, 4)])
@pytest.mark.parametrize("pressure", [(1.0, 1.0), (0.9, 0.6), (0.5, 1.0), (1.0, 1.0, 0.2),
                                      (1.0, 1.0, 0.0, 0.05, 0.1), (0.9, 0.8, 0.3, 0.02, 0.0)])
def test_sweep_agrees_with_a_naive_tree_walk(P, T, seed, pressure):
    """Discounts, breakdown risk (an expectation at each counter-offer) and costs per offer
    alike, against an independent walk of the whole tree."""
    rng = np.random.default_rng(seed)
    pr = Protocol(P, T, *pressure)
    ps, pb = random_policy(rng, pr), random_policy(rng, pr)
    v_s = ev.best_response(pb, SELLER, pr)
    v_b = ev.best_response(ps, BUYER, pr)
    for f in (SELLER, BUYER):
        assert ev.values(ps, pb, pr, f) == pytest.approx(naive_values(ps, pb, pr, f))
        assert v_s[f] == pytest.approx(naive_values(ps, pb, pr, f, br=SELLER)[0])
        assert v_b[f] == pytest.approx(naive_values(ps, pb, pr, f, br=BUYER)[1])
    gains = [
        v_s[f] - ev.values(ps, pb, pr, f)[0] + v_b[f] - ev.values(ps, pb, pr, f)[1]
        for f in (SELLER, BUYER)
    ]
    assert ev.nash_conv(ps, pb, pr, policies=True) == pytest.approx(np.mean(gains))


def test_legal_rows_matches_the_q_learner():
    for P, T in [(2, 1), (5, 5), (3, 6)]:
        pr = Protocol(P, T)
        assert (ev.legal_rows(pr) == q_legal_rows(pr)).all()


@settings(max_examples=40, deadline=None)
@given(
    P=st.integers(2, 4),
    T=st.integers(1, 3),
    seed=st.integers(0, 2**32 - 1),
    levels=st.integers(1, 4),
    role_aware=st.booleans(),
)
def test_nash_conv_is_between_0_and_2_for_any_tables(P, T, seed, levels, role_aware):
    # Few distinct values make many ties, which the greedy policy splits.
    rng = np.random.default_rng(seed)
    pr = Protocol(P, T)
    R = 2 if role_aware else 1
    qs = rng.integers(0, levels, (R, qtable.n_rows(pr), pr.n_actions)).astype(float)
    qb = rng.integers(0, levels, (R, qtable.n_rows(pr), pr.n_actions)).astype(float)
    nc = ev.nash_conv(qs, qb, pr)
    assert 0.0 <= nc <= 2.0
    # Batched evaluation gives the same figure.
    batch = ev.nash_conv(np.stack([qs, qs]), np.stack([qb, qb]), pr)
    assert batch.shape == (2,) and batch == pytest.approx([nc, nc], abs=1e-12)


def test_nash_conv_is_zero_only_for_equilibria():
    pr = Protocol(5, 5)
    s, b = ev.spe(pr)
    # A Seller that opens at 4 instead of 5 when first leaves 1/5 on the table.
    worse = s.copy()
    worse[0, 0] = 0
    worse[0, 0, 3] = 1.0
    assert ev.nash_conv(worse, b, pr, policies=True) == pytest.approx(0.2 / 2)


# --- greedy policies ---------------------------------------------------------------------------
def test_greedy_policy_splits_ties_among_legal_maxima():
    pr = Protocol(3, 2)
    S, A = qtable.n_rows(pr), pr.n_actions
    q = np.zeros((S, A))
    q[0] = [1, 3, 3, 9, 9]  # start row: accept/reject illegal however high
    q[row(pr, 2, 0)] = [2, 2, 2, 2, 1]  # four-way tie among offers and accept
    q[row(pr, 1, 1)] = [9, 9, 9, 5, 5]  # last round: offers illegal; accept/reject tie
    q[S - 1] = 7  # terminal: nothing legal
    pol = policies.greedy_policy(q, pr)
    assert pol.shape == (2, S, A)
    assert pol[0, 0] == pytest.approx([0, 0.5, 0.5, 0, 0])
    assert pol[0, row(pr, 2, 0)] == pytest.approx([0.25, 0.25, 0.25, 0.25, 0])
    assert pol[0, row(pr, 1, 1)] == pytest.approx([0, 0, 0, 0.5, 0.5])
    assert (pol[:, S - 1] == 0).all()
    assert (pol[0] == pol[1]).all()  # the document's layout: same rows in both roles
    assert (policies.greedy_policy(q[None], pr) == pol).all()
    two = np.stack([q, -q])
    pol2 = policies.greedy_policy(two, pr)
    assert pol2[0, 0] == pytest.approx([0, 0.5, 0.5, 0, 0])
    assert pol2[1, 0] == pytest.approx([1, 0, 0, 0, 0])  # role 1 uses its own rows
    with pytest.raises(ValueError, match="shape"):
        policies.greedy_policy(np.zeros((S + 1, A)), pr)


def test_bad_policies_are_refused():
    pr = Protocol(3, 2)
    s, b = ev.spe(pr)
    illegal = s.copy()
    illegal[0, 0, pr.accept] = 1.0  # accepting at move 0
    with pytest.raises(ValueError, match="legal"):
        ev.values(illegal, b, pr, SELLER)
    with pytest.raises(ValueError, match="shape"):
        ev.values(s[0], b, pr, SELLER)


# --- agreement with the protocol ---------------------------------------------------------------
@pytest.mark.parametrize(
    "P,T,role_aware,seed", [(5, 5, True, 0), (5, 5, False, 1), (3, 3, True, 2)]
)
def test_values_agree_with_monte_carlo_play(P, T, role_aware, seed):
    """Greedy Q-learners (learning off, random tie-breaking) played by the protocol earn
    what the exact evaluator says, within sampling error."""
    rng = np.random.default_rng(seed)
    pr = Protocol(P, T)
    R = 2 if role_aware else 1
    # Small integers: plenty of ties, so the tie-splitting is what is being checked.
    qs = rng.integers(0, 3, (R, qtable.n_rows(pr), pr.n_actions)).astype(float)
    qb = rng.integers(0, 3, (R, qtable.n_rows(pr), pr.n_actions)).astype(float)
    seller = QLearning("seller", protocol=pr, tables=qs, learning=False)
    buyer = QLearning("buyer", protocol=pr, tables=qb, learning=False)
    exact = ev.outcomes(qs, qb, pr)
    n = 40_000
    for f in (SELLER, BUYER):
        rec = negotiate(pr, Side.single(seller, n, 1, P), Side.single(buyer, n, 1, P), f, rng)
        rs, rb = two_agent_rewards(rec)
        for sample, want in ((rs, exact[f, 0]), (rb, exact[f, 1]), (rec.deal, exact[f, 2])):
            se = max(sample.std() / np.sqrt(n), 1e-3)
            assert abs(sample.mean() - want) < 5 * se, (f, sample.mean(), want)


# --- command line ------------------------------------------------------------------------------
run_cli = cli_run.run  # a command in this process (tests/support/cli_run.py)


@pytest.fixture
def table_file(tmp_path):
    pr = Protocol(5, 5)
    s, b = ev.spe(pr)
    path = tmp_path / "spe.npz"
    save_tables(path, TablePair(pr, s, b, {"source": "spe"}))
    return path


def test_evaluate_a_good_file_prints_the_figures(table_file):
    out = run_cli("evaluate", str(table_file))
    assert out.returncode == 0, out.stderr
    assert "NashConv: 0" in out.stdout
    assert "best response" in out.stdout and "Seller wallet 3,000.0" in out.stdout


def test_evaluate_json(table_file, capsys):
    assert main(["evaluate", str(table_file), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["nash_conv"] == 0.0 and data["prices"] == 5
    assert {(r["side"], r["first"]) for r in data["rows"]} == {
        ("seller", "seller"), ("seller", "buyer"), ("buyer", "seller"), ("buyer", "buyer")
    }
    assert data["test"]["deals"] == 1000.0


def test_evaluate_spe_json(capsys):
    assert main(["evaluate", "--spe", "--prices", "4", "--rounds", "3", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["nash_conv"] == 0.0 and (data["prices"], data["rounds"]) == (4, 3)
    # Seller first gets 1, Buyer first gives the Seller 1/4: wallet 500*4 + 500*1.
    assert data["test"]["seller_wallet"] == pytest.approx(2500.0)


def test_evaluate_corrupt_file_is_one_line_exit_2(tmp_path):
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip file")
    out = run_cli("evaluate", str(bad))
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in out.stderr and "bad.npz" in lines[0]


@pytest.mark.parametrize(
    "args",
    [
        ["evaluate", "{missing}"],
        ["evaluate", "{good}", "--prices", "4"],
        ["evaluate"],
        ["evaluate", "--spe", "{good}"],
        ["evaluate", "--spe", "--prices", "1"],
        ["evaluate", "--spe", "--rounds", "0"],
    ],
)
def test_evaluate_bad_input_exit_2(args, table_file, tmp_path, capsys):
    argv = [a.format(missing=tmp_path / "none.npz", good=table_file) for a in args]
    try:
        rc = main(argv)
    except SystemExit as exc:  # argparse rejects --prices 1 / --rounds 0 itself
        rc = exc.code
    assert rc == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1


class TestSubgamePerfection:
    """One-shot deviation gains in every subgame, and the pure subgame-perfect outcomes."""

    @staticmethod
    def _threat_pair():
        """T = 1, P = 5. Seller first offers 3; the Buyer accepts only levels <= 3 (a threat
        to walk away from 4, which it would regret: accepting 4 pays 0.2). Buyer first
        offers 1, the Seller accepts. A Nash equilibrium, not subgame perfect."""
        pr = Protocol(5, 1)
        S, A = qtable.n_rows(pr), pr.n_actions
        accept, reject = pr.accept, pr.reject
        seller, buyer = np.zeros((2, S, A)), np.zeros((2, S, A))
        for pol in (seller, buyer):
            pol[:, 1:S - 1, accept] = 1.0  # final decisions: accept
        seller[:, 0, 2] = 1.0  # opening: level 3
        buyer[:, 0, 0] = 1.0  # opening: level 1
        buyer[1, 4:6, accept] = 0.0  # as second mover, refuse 4 and 5
        buyer[1, 4:6, reject] = 1.0
        return pr, seller, buyer

    def test_a_nash_equilibrium_with_an_empty_threat_is_not_subgame_perfect(self):
        pr, seller, buyer = self._threat_pair()
        assert ev.nash_conv(seller, buyer, pr, policies=True) == pytest.approx(0.0)
        gaps = ev.subgame_gaps(seller, buyer, pr, policies=True)
        # [first][side]: with the Seller first, the Buyer would gain 0.2 by accepting 4
        assert gaps[SELLER, BUYER] == pytest.approx(0.2)
        assert gaps[SELLER, SELLER] == 0 and gaps[BUYER].sum() == 0

    @pytest.mark.parametrize("P,T", [(2, 1), (3, 2), (5, 5), (7, 3)])
    def test_the_spe_strategy_has_no_profitable_deviation_anywhere(self, P, T):
        pr = Protocol(P, T)
        s, b = ev.spe(pr)
        assert not ev.subgame_gaps(s, b, pr, policies=True).any()
        # and its outcome is one of the game's pure subgame-perfect outcomes
        out = ev.outcomes(s, b, pr, policies=True)
        sets = outcome_sets.spe_outcomes(pr)
        for first, name in ((SELLER, "seller"), (BUYER, "buyer")):
            rewards = {(round(o[1], 9), round(o[2], 9)) for o in sets[name]}
            assert (round(out[first, 0], 9), round(out[first, 1], 9)) in rewards

    def test_pure_spe_outcomes_at_the_original_size(self):
        """Seller first: it asks P and the Buyer accepts or rejects (indifferent at 0), so
        (1, 0) and (0.8, 0.2); Buyer first: level 1, (0.2, 0.8) only."""
        sets = outcome_sets.spe_outcomes(Protocol(5, 5))
        assert [o[0] for o in sets["seller"]] == [4, 5]
        assert [o[0] for o in sets["buyer"]] == [1]

    @pytest.mark.parametrize("P,T", [(P, T) for P in (2, 3, 4, 5, 7, 10, 13) for T in (1, 2, 3, 6)])
    def test_pure_spe_outcomes_match_backward_induction_over_sets(self, P, T):
        """The O(T P^2) form against the definition read literally: in every subgame, a
        child's outcome is kept when the mover weakly prefers it to the worst every other
        child can be made to give it."""
        pr = Protocol(P, T)
        for f, name in ((SELLER, "seller"), (BUYER, "buyer")):
            levels = sorted({level for level, _ in literal_spe_outcomes(pr, f)})
            assert [o[0] for o in outcome_sets.spe_outcomes(pr)[name]] == levels

    def test_batched_gaps_match_one_by_one(self, rng):
        pr = Protocol(4, 3)
        tables = rng.integers(0, 3, (5, 2, 2, qtable.n_rows(pr), pr.n_actions)).astype(float)
        batch = ev.subgame_gaps(tables[:, 0], tables[:, 1], pr)
        for i in range(5):
            np.testing.assert_allclose(batch[i], ev.subgame_gaps(*tables[i], pr))
        # a gap is never smaller than the gain NashConv sees on the path
        nc = ev.nash_conv(tables[:, 0], tables[:, 1], pr)
        assert (batch.max(axis=(1, 2)) >= nc / 2 - 1e-12).all()


def test_evaluate_reports_subgame_perfection_and_the_spe_outcomes(capsys):
    assert main(["evaluate", "--spe", "--prices", "5", "--rounds", "5", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["subgame_perfect"] is True and out["subgame_gap"] == {"seller": 0, "buyer": 0}
    assert [(o["level"], o["offer"], o["seller"]) for o in out["spe_outcomes"][
        "seller_first"]] == [(4, None, 0.8), (5, None, 1.0)]
    assert out["outcome"]["seller_first"] == [1.0, 0.0]  # indifferent responders accept
    assert "indifferent responders accept" in out["layout"]


@pytest.mark.parametrize("P, T", [(3, 2), (5, 5), (6, 3)])
def test_policy_of_the_spe_strategy_is_the_spe(P, T):
    """A strategy that decides from what it observes now, turned into the evaluator's policy."""
    pr = Protocol(P, T)
    for side in (SELLER, BUYER):
        got = policies.policy_of(strategies.make("spe", side, 1, pr), pr)
        np.testing.assert_array_equal(got, ev.spe(pr)[side])


def test_policy_of_the_hardliner_by_hand():
    """P = 3, T = 2, Seller floor 2: it always asks 3; before the final decision it accepts only
    3; at the final decision (second mover, round 1) it takes 2 or 3 and rejects 1."""
    pr = Protocol(3, 2)
    pol = policies.policy_of(strategies.make("hardliner", SELLER, 1, pr), pr, lo=2, hi=3)
    acts = pol.argmax(axis=-1)
    offer3, accept, reject = 2, 3, 4
    assert acts[0, 0] == offer3  # opens at 3
    assert list(acts[:, qtable.row(pr, 3, 0)]) == [accept, accept]
    assert list(acts[:, qtable.row(pr, 2, 0)]) == [offer3, offer3]
    assert [acts[1, qtable.row(pr, p, 1)] for p in (1, 2, 3)] == [reject, accept, accept]
    assert (pol[:, -1] == 0).all()  # terminal row
    policies.check_policy(pol, pr, "hardliner")


# --- time costs: discount factors and the theory of bargaining ----------------------------------
@pytest.mark.parametrize("d", [0.0, -0.5, 1.5, float("nan"), float("inf"), "0.9"])
def test_a_discount_outside_0_1_is_refused(d):
    with pytest.raises(ValueError, match="seller_discount must be a number in \\(0, 1\\]"):
        Protocol(5, 5, seller_discount=d)


def test_discount_factors_of_1_are_the_document_s_game():
    assert Protocol(5, 5, 1.0, 1.0) == Protocol(5, 5) and not Protocol(5, 5).discounted
    s, b = Protocol(5, 5, 0.9).deal_rewards(np.array([5]), 3)  # on the offer of move 2
    assert (s[0], b[0]) == pytest.approx((0.81, 0.0))
    assert Protocol(5, 5, 0.9, 0.5).undiscounted() == Protocol(5, 5)


@pytest.mark.parametrize("ds,db", [(0.9, 0.9), (0.95, 0.8), (0.5, 0.99), (0.7, 1.0)])
@pytest.mark.parametrize("T", [1, 2, 5, 10])
def test_the_grid_spe_approaches_the_finite_horizon_split(ds, db, T):
    """Backward induction on a fine grid lands within a few levels of the continuous split of
    the same finite game (Ståhl): the grid's rounding is all that separates them."""
    P = 400
    pr = Protocol(P, T, ds, db)
    s, b = ev.spe(pr)
    out = ev.outcomes(s, b, pr, policies=True)
    assert ev.nash_conv(s, b, pr, policies=True) == 0.0
    assert not ev.subgame_gaps(s, b, pr, policies=True).any()
    for f in (SELLER, BUYER):
        assert out[f, 2] == 1.0  # a deal on the first offer: delay only costs
        split = theory.horizon_split(ds, db, 2 * T - 1, f)
        assert out[f, 0] == pytest.approx(split[0], abs=3 / P)


@pytest.mark.parametrize("ds,db", [(0.9, 0.9), (0.95, 0.8), (0.5, 0.99), (0.6, 0.3)])
def test_the_finite_horizon_split_converges_to_rubinstein_s(ds, db):
    for f in (SELLER, BUYER):
        limit = theory.rubinstein_split(ds, db, f)
        assert sum(limit) == pytest.approx(1.0)
        assert theory.horizon_split(ds, db, 2001, f) == pytest.approx(limit, abs=1e-9)
        assert theory.horizon_split(ds, db, 2000, f) == pytest.approx(limit, abs=1e-9)
    # equal factors: the first proposer gets 1 / (1 + d), more the more impatient both are
    assert theory.rubinstein_split(0.9, 0.9, "buyer")[1] == pytest.approx(1 / 1.9)


def test_without_discounting_the_last_proposer_takes_everything():
    assert theory.horizon_split(1.0, 1.0, 9, SELLER) == (1.0, 0.0)  # 9 offers: the Seller's last
    assert theory.horizon_split(1.0, 1.0, 8, SELLER) == (0.0, 1.0)
    with pytest.raises(ValueError, match="below 1"):
        theory.rubinstein_split(1.0, 1.0)


def test_the_wallet_counts_levels_and_the_rewards_are_discounted():
    rng = np.random.default_rng(7)
    pr = Protocol(4, 3, 0.5, 0.8)
    s, b = random_policy(rng, pr), random_policy(rng, pr)
    plain = ev.exact_test(s, b, pr.undiscounted(), 100, policies=True)
    costly = ev.exact_test(s, b, pr, 100, policies=True)
    assert costly["seller_wallet"] == plain["seller_wallet"]  # the levels played
    assert costly["deals"] == plain["deals"]
    assert costly["seller_reward"] < plain["seller_reward"]  # what they are worth
    assert costly["buyer_reward"] < plain["buyer_reward"]


def test_evaluate_spe_with_time_costs_prints_theory_beside_the_grid(capsys):
    from market.cli import main

    assert main(["evaluate", "--spe", "--prices", "200", "--rounds", "4", "--seller-discount",
                 "0.9", "--buyer-discount", "0.8", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["discount"] == {"seller": 0.9, "buyer": 0.8} and out["nash_conv"] == 0.0
    for first in ("seller", "buyer"):  # the played outcome is one of the game's SPE outcomes
        assert out["outcome"][f"{first}_first"] in [[o["seller"], o["buyer"]] for o in out[
            "spe_outcomes"][f"{first}_first"]]
    for first in ("seller", "buyer"):
        said = out["theory"][f"{first}_first"]
        assert out["outcome"][f"{first}_first"][0] == pytest.approx(
            said["finite_horizon"][0], abs=2 / 200)
        assert said["rubinstein"] == pytest.approx(
            list(theory.rubinstein_split(0.9, 0.8, first)))
    assert main(["evaluate", "--spe", "--discount", "0.95"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "discount per offer: Seller 0.95, Buyer 0.95" in text and "Rubinstein" in text


def test_evaluate_refuses_a_discount_for_tables_trained_without_one(table_file):
    res = run_cli("evaluate", str(table_file), "--discount", "0.9")
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1
    assert "trained with discount Seller 1, Buyer 1, not Seller 0.9, Buyer 0.9" in res.stderr


@pytest.mark.parametrize("P,T", [(2, 1), (3, 2), (4, 3), (5, 3), (6, 2), (6, 3)])
@pytest.mark.parametrize("ds,db,more", [(0.9, 0.9, ()), (0.5, 0.8, ()), (1.0, 0.7, ()),
                                        (0.8, 0.8, ()), (0.6, 0.6, ()), (1, 1, (0.2,)),
                                        (1, 1, (0.0, 0.05, 0.1)), (0.9, 1, (0.1, 0.0, 0.04))])
def test_pure_spe_outcomes_with_time_costs_match_the_literal_definition(P, T, ds, db, more):
    """With time costs an outcome is a level and the move it was accepted at; the sets read
    literally over such pairs, against the fast form. The equilibrium ``spe`` plays is one.
    Factors that are multiples of 1/P make real ties that floating point breaks in the last
    bit (P=6, d=0.8: 4/6 * 0.8 against 5/6 * 0.64): both forms, like ``spe``, call them ties."""
    pr = Protocol(P, T, ds, db, *more)  # breakdown risk and costs too
    for f, name in ((SELLER, "seller"), (BUYER, "buyer")):
        want = sorted(literal_spe_outcomes(pr, f), key=lambda o: (o[1] if o[0] else 0, o[0]))
        got = outcome_sets.spe_outcomes(pr)[name]
        assert [o[0] for o in got] == [o[0] for o in want]
        assert [o[1:] for o in got] == pytest.approx(  # the deal's rewards, when it comes
            [(literal_value(pr, o, SELLER, o[1]), literal_value(pr, o, BUYER, o[1]))
             for o in want])
        played = ev.outcomes(*ev.spe(pr), pr, policies=True)[f]
        assert any(o[1:] == pytest.approx(tuple(played[:2])) for o in got)


def test_outcome_sets_with_time_costs_are_left_out_where_they_would_be_slow(capsys):
    from market.cli import main
    from market.game.rules import Protocol as Game

    assert outcome_sets.outcome_sets_affordable(Game(1000, 49))  # no time costs: O(T P^2)
    assert not outcome_sets.outcome_sets_affordable(Game(1000, 12, 0.9, 0.9))
    assert outcome_sets.outcome_sets_affordable(Game(100, 70, 0.9, 0.9))  # 4 P^2 T^2 just under 2e8
    assert not outcome_sets.outcome_sets_affordable(Game(100, 71, 0.9, 0.9))
    assert main(["evaluate", "--spe", "--prices", "100", "--rounds", "71", "--discount",
                 "0.95"]) == 0
    text = " ".join(capsys.readouterr().out.split())  # however the console lays it out
    assert "not computed at this size with time costs" in text


def test_deals_name_the_level_and_move_where_sure_play_ends_and_minus_1_for_a_lottery():
    from market.game.evaluation import deals, spe
    from market.game.outcome_sets import spe_outcomes

    for P, T, d in ((20, 5, 0.9), (6, 3, 0.5), (5, 2, 1.0)):
        protocol = Protocol(P, T, d, d)
        s, b = spe(protocol)
        for first, who in ((SELLER, "seller"), (BUYER, "buyer")):
            level, move = deals(s, b, protocol, first, policies=True)
            assert (int(level[0]), int(move[0])) in {(lv, 1) for lv, _, _ in
                                                     spe_outcomes(protocol)[who]} or d == 1.0
            assert move[0] == 1  # the SPE agrees at once
    protocol = Protocol(4, 2)
    s, b = spe(protocol)
    coin = b.copy()
    row = 1 + int(np.argmax(s[0, 0, :4]))  # the Buyer's row after the Seller's opening offer
    coin[1, row] = 0.0
    coin[1, row, 4:6] = 0.5  # accept or reject with a coin
    level, move = deals(s, coin, protocol, SELLER, policies=True)
    assert level[0] == -1 and move[0] == -1


def test_with_time_costs_each_spe_outcome_says_its_level_and_offer_once():
    """Without the offer one pair repeats for every offer it can be made on (as
    ``evaluate --json`` printed it); with it every outcome is one (level, offer) and its
    rewards are the level's discounted that many offers."""
    pr = Protocol(3, 5, 1.0, 0.7)
    found = outcome_sets.spe_outcome_offers(pr)
    for side, outcomes in found.items():
        keys = [(lv, mv) for lv, mv, _, _ in outcomes]
        assert len(keys) == len(set(keys)) > 0, side
        for lv, mv, s, b in outcomes:
            assert mv is not None and s == pytest.approx(lv / 3)
            assert b == pytest.approx((1 - lv / 3) * 0.7 ** mv)  # mv: the offer, from 0
    assert outcome_sets.spe_outcomes(pr)["seller"] == [(lv, s, b)
                                                      for lv, _, s, b in found["seller"]]
    plain = outcome_sets.spe_outcome_offers(Protocol(5, 5))
    assert all(mv is None for side in plain.values() for _, mv, _, _ in side)


# --- breakdown risk and costs per offer ---------------------------------------------------------
@pytest.mark.parametrize("q", [0.05, 0.3])
def test_a_breakdown_risk_is_worth_what_a_common_discount_of_1_minus_q_is(q):
    """A deal on the k-th offer is reached past k counter-offers, each survived with
    probability 1 - Q: in expectation, what discounting both sides by 1 - Q gives. The
    deal probability is where the two games differ."""
    rng = np.random.default_rng(7)
    risky, discounted = Protocol(4, 3, breakdown=q), Protocol(4, 3, 1 - q, 1 - q)
    for _ in range(5):
        ps, pb = random_policy(rng, risky), random_policy(rng, risky)
        a = ev.outcomes(ps, pb, risky, policies=True)
        b = ev.outcomes(ps, pb, discounted, policies=True)
        np.testing.assert_allclose(a[:, :2], b[:, :2], atol=1e-12)
        assert (a[:, 2] < b[:, 2]).all()  # talks that broke down made no deal
    assert ev.nash_conv(ps, pb, risky, policies=True) == pytest.approx(
        ev.nash_conv(ps, pb, discounted, policies=True))


def test_costs_per_offer_come_off_a_deal_and_not_off_a_failure():
    """Both open at their best level and reject what they are offered until the last round,
    where the Buyer accepts: a deal on offer 2T - 2 = 4 (k = 4), worth the share less 4 costs;
    a pair that rejects at the end gets 0 whatever the costs."""
    pr = Protocol(4, 3, seller_cost=0.05, buyer_cost=0.1)
    s, b = ev.spe(pr)
    level, move = ev.deals(s, b, pr, SELLER, policies=True)
    rewards = ev.outcomes(s, b, pr, policies=True)[SELLER]
    want = pr.deal_rewards(level[0], move[0])
    assert tuple(rewards[:2]) == pytest.approx((float(want[0]), float(want[1])))
    k = move[0] - 1
    assert float(want[0]) == pytest.approx(level[0] / 4 - k * 0.05)
    none = pr.deal_rewards(np.array([3]), np.array([5]))
    assert none[1][0] == pytest.approx(0.25 - 4 * 0.1)  # a deal can be worth less than none


def test_theory_under_breakdown_risk_and_fixed_costs():
    q = 0.1
    assert theory.rubinstein_split(1.0, 1.0, SELLER, q) == pytest.approx(
        (1 / (2 - q), 1 - 1 / (2 - q)))
    assert theory.rubinstein_split(0.9, 0.8, BUYER, q) == pytest.approx(
        theory.rubinstein_split(0.9 * (1 - q), 0.8 * (1 - q), BUYER))
    # the finite game tends to the limit as offers grow
    assert theory.horizon_split(1, 1, 401, SELLER, q) == pytest.approx(
        theory.rubinstein_split(1, 1, SELLER, q), abs=1e-9)
    assert theory.cost_split(0.01, 0.05, SELLER) == (1.0, 1.0)  # the cheaper first takes all
    assert theory.cost_split(0.05, 0.01, SELLER) == (0.01, 0.01)  # the dearer first: c_other
    assert theory.cost_split(0.02, 0.02, BUYER) == (0.02, 1.0)  # equal: a range
    with pytest.raises(ValueError):
        theory.cost_split(0, 0)


@pytest.mark.parametrize("q", [0.05, 0.2, 0.5])
def test_the_grid_equilibrium_under_breakdown_risk_is_subgame_perfect_and_splits_as_discounting(q):
    """On the grid the first proposer's share is the discounted game's (1 - Q each), not
    theory's: with Q = 0.05 and P = 20 a responder's continuation is worth less than one
    level, so the grid's equilibrium gives the first proposer 0.95 where the finite game
    without a grid gives 0.80 (as discounting by 0.95 does; the report says so)."""
    P, T = 20, 6
    pr = Protocol(P, T, breakdown=q)
    s, b = ev.spe(pr)
    assert not ev.subgame_gaps(s, b, pr, policies=True).any()
    played = ev.outcomes(s, b, pr, policies=True)
    same = Protocol(P, T, 1 - q, 1 - q)
    np.testing.assert_allclose(played[:, :2], ev.outcomes(*ev.spe(same), same,
                                                          policies=True)[:, :2], atol=1e-12)


def test_evaluate_prints_the_pressure_and_its_theory(capsys):
    from market.cli import main

    assert main(["evaluate", "--spe", "--prices", "20", "--rounds", "4", "--breakdown",
                 "0.1", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["breakdown"] == 0.1 and "cost" not in got
    assert got["theory"]["seller_first"]["rubinstein"] == pytest.approx([1 / 1.9, 0.9 / 1.9])
    assert main(["evaluate", "--spe", "--prices", "20", "--rounds", "4", "--seller-cost",
                 "0.01", "--buyer-cost", "0.03"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "cost per offer: Seller 0.01, Buyer 0.03" in text
    assert "the first proposer gets 1 in Rubinstein's infinite game with fixed costs" in text


#: what the game's time-pressure flags allow, as their messages say it
IN_RANGE = "must be a number in [0, 1) (0, or at least 1e-09 from it)"


@pytest.mark.parametrize("flag,value,words", [
    ("--breakdown", "1", f"--breakdown {IN_RANGE} (got '1')"),
    ("--breakdown", "nan", f"--breakdown {IN_RANGE} (got 'nan')"),
    ("--seller-cost", "-0.1", f"--seller-cost {IN_RANGE} (got '-0.1')"),
    ("--buyer-cost", "inf", f"--buyer-cost {IN_RANGE} (got 'inf')"),
])
def test_bad_pressure_is_one_line_and_exit_2(flag, value, words):
    res = run_cli("evaluate", "--spe", flag, value)
    assert res.returncode == 2 and res.stderr.strip().splitlines() == [
        f"run.py evaluate: error: argument {flag}: {words}"]


def test_tables_are_refused_under_another_breakdown_risk(table_file):
    res = run_cli("evaluate", str(table_file), "--breakdown", "0.2")
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1
    assert "trained with breakdown 0, not 0.2" in res.stderr


def test_train_refuses_to_go_on_from_tables_of_another_game(table_file):
    res = run_cli("train", "--load", str(table_file), "--cycles", "0", "--seller-cost", "0.1")
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1
    assert "trained with seller_cost 0, not the requested 0.1" in res.stderr


def test_a_discount_near_one_is_printed_as_itself_and_its_outcomes_apart(capsys):
    """0.99999999 printed as "1" read as no discount, and outcomes a few ulps apart as one
    repeated pair: each number gets the digits that tell it from a whole number."""
    from market.cli import main

    assert main(["evaluate", "--spe", "--discount", "0.99999999"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "discount per offer: Seller 0.99999999, Buyer 0.99999999" in out
    assert "(1, 0) at level 5 on offer 0, (0.99999999, 0) at level 5 on offer 1" in out
