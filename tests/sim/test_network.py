"""Who may meet whom (``--network``): every visit on an edge, under both pairing rules; a
complete network the same market as none; isolated traders counted, refused only when asked;
bad graph files refused in one line."""

from __future__ import annotations

import json
import warnings

import cli_run  # tests/support, on pytest's pythonpath
import networkx as nx
import numpy as np
import pytest

from market.errors import Notice
from market.sim.model import MarketModel
from market.sim.network import read

SMALL = dict(n_sellers=5, n_buyers=12, agent_data="none",
             buyer_mix={"zi-c": 0.5, "boulware": 0.5}, seller_mix={"zi-c": 0.5, "conceder": 0.5})


def _write(graph: nx.Graph, path) -> str:
    nx.write_edgelist(graph, path, data=False)
    return str(path)


def _sparse(tmp_path) -> tuple[str, set[tuple[int, int]]]:
    """Each Buyer b may meet Sellers b mod 5 and (b + 2) mod 5, Buyer 11 nobody."""
    g = nx.Graph()
    edges = {(b % 5, b) for b in range(11)} | {((b + 2) % 5, b) for b in range(11)}
    g.add_edges_from((f"s{s}", f"b{b}") for s, b in edges)
    g.add_node("b11")
    return _write(g, tmp_path / "sparse.edgelist"), edges


@pytest.mark.parametrize("matching", ["random", "loyalty"])
def test_every_visit_is_an_edge_and_a_buyer_with_no_partner_never_bargains(tmp_path, matching):
    path, edges = _sparse(tmp_path)
    with pytest.warns(Notice, match="1 Buyer and 0 Sellers have no partner"):
        m = MarketModel(**SMALL, network=path, matching=matching, seed=4)
    seen = set()
    for _ in range(60):
        m.step()
        seen |= set(zip(m.last_step.sellers.tolist(), m.last_step.buyers.tolist(), strict=True))
    assert seen <= edges and len(seen) > len(edges) // 2, (seen - edges, len(seen))
    assert m.summary()["deals"] > 0


def test_a_complete_network_is_the_same_market_as_none_under_loyalty(tmp_path):
    path = _write(nx.complete_bipartite_graph([f"s{j}" for j in range(5)],
                                              [f"b{i}" for i in range(12)]),
                  tmp_path / "all.edgelist")
    a = MarketModel(**SMALL, matching="loyalty", loyalty_beta=3.0, seed=7)
    b = MarketModel(**SMALL, matching="loyalty", loyalty_beta=3.0, seed=7, network=path)
    a.run(40), b.run(40)
    assert a.datacollector.get_model_vars_dataframe().equals(
        b.datacollector.get_model_vars_dataframe())
    assert a.datacollector.get_table_dataframe("periods").equals(
        b.datacollector.get_table_dataframe("periods"))


def test_random_pairs_on_a_network_visit_a_neighbour_uniformly(tmp_path):
    """One Buyer linked to Sellers 0 and 2 of 3: she visits each about half the time (within
    four standard deviations of a fair coin over 400 steps), never Seller 1."""
    g = nx.Graph([("s0", "b0"), ("s2", "b0")])
    g.add_node("s1")
    path = _write(g, tmp_path / "two.edgelist")
    with pytest.warns(Notice, match="0 Buyers and 1 Seller have no partner"):
        m = MarketModel(n_sellers=3, n_buyers=1, network=path, period=1, seed=2,
                        agent_data="none")
    visits = []
    for _ in range(400):
        m.step()
        visits.extend(m.last_step.sellers.tolist())
    counts = np.bincount(visits, minlength=3)
    assert counts[1] == 0 and counts.sum() == 400
    assert abs(counts[0] - 200) < 4 * np.sqrt(100), counts


def test_a_buyer_with_one_neighbour_is_loyal_from_the_start(tmp_path):
    """WKH's order parameter counts a Buyer's neighbours, not every Seller: with one partner
    each, y = 1 for everyone in every period."""
    g = nx.Graph((f"s{b % 5}", f"b{b}") for b in range(12))
    path = _write(g, tmp_path / "one.edgelist")
    m = MarketModel(**SMALL, network=path, matching="loyalty", period=5, seed=1)
    m.run(30)
    periods = m.datacollector.get_table_dataframe("periods")
    assert (periods.mean_y == 1.0).all() and (periods.loyal_share == 1.0).all()


def test_every_format_reads_to_the_same_pairs(tmp_path):
    g = nx.Graph([("s0", "b1"), ("s1", "b1"), ("s2", "b0"), ("b2", "s0")])
    nx.write_edgelist(g, tmp_path / "g.txt", data=False)
    nx.write_adjlist(g, tmp_path / "g.adjlist")
    nx.write_graphml(g, tmp_path / "g.graphml")
    nx.write_gml(g, tmp_path / "g.gml")
    nets = [read(str(tmp_path / f"g.{ext}"), 3, 3) for ext in ("txt", "adjlist", "graphml", "gml")]
    for net in nets:
        assert net.start.tolist() == [0, 1, 3, 4] and net.sellers.tolist() == [2, 0, 1, 0]
        assert (net.isolated_buyers, net.isolated_sellers) == (0, 0)


def test_the_command_line_records_the_network_and_notes_isolated_traders(tmp_path):
    path, _ = _sparse(tmp_path)
    done = cli_run.run("market", "--steps", "4", "--sellers", "5", "--buyers", "12",
                       "--network", path, "--json")
    assert done.returncode == 0, done.stderr
    assert "note: 1 Buyer and 0 Sellers have no partner in the network" in done.stderr
    assert json.loads(done.stdout)["parameters"]["network"] == path


def _bad_graphs(tmp_path) -> dict[str, str]:
    files = {"sellers.edgelist": "s0 s1\n", "name.edgelist": "s0 trader7\n",
             "far.edgelist": "s0 b99\n", "broken.graphml": "<graphml><graph>",
             "binary.edgelist": "\xff\xfe"}
    for name, text in files.items():
        (tmp_path / name).write_bytes(text.encode("latin-1"))
    return {name.split(".")[0]: str(tmp_path / name) for name in files}


@pytest.mark.parametrize(("args", "words"), [
    (["--network", "{missing}"], "--network: {missing}: no such file"),
    (["--network", "{sellers}"], "links two Sellers (s0 and s1)"),
    (["--network", "{name}"], "has a node trader7; nodes are s0..s4"),
    (["--network", "{far}"], "names b99, but the market's are b0..b11"),
    (["--network", "{broken}"], "is not a graph file of its kind"),
    (["--network", "{binary}"], "is not text (UTF-8)"),
    (["--network", "{sparse}", "--network-strict"],
     "--network: 1 Buyer and 0 Sellers have no partner in the network (--network-strict)"),
    (["--network-strict"], "--network-strict asks that --network leave nobody"),
    (["--network", "{sparse}", "--institution", "call"], "it needs --institution pairs"),
    (["--network", "{sparse}", "--engine", "lockstep"], "a network runs on the compiled engine"),
])
def test_a_bad_network_is_refused_in_one_line(tmp_path, args, words):
    names = {**_bad_graphs(tmp_path), "sparse": _sparse(tmp_path)[0],
             "missing": str(tmp_path / "missing.edgelist")}
    args = [a.format(**names) for a in args]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        done = cli_run.run("market", "--steps", "2", "--sellers", "5", "--buyers", "12",
                           "--out", str(tmp_path / "out"), *args)
    assert done.returncode == 2, done.stderr
    lines = [x for x in done.stderr.strip().splitlines() if "note:" not in x]
    assert words.format(**names) in done.stderr and len(lines) == 1, done.stderr
    assert not (tmp_path / "out").exists()
