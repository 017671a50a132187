"""Which strategies survive the tournament: evolutionary dynamics on its payoff matrix.

The tournament's ``mean_payoff`` matrix ``A`` (row strategy's mean payoff
against the column strategy, over both roles) is a symmetric game; a
population of strategies evolves on it by one of four standard dynamics:

- ``replicator``: the continuous-time replicator dynamics ``x_i' = x_i
  ((A x)_i - x . A x)`` (Taylor and Jonker 1978), integrated accurately
  (scipy's ``solve_ivp``, RK45 with relative tolerance 1e-8 and absolute
  1e-10; OpenSpiel's ``egt.dynamics.replicator`` is the same field);
- ``ecological``: Axelrod's ecological tournament (Axelrod 1984; the
  Axelrod library's ``Ecosystem``): each generation a strategy's share grows
  in proportion to its mean payoff against the current population,
  ``x_i <- x_i (A x)_i / sum_k x_k (A x)_k``;
- ``moran``: the fixation probability of one mutant of strategy ``r`` in a
  population of ``N`` playing ``s`` under the birth-death Moran process with
  fitness ``exp(w * payoff)`` (the process: Nowak et al. 2004; the exponential
  mapping: Traulsen, Shoresh and Nowak 2008),
  ``rho = 1 / (1 + sum_{m=1}^{N-1} prod_{k=1}^{m} exp(-w (f_r(k) - f_s(k))))``,
  where ``f_r(k) = ((k-1) a_rr + (N-k) a_rs) / (N-1)`` and ``f_s(k) =
  (k a_sr + (N-k-1) a_ss) / (N-1)`` with ``k`` mutants; neutral drift gives
  ``1 / N``;
- ``alpharank``: alpha-Rank (Omidshafiei et al. 2019), the stationary
  distribution of the chain over monomorphic populations whose transitions
  are those fixation probabilities (``w`` is its ``alpha``), each mutant
  strategy equally likely: the variant with the *non-local* selection model
  (a mutant's and a resident's payoffs are against the whole population, as
  in the Moran process above; OpenSpiel's ``alpharank.compute`` with
  ``use_local_selection_model=False``). OpenSpiel's default, the local model
  (payoffs against the other type alone), gives other masses: up to about
  0.09 apart on this project's tournaments.

The Moran process with exponential fitness and alpha-Rank's Fermi process
have the same fixation probabilities, so the tests check both against
OpenSpiel's ``egt`` package, and the replicator field against its
``dynamics.replicator``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

#: the dynamics a tournament can run
DYNAMICS = ("replicator", "ecological", "moran", "alpharank")


@dataclass
class Trajectory:
    """Shares over time (rows: generations or integration steps; columns: strategies), the
    point reached and whether it is at rest (the largest change of a step below ``tol``)."""

    shares: pd.DataFrame
    rest: pd.Series
    at_rest: bool


def replicator_field(A: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The replicator dynamics' time derivative at ``x``."""
    fitness = A @ x
    return x * (fitness - x @ fitness)


def replicator(A: np.ndarray, names: list[str], start: np.ndarray | None = None,
               dt: float = 0.05, steps: int = 20_000, tol: float = 1e-10,
               every: int = 20) -> Trajectory:
    """The replicator dynamics from ``start`` (default uniform), integrated accurately
    (:data:`ODE_TOLERANCES`) over ``steps * dt`` time units; the shares every ``every * dt``
    time units; stops early at rest, when the field's largest component times ``dt`` is
    below ``tol`` there."""
    from scipy.integrate import solve_ivp  # half a second: only when a trajectory is asked

    x = _start(start, len(names))
    rows, times, at_rest = [x.copy()], [0.0], False
    chunk, horizon, t = every * dt, steps * dt, 0.0
    while t < horizon - 1e-9:
        span = min(chunk, horizon - t)
        sol = solve_ivp(lambda _, y: replicator_field(A, y), (t, t + span), x,
                        **ODE_TOLERANCES)
        x = np.clip(sol.y[:, -1], 0.0, None)
        x /= x.sum()
        t += span
        rows.append(x.copy())
        times.append(t)
        at_rest = bool(np.abs(dt * replicator_field(A, x)).max() < tol)
        if at_rest:
            break
    return _trajectory(rows, names, at_rest, times, "time")


#: the replicator ODE's integration: RK45 with these tolerances (its error on the shares is
#: below about 1e-7, where Euler steps of 0.05 were up to 0.012 off mid-path)
ODE_TOLERANCES = {"method": "RK45", "rtol": 1e-8, "atol": 1e-10}


def ecological(A: np.ndarray, names: list[str], start: np.ndarray | None = None,
               generations: int = 1_000, tol: float = 1e-12) -> Trajectory:
    """Axelrod's ecological tournament from ``start`` (default uniform); payoffs must be
    positive (the tournament's rewards are in [0, 1], a strategy earning nothing dies)."""
    if (A < 0).any():
        raise ValueError("the ecological dynamics need payoffs >= 0")
    x = _start(start, len(names))
    rows, at_rest = [x.copy()], False
    for _ in range(int(generations)):
        fitness = x * (A @ x)
        total = fitness.sum()
        new = fitness / total if total > 0 else x
        rows.append(new)
        change = np.abs(new - x).max()
        x = new
        if change < tol:
            at_rest = True
            break
    return _trajectory(rows, names, at_rest, list(range(len(rows))), "generation")


def fixation(A: np.ndarray, population: int, selection: float) -> np.ndarray:
    """``rho[r, s]``: the probability that one mutant playing ``r`` takes over a population of
    ``population`` playing ``s`` (the Moran process with exponential fitness); the diagonal
    is 0."""
    n = len(A)
    N = int(population)
    if N < 2:
        raise ValueError(f"the population must hold at least 2 (got {N})")
    k = np.arange(1, N)  # mutants present
    rho = np.zeros((n, n))
    for r in range(n):
        for s in range(n):
            if r == s:
                continue
            f_r = ((k - 1) * A[r, r] + (N - k) * A[r, s]) / (N - 1)
            f_s = (k * A[s, r] + (N - k - 1) * A[s, s]) / (N - 1)
            # partial sums of log ratios, then sum of exp in a stable way
            logs = np.cumsum(-selection * (f_r - f_s))
            top = max(0.0, float(logs.max()))
            rho[r, s] = np.exp(-top) / (np.exp(-top) + np.exp(logs - top).sum())
    return rho


def alpharank(A: np.ndarray, population: int, selection: float) -> tuple[np.ndarray, np.ndarray]:
    """alpha-Rank's stationary distribution over the strategies, and its transition matrix
    (from monomorphic population ``s`` to ``r``: a mutant ``r``, drawn uniformly among the
    others, that fixes)."""
    n = len(A)
    if n == 1:
        return np.ones(1), np.ones((1, 1))
    rho = fixation(A, population, selection)
    T = rho.T / (n - 1)  # T[s, r]: from s to r
    np.fill_diagonal(T, 0.0)
    np.fill_diagonal(T, 1.0 - T.sum(axis=1))
    w, v = np.linalg.eig(T.T)
    pi = np.real(v[:, np.argmin(np.abs(w - 1.0))])
    pi = np.abs(pi) / np.abs(pi).sum()
    return pi, T


def _start(start: np.ndarray | None, n: int) -> np.ndarray:
    if start is None:
        return np.full(n, 1.0 / n)
    x = np.asarray(start, dtype=float)
    if x.shape != (n,) or (x < 0).any() or not np.isfinite(x).all() or x.sum() <= 0:
        raise ValueError(f"the start must be {n} shares >= 0, not all 0")
    return x / x.sum()


def _trajectory(rows: list[np.ndarray], names: list[str], at_rest: bool, times: list[float],
                index: str) -> Trajectory:
    frame = pd.DataFrame(np.array(rows), columns=names)
    frame.index = pd.Index(times, name=index)
    return Trajectory(frame, frame.iloc[-1], at_rest)


@dataclass
class Evolution:
    """What the dynamics asked for make of a tournament's mean payoffs."""

    strategies: list[str]
    population: int
    selection: float
    trajectories: dict[str, Trajectory]
    fixation: pd.DataFrame | None = None
    alpharank: pd.Series | None = None

    def table(self) -> pd.DataFrame:
        """One row per strategy: where each trajectory ended, alpha-Rank's mass, and the
        fixation probability of one mutant of it against the others, times N (1: neutral)."""
        out = pd.DataFrame(index=pd.Index(self.strategies, name="strategy"))
        for name, traj in self.trajectories.items():
            out[f"{name} share"] = traj.rest
        if self.alpharank is not None:
            out["alpha-rank mass"] = self.alpharank
        if self.fixation is not None and len(self.strategies) > 1:
            rho = self.fixation.to_numpy()
            n = len(self.strategies)
            out["moran N*rho (mean)"] = rho.sum(axis=1) / (n - 1) * self.population
        return out

    def long_frame(self) -> pd.DataFrame:
        """The trajectories, long: dynamic, time, strategy, share."""
        parts = []
        for name, traj in self.trajectories.items():
            wide = traj.shares.copy()
            wide.index.name = "time"
            long = wide.reset_index().melt(id_vars="time", var_name="strategy",
                                           value_name="share")
            parts.append(long.assign(dynamic=name)[["dynamic", "time", "strategy", "share"]])
        return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(
            columns=["dynamic", "time", "strategy", "share"])

    def as_dict(self) -> dict[str, object]:
        return {
            "population": self.population, "selection": self.selection,
            "trajectories": {name: {"at_rest": t.at_rest, "end": float(t.shares.index[-1]),
                                    "rest": {str(k): float(v) for k, v in t.rest.items()}}
                             for name, t in self.trajectories.items()},
            **({"fixation": {str(r): {str(c): float(self.fixation.loc[r, c])
                                      for c in self.fixation.columns}
                             for r in self.fixation.index}}
               if self.fixation is not None else {}),
            **({"alpharank": {str(k): float(v) for k, v in self.alpharank.items()}}
               if self.alpharank is not None else {}),
        }


def check_start(start: dict[str, float] | None, names: list[str]) -> None:
    """Refuse a start that names a strategy the dynamics do not have (those that play both
    sides): the tournament checks it with this before playing a pairing."""
    missing = [k for k in start or {} if k not in names]
    if missing:
        raise ValueError(f"--start names {missing[0]!r}, which is not among the strategies "
                         f"that play both sides ({', '.join(names)})")


def evolve(mean_payoff: pd.DataFrame, which: list[str], population: int = 50,
           selection: float = 10.0, start: dict[str, float] | None = None,
           generations: int = 1_000) -> Evolution:
    """The dynamics ``which`` on a tournament's ``mean_payoff`` (strategies that play both
    sides); ``start``: shares to start the trajectories from (default uniform)."""
    unknown = [w for w in which if w not in DYNAMICS]
    if unknown:
        raise ValueError(f"dynamics must be among {', '.join(DYNAMICS)} (got {unknown[0]!r})")
    names = [str(c) for c in mean_payoff.columns]
    A = mean_payoff.to_numpy(dtype=float)
    if not names or np.isnan(A).any():
        raise ValueError("the dynamics need the mean payoff of every strategy against every "
                         "other (strategies that play both sides)")
    check_start(start, names)
    x0 = None if not start else np.array([float(start.get(n, 0.0)) for n in names])
    trajectories = {}
    if "replicator" in which:
        trajectories["replicator"] = replicator(A, names, x0)
    if "ecological" in which:
        trajectories["ecological"] = ecological(A, names, x0, generations)
    rho = pi = None
    if "moran" in which:
        rho = pd.DataFrame(fixation(A, population, selection), index=names, columns=names)
    if "alpharank" in which:
        pi = pd.Series(alpharank(A, population, selection)[0], index=names)
    return Evolution(names, population, selection, trajectories, rho, pi)
