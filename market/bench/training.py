"""Training throughput: the array trainer next to a plain pure-Python one, timed in one run.

The reference below is the document's algorithm written the way the
document writes it: lists of lists for the Q-tables, one episode at a time,
one move at a time, the trainee updating online after each trainer reply,
the trainer greedy on a frozen snapshot, roles swapping every cycle with the
document's snapshot rule and the first mover alternating every episode. It
plays under the protocol as specified (legal actions only), like the array
trainer, so both do the same work per episode.

The array trainer (:mod:`market.game.training`) advances many independent seeds
in lockstep; its throughput counts episodes summed over seeds.
"""

from __future__ import annotations

import copy
import math
import random

from market.bench import BenchRow, at_least, median_time

TITLE = "training throughput (the document's trainer, P=5 T=5)"


def reference_train(
    cycles: int = 50,
    episodes: int = 100,
    prices: int = 5,
    rounds: int = 5,
    seed: int = 0,
    train_both: bool = True,
    trainee_first: int = 0,
    lr: float = 0.1,
    gamma: float = 0.99,
) -> tuple[list[list[float]], list[list[float]]]:
    """The document's trainer in plain Python; returns the (Seller, Buyer) tables."""
    rnd = random.Random(seed)
    P, T = prices, rounds
    S, A = P * T + 2, P + 2
    accept, d = P, S - 1
    q = [[[0.0] * A for _ in range(S)] for _ in range(2)]

    def legal(state: int) -> range:
        if state == 0:
            return range(P)  # must offer
        if state > (T - 1) * P:
            return range(P, P + 2)  # last round: accept or reject
        return range(A)

    def greedy(table: list[list[float]], state: int) -> int:
        best, acts = -math.inf, []
        row = table[state]
        for a in legal(state):
            v = row[a]
            if v > best:
                best, acts = v, [a]
            elif v == best:
                acts.append(a)
        return rnd.choice(acts)

    trainee, trainer = trainee_first, 1 - trainee_first
    trainee_snap, trainer_snap = copy.deepcopy(q[trainee]), copy.deepcopy(q[trainer])
    for _cycle in range(cycles):
        table = q[trainee]
        for e in range(episodes):
            eps = 0.1 + 0.9 * math.exp(-0.001 * e)
            offer, m = 0, 0  # last offer on the table, move index
            s = a = -1  # trainee's pending (state, action)
            if e % 2 == 0:  # trainer first
                offer, m = greedy(trainer_snap, 0) + 1, 1
            while True:
                state = 0 if m == 0 else 1 + ((m - 1) // 2) * P + offer - 1
                if s >= 0:  # trainer replied with an offer: update towards the new state
                    nxt = max(table[state][x] for x in legal(state))
                    table[s][a] = (1 - lr) * table[s][a] + lr * gamma * nxt
                a = rnd.choice(legal(state)) if rnd.random() < eps else greedy(table, state)
                s = state
                if a >= accept:  # trainee ends the negotiation
                    deal = offer if a == accept else 0
                    break
                offer, m = a + 1, m + 1
                reply_state = 1 + ((m - 1) // 2) * P + offer - 1
                b = greedy(trainer_snap, reply_state)
                if b >= accept:
                    deal = offer if b == accept else 0
                    break
                offer, m = b + 1, m + 1
            reward = 0.0
            if deal:
                reward = deal / P if trainee == 0 else 1.0 - deal / P
            table[s][a] = (1 - lr) * table[s][a] + lr * (reward + gamma * max(q[trainee][d]))
        if train_both:
            new_trainee_snap = copy.deepcopy(q[trainer])
            trainer_snap, trainee_snap = trainee_snap, new_trainee_snap
            trainee, trainer = trainer, trainee
    return q[0], q[1]


def run(repeats: int, quick: bool) -> list[BenchRow]:
    from market.game.training import preset, train

    ref_cycles = 10 if quick else 50  # the document's 50 x 100 episodes
    cycles = 2 if quick else 10  # each cycle is 100 episodes for every seed
    seeds = 1024 if quick else 8192  # throughput still grows up to ~8k seeds (memory-bound after)
    ref_episodes = ref_cycles * 100
    cfg = preset("seed", cycles=cycles, seeds=seeds, test_episodes=0)
    one = cfg.replace(seeds=1)

    # Interleaved, so that load from other work on a shared machine hits the
    # reference and the array trainer alike; train() times its own training
    # loop (no NashConv, no test).
    ref_times: list[float] = []
    arr_times: list[float] = []
    one_times: list[float] = []
    for _ in range(repeats):
        ref_times.append(median_time(lambda: reference_train(cycles=ref_cycles), 1)[0])
        arr_times.append(train(cfg, nash_conv=False, exact=False).train_seconds)
        one_times.append(train(one, nash_conv=False, exact=False).train_seconds)
    ref_t = sorted(ref_times)[len(ref_times) // 2]
    arr_t = sorted(arr_times)[len(arr_times) // 2]
    one_t = sorted(one_times)[len(one_times) // 2]
    ref_rate = ref_episodes / ref_t
    arr_rate = cfg.total_episodes * seeds / arr_t
    one_rate = one.total_episodes / one_t
    return [
        BenchRow("training", "reference: pure Python, 1 seed", ref_rate, "episodes/s",
                 note=f"{ref_episodes:,} episodes per run"),
        BenchRow("training", "arrays, 1 seed", one_rate, "episodes/s",
                 note="per-episode numpy overhead dominates"),
        BenchRow("training", f"arrays, {seeds} seeds in lockstep", arr_rate, "episodes/s",
                 note=f"{cfg.total_episodes:,} episodes x {seeds} seeds per run"),
        BenchRow("training", "speed-up over the reference", arr_rate / ref_rate, "x",
                 target=at_least(10, ">= 10x"), note=f"{seeds} seeds vs pure Python, same run"),
    ]
