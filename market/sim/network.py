"""Who may meet whom: a graph of allowed Seller-Buyer pairs, read from a file.

| file ending   | format (networkx's reader)                                       |
|---------------|------------------------------------------------------------------|
| ``.graphml``  | GraphML (``parse_graphml``)                                      |
| ``.gml``      | GML (``parse_gml``)                                              |
| ``.adjlist``  | adjacency list (``parse_adjlist``)                               |
| anything else | edge list, ``u v`` a line (``parse_edgelist``; ``#``: a comment) |

Nodes are the traders, named ``s0`` .. ``s{n-1}`` for the Sellers and ``b0``
.. ``b{m-1}`` for the Buyers (their indices in the market, as the agent
table's ``trader`` column gives them). An edge is a Seller and a Buyer who
may meet; the graph is undirected, extra attributes are ignored, and a
trader the file does not name has no partner. With ``networkx``::

    G = nx.complete_bipartite_graph(["s0", "s1"], ["b0", "b1", "b2"])
    nx.write_edgelist(G, "net.edgelist", data=False)

Both pairing rules keep to the graph (:mod:`market.sim.matching`): a Buyer
visits one of her neighbours, by her preferences under ``loyalty`` and
uniformly under ``random``. No file is unpickled: every reader above parses
text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from market.files import open_regular, shown

#: a graph file is read whole: at most this many bytes
NETWORK_BYTES_MAX = 512 * 2**20
_NODE = re.compile(r"([sb])(0|[1-9][0-9]*)")


@dataclass(frozen=True)
class Network:
    """The allowed pairs as each Buyer's Sellers: Buyer ``b``'s are
    ``sellers[start[b]:start[b + 1]]``, in increasing order; and how many traders of each
    side have no partner."""

    start: np.ndarray
    sellers: np.ndarray
    isolated_sellers: int
    isolated_buyers: int

    @property
    def edges(self) -> int:
        return int(self.sellers.size)


def read(path: str, n_sellers: int, n_buyers: int, name: str = "network") -> Network:
    """The graph in ``path`` for a market of these sizes; ``ValueError`` naming ``name`` and
    the file when it cannot be read or names a trader the market does not have."""
    import networkx as nx

    try:
        with open_regular(path, NETWORK_BYTES_MAX, "graph file") as f:
            text = f.read().decode("utf-8", errors="strict")
    except UnicodeDecodeError:
        raise ValueError(f"{name}: {shown(path)} is not text (UTF-8)") from None
    except ValueError as exc:
        raise ValueError(f"{name}: {exc}") from None
    lines = text.splitlines()
    suffix = Path(path).suffix.lower()
    try:
        if suffix == ".graphml":
            graph = nx.parse_graphml(text)
        elif suffix == ".gml":
            graph = nx.parse_gml(lines, label="label")
        elif suffix == ".adjlist":
            graph = nx.parse_adjlist(lines)
        else:
            graph = nx.parse_edgelist(lines, data=False)
    except Exception as exc:  # noqa: BLE001 - every reader's own error, said in one line
        raise ValueError(f"{name}: {shown(path)} is not a graph file of its kind "
                         f"({type(exc).__name__}: {shown(str(exc), 120)})") from None
    pairs = set()
    for u, v in graph.edges():
        a, b = _trader(u, n_sellers, n_buyers, path, name), _trader(v, n_sellers, n_buyers,
                                                                     path, name)
        if a[0] == b[0]:
            side = "Sellers" if a[0] == "s" else "Buyers"
            raise ValueError(f"{name}: {shown(path)} links two {side} ({u} and {v}); an edge "
                             "is a Seller and a Buyer who may meet")
        s, b_ = (a[1], b[1]) if a[0] == "s" else (b[1], a[1])
        pairs.add((b_, s))
    for node in graph.nodes():  # a node with no edge is allowed, if it is a trader
        _trader(node, n_sellers, n_buyers, path, name)
    order = np.array(sorted(pairs), dtype=np.int64).reshape(-1, 2)
    start = np.zeros(n_buyers + 1, np.int64)
    np.add.at(start, order[:, 0] + 1, 1)
    start = np.cumsum(start)
    linked_s = np.zeros(n_sellers, bool)
    linked_s[order[:, 1]] = True
    return Network(start, np.ascontiguousarray(order[:, 1]), int((~linked_s).sum()),
                   int((start[1:] == start[:-1]).sum()))


def _trader(node: object, n_sellers: int, n_buyers: int, path: str, name: str
            ) -> tuple[str, int]:
    m = _NODE.fullmatch(str(node))
    if m is None:
        raise ValueError(f"{name}: {shown(path)} has a node {shown(str(node), 40)!s}; nodes "
                         f"are s0..s{n_sellers - 1} (Sellers) and b0..b{n_buyers - 1} (Buyers)")
    side, i = m.group(1), int(m.group(2))
    if i >= (n_sellers if side == "s" else n_buyers):
        who = f"s0..s{n_sellers - 1}" if side == "s" else f"b0..b{n_buyers - 1}"
        raise ValueError(f"{name}: {shown(path)} names {side}{i}, but the market's are {who}")
    return side, i


def isolated_text(net: Network) -> str:
    """``3 Buyers and 0 Sellers have no partner in the network``, for a note."""
    def many(n: int, one: str) -> str:
        return f"{n:,} {one}{'' if n == 1 else 's'}"
    return (f"{many(net.isolated_buyers, 'Buyer')} and {many(net.isolated_sellers, 'Seller')} "
            "have no partner in the network")


__all__ = ["NETWORK_BYTES_MAX", "Network", "isolated_text", "read"]
