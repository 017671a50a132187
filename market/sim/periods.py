"""The market's schedule: trading periods of ``K`` steps, one unit per trader per period.

A period opens with everybody holding a unit again and ends after ``K`` steps
(Gode and Sunder's markets). :class:`Periods` says where the market stands in
that schedule and what a run of steps spans; the model
(:class:`~market.sim.model.MarketModel`) asks it when to open a period, when one
closed, and how a compiled call's steps fall into periods, and does what the
schedule says (revise, open, collect).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Periods:
    """Where the market stands: the ``period`` (from 0) and the steps ``done`` in it, out of
    ``length`` (``K``)."""

    length: int
    period: int = 0
    done: int = 0

    @property
    def ended(self) -> bool:
        """The period has made its ``K`` steps: the next step opens a new one."""
        return self.done == self.length

    @property
    def left(self) -> int:
        """Steps left in the period."""
        return self.length - self.done

    def open(self, period: int) -> None:
        """Period ``period`` opens, no step made yet."""
        self.period, self.done = period, 0

    def advance(self, steps: int = 1) -> bool:
        """``steps`` more steps made in the period; whether it has now ended."""
        self.done += steps
        return self.ended

    def parts(self, steps: int) -> list[tuple[int, int]]:
        """How ``steps`` steps from here fall into periods: ``(first, count)`` each, ``first``
        counted from the first of them (a compiled call may run on into the next periods)."""
        out, first, room = [], 0, self.left if not self.ended else self.length
        while first < steps:
            n = min(steps - first, room)
            out.append((first, n))
            first, room = first + n, self.length
        return out
