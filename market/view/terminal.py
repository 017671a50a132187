"""The document's legacy terminal view of a two-agent negotiation, drawn with rich.

The document's static method showed one Buyer and one Seller haggling on a
curses screen: a price scale, each side's acceptable range as a coloured
bar (light green for the Buyer, light red for the Seller), each side's
current offer as a darker cell on its bar, redrawn every round, and
``DEAL at <price>`` once they agree. This module rebuilds that view from a
:class:`~market.game.record.NegotiationRecord`, so it can replay any
negotiation (averaging, classic strategies, Q-tables) rather than only the
two hand-coded agents, and can be tested as plain text.

Data flow: :func:`market.game.play.play` runs one negotiation with the
protocol; :func:`frames` cuts its record into rounds; :func:`render_frame` and :func:`outcome_text`
turn those into ``rich`` renderables. Each bar also carries characters
(``=`` for the range, ``B``/``S`` for the offers), so the view still reads
when the output is not a terminal and rich drops the colours.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from rich.text import Text

from market.game.grid import PriceGrid
from market.game.play import Ranges, fmt, money
from market.game.record import NegotiationRecord

#: the document's curses colours (RGB 0-255), kept for the look
LIGHT_GREEN, GREEN = "rgb(191,255,234)", "rgb(0,179,120)"
LIGHT_RED, RED = "rgb(255,192,177)", "rgb(179,45,12)"
FLASHY_LIGHT, FLASHY_RED = "rgb(48,255,25)", "rgb(255,71,25)"

STYLES = {
    "buyer": (f"black on {LIGHT_GREEN}", f"bold white on {GREEN}"),
    "seller": (f"black on {LIGHT_RED}", f"bold white on {RED}"),
}
MARKS = {"buyer": "B", "seller": "S"}
LABEL_WIDTH = 8  # "SELLER" plus a gap, as the legacy screen's left margin


@dataclass
class Frame:
    """The screen after one round: who did what, and each side's standing offer (money)."""

    round: int  # 0-based protocol round
    events: list[str] = field(default_factory=list)
    offers: dict[str, float | None] = field(default_factory=dict)
    last: bool = False


def frames(record: NegotiationRecord, grid: PriceGrid) -> list[Frame]:
    """Cut a negotiation into rounds (a move by each side), the legacy screen's refresh."""
    out: list[Frame] = []
    offers: dict[str, float | None] = {"buyer": None, "seller": None}
    for mv in record.moves:
        r = mv.move // 2
        if not out or out[-1].round != r:
            out.append(Frame(round=r, offers=dict(offers)))
        frame = out[-1]
        if mv.action == "offer":
            offers[mv.side] = money(grid, mv.level)
            frame.events.append(f"{mv.side} offers {fmt(money(grid, mv.level))}")
        elif mv.action == "accept":
            frame.events.append(f"{mv.side} accepts {fmt(money(grid, mv.level))}")
        else:
            frame.events.append(f"{mv.side} walks away")
        frame.offers = dict(offers)
    if out:
        out[-1].last = True
    return out


def nice_step(span: float, columns: int) -> float:
    """A tick spacing of 1, 2 or 5 times a power of ten, about every 8 columns or more
    (but at most half the span, so a narrow scale still gets two labels)."""
    if span <= 0:
        return 1.0
    target = min(span * 8 / max(columns, 1), span / 2)
    base = 10 ** np.floor(np.log10(target))
    for m in (1, 2, 5, 10):
        if m * base >= target:
            return float(m * base)
    return float(10 * base)


@dataclass(frozen=True)
class Scale:
    """Maps money onto screen columns (the legacy ``local_transform``)."""

    lo: float
    hi: float
    width: int

    def col(self, price: float) -> int:
        frac = (price - self.lo) / (self.hi - self.lo) if self.hi > self.lo else 0.0
        return LABEL_WIDTH + int(round(min(max(frac, 0.0), 1.0) * (self.width - 1)))

    def ruler(self) -> Text:
        """Tick labels right-aligned on their column, as the legacy screen drew them."""
        step = nice_step(self.hi - self.lo, self.width)
        cells = [" "] * (LABEL_WIDTH + self.width + 8)
        k0 = int(np.ceil(self.lo / step - 1e-9))
        k1 = int(np.floor(self.hi / step + 1e-9))
        for k in range(k0, k1 + 1):
            label = fmt(k * step)
            end = self.col(k * step)
            start = max(end - len(label) + 1, 0)
            if any(c != " " for c in cells[max(start - 1, 0) : end + 1]):
                continue  # would touch the previous label
            cells[start : end + 1] = list(label)
        return Text("".join(cells).rstrip())


def scale_for(grid: PriceGrid, console_width: int = 80) -> Scale:
    """As wide as the console leaves room for, up to 101 columns (one per unit on 0-100)."""
    room = max(console_width - LABEL_WIDTH - 28, 10)
    return Scale(grid.lo, grid.hi, min(room, 101))


def bar(side: str, scale: Scale, rng_money: tuple[float, float], offer: float | None) -> Text:
    """One side's row: label, acceptable range as a coloured bar, its offer marked."""
    range_style, mark_style = STYLES[side]
    text = Text(side.upper().ljust(LABEL_WIDTH))
    lo, hi = rng_money
    c_lo, c_hi = scale.col(lo), scale.col(hi)
    cells = [(" ", "")] * (scale.width)
    if lo <= hi:
        for c in range(c_lo, c_hi + 1):
            cells[c - LABEL_WIDTH] = ("=", range_style)
    if offer is not None:
        cells[scale.col(offer) - LABEL_WIDTH] = (MARKS[side], mark_style)
    run_start = 0
    for i in range(1, len(cells) + 1):  # one span per run of equal style
        if i == len(cells) or cells[i][1] != cells[run_start][1]:
            chunk = "".join(ch for ch, _ in cells[run_start:i])
            text.append(chunk, style=cells[run_start][1] or None)
            run_start = i
    text.append("  ")
    text.append(f"offer {fmt(offer)}" if offer is not None else "no offer", style="bold")
    text.append(f"  range {fmt(lo)}-{fmt(hi)}" if lo <= hi else "  range empty")
    return text


def render_frame(frame: Frame, scale: Scale, ranges: Ranges, rounds: int) -> Text:
    """The screen after one round: header, scale, the Buyer's and the Seller's bars."""
    out = Text()
    out.append(f"Round {frame.round + 1} of {rounds}", style="bold")
    if frame.events:
        out.append(": " + ", ".join(frame.events))
    out.append("\n")
    out.append_text(scale.ruler())
    out.append("\n")
    for side in ("buyer", "seller"):
        out.append_text(bar(side, scale, ranges.of(side), frame.offers.get(side)))
        out.append("\n")
    return out


def outcome_text(record: NegotiationRecord, grid: PriceGrid) -> Text:
    """``DEAL at <price>`` in the legacy's flashy colours, or ``NO DEAL``."""
    if record.deal:
        return Text(
            f"DEAL at {fmt(money(grid, record.deal_level))}",
            style=f"bold {FLASHY_LIGHT} on {FLASHY_RED}",
        )
    return Text("NO DEAL", style=f"bold {FLASHY_RED}")


def render(record: NegotiationRecord, grid: PriceGrid, ranges: Ranges, rounds: int,
           console_width: int = 80) -> list[Text]:
    """Every round's screen, then the outcome line (the whole replay, for tests and pipes)."""
    scale = scale_for(grid, console_width)
    out = [render_frame(f, scale, ranges, rounds) for f in frames(record, grid)]
    out.append(outcome_text(record, grid))
    return out


__all__ = [
    "Frame",
    "Scale",
    "frames",
    "outcome_text",
    "render",
    "render_frame",
    "scale_for",
]
