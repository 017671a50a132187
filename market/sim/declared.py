"""Every market parameter, declared once: name, default, what it may be, its one-line help,
its command-line flag and its control in the browser view.

Everything else is derived from :data:`PARAMETERS`: the checked
:class:`~market.sim.params.Params` and the one validation every caller runs
(:func:`market.sim.params.check`), the ``market`` command's flags and the
parameters block of its ``--json``, the batch grid's names and types, the
view's sidebar controls, and the parameters table of the market guide
(:func:`markdown_table`, held equal to the page by a test). Adding a
parameter is one :class:`Param` here plus the code that uses it.

This module holds data only (no numpy, no strategies), so that building a
command's flags costs nothing at start-up. The game's time pressure is the
game's own declaration (:mod:`market.game.pressure`);
the institutions are their own registry's (:mod:`market.sim.institutions`).
"""

from __future__ import annotations

from market.game import pressure
from market.limits import PRICES_MAX, ROUNDS_MAX, STEPS_MAX, TRADERS_MAX
from market.parameters import Control, Param
from market.sim import institutions, matching

#: the choices of a distribution, the first mover, agent data, learners' parameters
DISTRIBUTIONS = ("uniform", "normal", "triangular")
FIRST_MOVERS = ("random", "seller", "buyer")
AGENT_DATA = ("period", "step", "none")
LEARNER_PARAMS = ("fixed", "drawn")
#: how traders revise their strategy at each period's end (:mod:`market.sim.revision`)
REVISIONS = ("none", "imitate", "moran", "replicator")
#: what a trader adopting a learning strategy starts from: fresh tables, or a copy of the
#: tables of the trader it took the strategy from
INHERIT = ("fresh", "copy")
#: which of the market clock's changes learners get (``strategies.base.CLOCK_PARTS``, the
#: learner's numbering, which this layer cannot import; a test holds the two equal)
CLOCK_PARTS = ("both", "state", "wait")
#: how traders meet (:mod:`market.sim.institutions`, their registry): in pairs that bargain
#: with alternating offers, in a continuous double auction, or in a call market
INSTITUTIONS = tuple(institutions.INSTITUTIONS)
#: who bargains with whom in bilateral bargaining (:mod:`market.sim.matching`), and the order a
#: Seller serves her visitors in
MATCHINGS = tuple(matching.MATCHINGS)
SERVICES = tuple(matching.SERVICES)
#: the value schedules: drawn, or one named (``market.sim.schedules.NAMED``, which this
#: data-only module does not import; a test holds the two equal)
SCHEDULES = ("drawn", "symmetric", "flat-supply", "flat-demand", "excess-demand")
#: the engines a model may be asked for (:func:`market.sim.engine.choose`): how it runs, not
#: what it models, so not one of the parameters below
ENGINES = ("auto", "compiled", "lockstep")


PARAMETERS: tuple[Param, ...] = (
    Param("n_buyers", "int", 50, "number of Buyers", 1, TRADERS_MAX, flag="--buyers",
          control=Control("Buyers", 1, 1000)),
    Param("n_sellers", "int", 50, "number of Sellers", 1, TRADERS_MAX, flag="--sellers",
          control=Control("Sellers", 1, 1000)),
    Param("buyer_mix", "mix", None,
          "strategy shares of the Buyers, e.g. averaging=0.5,qlearning=0.5 (default "
          "averaging; a name may be qlearning:FILE.npz, or a strategy of your own: "
          "path/to/file.py:Class or module:Class)", optional=True, flag="--buyer-mix",
          metavar="MIX"),
    Param("seller_mix", "mix", None, "strategy shares of the Sellers (default averaging)",
          optional=True, flag="--seller-mix", metavar="MIX"),
    Param("prices", "int", 5, "price levels P", 2, PRICES_MAX, flag="--prices",
          control=Control("Price levels P", 2, 20)),
    Param("rounds", "int", 5, "rounds T of a negotiation (on a book, --institution cda|call: "
          "the rounds of a Q-learner's table only)", 1, ROUNDS_MAX, flag="--rounds",
          control=Control("Rounds T", 1, 10)),
    Param("discount", "float", None,
          "both sides' discount factor per offer, in (0, 1] (default 1: time is free)",
          0, 1, optional=True, flag="--discount", metavar="D", off=1.0,
          resolution=pressure.RESOLUTION),
    Param("seller_discount", "float", None, "the Seller's factor (overrides --discount)",
          0, 1, optional=True, flag="--seller-discount", metavar="D",
          control=Control("Seller's discount per offer", 0.5, 1.0), off=1.0,
          resolution=pressure.RESOLUTION),
    Param("buyer_discount", "float", None, "the Buyer's factor (overrides --discount)",
          0, 1, optional=True, flag="--buyer-discount", metavar="D",
          control=Control("Buyer's discount per offer", 0.5, 1.0), off=1.0,
          resolution=pressure.RESOLUTION),
    # the rest of the game's time pressure: its one declaration, with the view's controls
    *pressure.OTHERS,
    Param("period", "int", 10,
          "steps per trading period K; one unit per trader per period", 1, STEPS_MAX,
          flag="--period", control=Control("Steps per trading period", 1, 50)),
    Param("redraw", "flag", False, "draw new values and costs every period (default: kept)",
          flag="--redraw", control=Control("New values and costs each period")),
    Param("value_range", "range", (0.0, 100.0),
          "Buyers' values drawn in [LO, HI] (default 0,100), uniformly unless --distribution "
          "says otherwise",
          flag="--value-range", metavar="LO,HI", control=Control("Buyers' values", 0, 200)),
    Param("cost_range", "range", (0.0, 100.0),
          "Sellers' costs drawn in [LO, HI] (default 0,100), uniformly unless --distribution "
          "says otherwise",
          flag="--cost-range", metavar="LO,HI", control=Control("Sellers' costs", 0, 200)),
    Param("schedule", "text", "drawn",
          "Buyers' values and Sellers' costs: drawn from their ranges (default), a named "
          "schedule (" + ", ".join(SCHEDULES[1:]) + "), or your own as V1,V2,...;C1,C2,... "
          "(each side's traders a multiple of its list, which they hold in turn)",
          choices=SCHEDULES, flag="--schedule",
          metavar="V1,V2,...;C1,C2,...", control=Control("Values and costs")),
    Param("value_dist", "dist", "uniform", "shape of values and costs in their ranges",
          choices=DISTRIBUTIONS, flag="--distribution", control=Control("Drawn")),
    Param("cost_dist", "dist", "uniform", "shape of values and costs in their ranges",
          choices=DISTRIBUTIONS, flag="--distribution"),
    Param("institution", "choice", "pairs",
          "how traders meet: " + institutions.choices_in_words(),
          choices=INSTITUTIONS, flag="--institution",
          control=Control("Institution")),
    Param("matching", "choice", "random",
          "with --institution pairs, who bargains with whom: " + matching.choices_in_words(),
          choices=MATCHINGS, flag="--matching", control=Control("Partner choice"),
          extension=True),
    Param("loyalty_beta", "float", 1.0,
          "with --matching loyalty, the choice intensity beta: a Buyer visits Seller j with "
          "probability proportional to exp(beta J_j)", 0, None, closed=True,
          flag="--loyalty-beta", metavar="BETA", control=Control("Choice intensity beta", 0.0,
                                                                   20.0), extension=True,
          family="matching"),
    Param("loyalty_gamma", "float", 0.1,
          "with --matching loyalty, the memory decay gamma: each period J_j <- (1 - gamma) J_j "
          "+ the period's earnings from j (a share of the price range)", 0, 1,
          flag="--loyalty-gamma", metavar="GAMMA", control=Control("Memory decay gamma", 0.01,
                                                                   1.0), extension=True,
          family="matching"),
    Param("loyalty_memory", "int", 16,
          "with --matching loyalty, the Sellers a Buyer remembers (the others at J = 0)", 1,
          TRADERS_MAX, flag="--loyalty-memory", metavar="M",
          control=Control("Sellers a Buyer remembers", 1, 64), extension=True, family="matching"),
    Param("service", "choice", "random",
          "with --matching loyalty, the order a Seller serves her visitors in: random, or "
          "loyal-first (the largest J for her first)", choices=SERVICES, flag="--service",
          control=Control("Service order"), extension=True, family="matching"),
    Param("loyal_state", "flag", False,
          "with --matching loyalty, Q-learners see whether the Buyer across is loyal to the "
          "Seller (a slot of their tables each way; Kirman and Vriend's Sellers who treat "
          "loyal customers differently)", flag="--loyal-state",
          control=Control("Q-learners see whether a Buyer is loyal"), extension=True,
          family="matching"),
    Param("network", "file", "",
          "with --institution pairs, a graph file of who may meet whom (an edge list, "
          ".adjlist, .graphml or .gml; nodes s0.. for Sellers, b0.. for Buyers): each Buyer "
          "visits one of her neighbours, by --matching (default: everyone may meet)",
          flag="--network", metavar="FILE", extension=True),
    Param("network_strict", "flag", False,
          "refuse a --network that leaves a trader with no partner (default: say how many)",
          flag="--network-strict", extension=True),
    Param("first", "choice", "random", "who opens each negotiation (default random per pair)",
          choices=FIRST_MOVERS, flag="--first", control=Control("First mover")),
    Param("teams", "int", None, "teams per side (default: every trader alone)", 1,
          TRADERS_MAX, optional=True, flag="--teams",
          control=Control("Teams per side (0: none)", 0, 20)),
    Param("common_wallet", "flag", False, "pool earnings per team (needs --teams)",
          flag="--common-wallet", control=Control("Common wallet (teams pool their earnings)")),
    Param("clock", "flag", False,
          "market clock: Q-learners see the steps left in the trading period (a table per "
          "time-left bucket) and value a failed negotiation at what waiting is still worth",
          flag="--clock",
          control=Control("Market clock (delay costs; learners see the time left)")),
    Param("clock_parts", "choice", "both",
          "with --clock, which of its changes learners get: both (default), state (the steps "
          "left, failures worth 0) or wait (failures worth waiting, no steps left in the state)",
          choices=CLOCK_PARTS, flag="--clock-parts", metavar="both|state|wait"),
    Param("clock_buckets", "int", None,
          "time-left slots of a clocked learner's table (default: min(period, 4))", 1,
          STEPS_MAX, optional=True),
    Param("learner_params", "choice", "fixed",
          "draw each Q-learner's learning parameters (lr, gamma, exploration)",
          choices=LEARNER_PARAMS, flag="--drawn-learners", switch="drawn"),
    Param("rational_learners", "flag", True,
          "learners only consider individually rational actions"),
    Param("strategy_params", "mapping", None,
          "extra keyword arguments per strategy name, passed to its constructor",
          optional=True),
    Param("agent_data", "choice", "period",
          "when to record agent-level data (default: end of each period)",
          choices=AGENT_DATA, flag="--agent-data"),
    Param("max_steps", "int", None,
          "steps after which the model stops running (Mesa's run_model returns); none: it "
          "runs until stopped", 1, STEPS_MAX, optional=True),
    Param("revision", "choice", "none",
          "at each period's end some traders change strategy: imitate (pairwise proportional "
          "imitation), moran (birth-death), replicator, or none (default)",
          choices=REVISIONS, flag="--revision", control=Control("Strategy revision"),
          extension=True),
    Param("revision_rate", "float", 0.1,
          "with --revision, the rate of revision at a period's end: each trader's probability "
          "to revise (imitate, replicator), or birth-death events per trader (moran)",
          0, 1, closed=True, flag="--revision-rate", metavar="R",
          control=Control("Revising per period", 0.0, 1.0), extension=True, family="revision"),
    Param("selection", "float", 1.0,
          "with --revision moran or replicator, the selection intensity w of the fitness "
          "exp(w * period earnings / price span); 0: neutral drift", 0, None, closed=True,
          flag="--selection", metavar="W", control=Control("Selection intensity", 0.0, 10.0),
          extension=True, family="revision"),
    Param("mutation", "float", 0.0,
          "with --revision, the probability that a reviser adopts a strategy of its side's "
          "mix drawn uniformly (those at share 0 included)", 0, 1, closed=True,
          flag="--mutation", metavar="MU", control=Control("Mutation", 0.0, 0.2), extension=True,
          family="revision"),
    Param("inherit", "choice", "fresh",
          "what a trader adopting a learner starts from: fresh tables (default: the rule "
          "spreads, not what one trader learned) or a copy of the tables of the trader it "
          "copies",
          choices=INHERIT, flag="--inherit", extension=True, family="revision"),
)
#: the parameters by name, in declaration order
BY_NAME: dict[str, Param] = {p.name: p for p in PARAMETERS}
#: the parameter names, in declaration order (the model's keywords, before Mesa's own)
NAMES: tuple[str, ...] = tuple(BY_NAME)


def flag_names() -> dict[str, str]:
    """Parameter name -> the flag a command spells it with (messages name the flag)."""
    return {p.name: p.flag for p in PARAMETERS if p.flag is not None}


def markdown_table() -> str:
    """The parameters as the market guide's table (one row each)."""
    rows = ["| parameter | flag | default | allowed | meaning |", "|---|---|---|---|---|"]
    for p in PARAMETERS:
        flag = f"`{p.flag}`" if p.flag else ""
        default = "none" if p.default is None else f"`{p.default!r}`"
        rows.append(f"| `{p.name}` | {flag} | {default} | {p.allowed()} | {p.help} |")
    return "\n".join(rows) + "\n"


if __name__ == "__main__":  # the guide's table, to paste between its markers
    print(markdown_table(), end="")
