"""Evolutionary dynamics on a tournament's payoff matrix: textbook games, OpenSpiel's egt,
and the tournament command's outputs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from market.runs import dynamics as d

ROOT = Path(__file__).resolve().parents[2]


def _open_spiel():
    """OpenSpiel's egt package: required in CI (the dev extra installs it), else skipped."""
    if os.environ.get("CI"):
        from open_spiel.python.egt import alpharank, dynamics
        return alpharank, dynamics
    egt = pytest.importorskip("open_spiel.python.egt",
                              reason="OpenSpiel is not installed (pip install open_spiel)")
    from open_spiel.python.egt import alpharank, dynamics
    del egt
    return alpharank, dynamics


# --- textbook games ----------------------------------------------------------------------------
def test_hawk_dove_settles_at_the_mixed_equilibrium_v_over_c():
    V, C = 2.0, 3.0
    A = np.array([[(V - C) / 2, V], [0.0, V / 2]]) + 1  # shifted: the same dynamics
    traj = d.replicator(A, ["hawk", "dove"], np.array([0.1, 0.9]))
    assert traj.at_rest and abs(traj.rest["hawk"] - V / C) < 1e-4


def test_a_dominant_strategy_takes_over_under_every_dynamic():
    A = np.array([[1.0, 3.0], [0.5, 2.0]])  # row 0 beats row 1 against either (a dilemma)
    names = ["defect", "cooperate"]
    assert d.replicator(A, names).rest["defect"] > 0.999
    assert d.ecological(A, names).rest["defect"] > 0.999
    pi, _ = d.alpharank(A, 50, 10.0)
    assert pi[0] > 0.99
    rho = d.fixation(A, 50, 1.0)
    assert rho[0, 1] > 1 / 50 > rho[1, 0]


def test_rock_paper_scissors_from_the_centre_stays_there():
    A = np.array([[1.0, 0.0, 2.0], [2.0, 1.0, 0.0], [0.0, 2.0, 1.0]])
    traj = d.replicator(A, ["rock", "paper", "scissors"])
    assert np.allclose(traj.rest, 1 / 3)


def test_the_ecological_step_is_axelrods():
    A = np.array([[0.3, 0.6], [0.2, 0.9]])
    x = np.array([0.25, 0.75])
    traj = d.ecological(A, ["a", "b"], x, generations=1)
    fitness = x * (A @ x)
    assert np.allclose(traj.shares.iloc[1], fitness / fitness.sum())


def test_without_selection_a_mutant_fixes_with_probability_one_over_n():
    A = np.random.default_rng(0).uniform(0, 1, (4, 4))
    rho = d.fixation(A, 25, 0.0)
    assert np.allclose(rho[~np.eye(4, dtype=bool)], 1 / 25)


# --- against OpenSpiel -------------------------------------------------------------------------
@pytest.mark.parametrize("k", [2, 3, 5])
def test_the_replicator_field_is_openspiels(k):
    _, dynamics = _open_spiel()
    rng = np.random.default_rng(k)
    A = rng.uniform(0, 1, (k, k))
    field = dynamics.SinglePopulationDynamics(np.stack([A, A.T]), dynamics.replicator)
    for _ in range(5):
        x = rng.dirichlet(np.ones(k))
        assert np.allclose(field(x), d.replicator_field(A, x))


@pytest.mark.parametrize(("k", "N", "w"), [(2, 10, 1.0), (3, 30, 5.0), (5, 50, 20.0)])
def test_fixation_and_alpharank_are_openspiels(k, N, w):
    alpharank, _ = _open_spiel()
    A = np.random.default_rng(k + N).uniform(0, 1, (k, k))
    rho = d.fixation(A, N, w)
    for r in range(k):
        for s in range(k):
            if r != s:
                assert np.isclose(rho[r, s], alpharank._get_rho_sr(A, False, N, r, s, w, False,
                                                                     False))
    *_, pi, _, _ = alpharank.compute([A], m=N, alpha=w, use_local_selection_model=False)
    assert np.allclose(d.alpharank(A, N, w)[0], pi)


def test_evolve_refuses_what_it_cannot_use():
    frame = pd.DataFrame([[0.5, 0.2], [0.7, 0.4]], index=["a", "b"], columns=["a", "b"])
    with pytest.raises(ValueError, match="dynamics must be among"):
        d.evolve(frame, ["logit"])
    with pytest.raises(ValueError, match="--start names 'c'"):
        d.evolve(frame, ["replicator"], start={"c": 1.0})
    out = d.evolve(frame, list(d.DYNAMICS), population=10, selection=2.0, start={"a": 1, "b": 3})
    assert set(out.table().columns) == {"replicator share", "ecological share",
                                         "alpha-rank mass", "moran N*rho (mean)"}


# --- the command -----------------------------------------------------------------------------
def test_the_tournament_command_writes_the_dynamics_and_refuses_bad_ones(tmp_path):
    out = tmp_path / "t"
    base = [sys.executable, "run.py", "tournament", "--strategies",
            "averaging,boulware,hardliner,zi-c", "--repetitions", "20", "--out", str(out)]
    r = subprocess.run([*base, "--dynamics", "replicator,ecological,moran,alpharank", "--json"],
                       capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)["dynamics"]
    rest = data["trajectories"]["replicator"]["rest"]
    assert abs(sum(rest.values()) - 1) < 1e-9 and abs(sum(data["alpharank"].values()) - 1) < 1e-9
    assert {"dynamics.csv", "fixation.csv", "alpharank.csv", "dynamics.png"} <= {
        p.name for p in out.iterdir()}
    for bad, word in ((["--dynamics", "logit"], "--dynamics"),
                      (["--dynamics", "moran", "--population", "1"], "--population"),
                      (["--dynamics", "replicator", "--start", "nobody=1"], "--start")):
        r = subprocess.run([*base[:-1], str(tmp_path / "no"), *bad], capture_output=True,
                           text=True, cwd=ROOT, timeout=300)
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and word in r.stderr, r.stderr
        assert not (tmp_path / "no").exists()


def test_the_replicator_path_is_the_ode_s_solution_not_only_its_rest_point():
    """A constant advantage delta = 0.5 makes the replicator dynamics logistic: x(t) =
    1 / (1 + (1 - x0) / x0 * exp(-delta t)). Every recorded share is within 1e-6 of it
    (Euler steps of 0.05 were 0.010 off mid-path here)."""
    A = np.array([[1.0, 2.0], [0.5, 1.5]])
    traj = d.replicator(A, ["a", "b"], np.array([0.01, 0.99]))
    t = traj.shares.index.to_numpy()
    exact = 1.0 / (1.0 + 99.0 * np.exp(-0.5 * t))
    assert np.abs(traj.shares["a"].to_numpy() - exact).max() < 1e-6
