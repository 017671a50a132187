"""What bargaining theory says a first proposer gets, to compare with the exact equilibrium on
the grid (:func:`market.game.evaluation.spe`).

- :func:`rubinstein_split`: discounting over an infinite horizon (Rubinstein
  1982), and a breakdown risk after each rejection (Binmore, Rubinstein and
  Wolinsky 1986);
- :func:`horizon_split`: the same over a finite number of offers;
- :func:`cost_split`: a fixed cost per offer (Rubinstein 1982's second case).

Shares are of a surplus of 1, as ``(seller, buyer)``.
"""

from __future__ import annotations

from market.game.rules import SELLER, side_index


def rubinstein_split(seller_discount: float, buyer_discount: float,
                     first: int | str = SELLER, breakdown: float = 0.0) -> tuple[float, float]:
    """Rubinstein's (1982) subgame-perfect split of a surplus of 1, infinite horizon:
    ``(seller share, buyer share)`` when ``first`` proposes first. The first proposer
    gets ``(1 - d_other) / (1 - d_s d_b)``.

    With a ``breakdown`` risk Q after each rejection (Binmore, Rubinstein and
    Wolinsky 1986), a side's continuation is worth ``1 - Q`` of itself,
    so each factor becomes ``d (1 - Q)``; without discounting the first
    proposer gets ``1 / (2 - Q)``, which tends to the equal split as Q -> 0.
    """
    f = side_index(first) if isinstance(first, str) else int(first)
    keep = 1.0 - float(breakdown)
    ds, db = float(seller_discount) * keep, float(buyer_discount) * keep
    if ds == 1.0 and db == 1.0:
        raise ValueError("Rubinstein's split needs a discount factor below 1 on some side, "
                         "or a breakdown risk")
    other = db if f == SELLER else ds
    share = (1.0 - other) / (1.0 - ds * db)
    return (share, 1.0 - share) if f == SELLER else (1.0 - share, share)


def horizon_split(seller_discount: float, buyer_discount: float, offers: int,
                  first: int | str = SELLER, breakdown: float = 0.0) -> tuple[float, float]:
    """The subgame-perfect split of a surplus of 1 (continuous, no grid) when ``offers``
    offers alternate, ``first`` making the first and, with an odd count, the last: the
    last proposer takes everything, and each earlier proposer leaves the responder what it
    would get by proposing next, discounted by its factor (Ståhl 1972; Rubinstein's split
    is the limit as ``offers`` grows). This game with ``T`` rounds has ``2T - 1`` offers.
    A ``breakdown`` risk multiplies each factor by ``1 - Q``, as in :func:`rubinstein_split`."""
    f = side_index(first) if isinstance(first, str) else int(first)
    if offers < 1:
        raise ValueError(f"offers must be >= 1 (got {offers})")
    keep = 1.0 - float(breakdown)
    d = (float(seller_discount) * keep, float(buyer_discount) * keep)
    share = 1.0  # the proposer's share at the last offer
    for k in range(offers - 2, -1, -1):
        responder = (1 - f) if k % 2 == 0 else f
        share = 1.0 - d[responder] * share
    return (share, 1.0 - share) if f == SELLER else (1.0 - share, share)


def cost_split(seller_cost: float, buyer_cost: float, first: int | str = SELLER
               ) -> tuple[float, float]:
    """Rubinstein's (1982) fixed-cost result, infinite horizon, no discounting: the range
    ``(lo, hi)`` of the first proposer's share of a surplus of 1 over subgame-perfect
    equilibria, when each side pays its cost per period. The side with the smaller cost
    takes nearly everything: a first proposer with the smaller cost gets 1; with the larger,
    it gets the other's cost ``c_other``; with equal costs ``c``, any share in ``[c, 1]``.

    Rubinstein's players cannot walk away; here a negotiation that fails is
    worth 0, so a side never accepts a deal worth less than that, which the
    grid's equilibria show and this limit does not.
    """
    f = side_index(first) if isinstance(first, str) else int(first)
    costs = (float(seller_cost), float(buyer_cost))
    mine, other = costs[f], costs[1 - f]
    if mine == other == 0.0:
        raise ValueError("the fixed-cost result needs a cost above 0 on some side")
    if mine < other:
        return 1.0, 1.0
    if mine > other:
        return other, other
    return mine, 1.0


__all__ = ["cost_split", "horizon_split", "rubinstein_split"]
