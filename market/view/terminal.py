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

import os
import sys
from dataclasses import dataclass, field
from typing import TextIO

import numpy as np
from rich.text import Text

from market.game.grid import PriceGrid
from market.game.play import Ranges, fmt, money
from market.game.record import NegotiationRecord

#: the document's curses colours (RGB 0-255), kept for the look
LIGHT_GREEN, GREEN = "rgb(191,255,234)", "rgb(0,179,120)"
LIGHT_RED, RED = "rgb(255,192,177)", "rgb(179,45,12)"

#: The outcome banners as ``(text, background)`` hex colours, shared with the browser view.
#: The legacy screen wrote ``DEAL`` in flashy green on orange-red, 2.5:1 and hard to
#: read; here each banner keeps one legacy colour as its background and takes the text
#: colour that clears WCAG AA (contrast ratio >= 4.5:1): black on the legacy's flashy green
#: (15.4:1) for a deal, white on the legacy's dark red (6.4:1) for no deal. Both colours
#: are given, so the banner reads the same on a dark or a light terminal.
DEAL_BANNER = ("#000000", "#30ff19")
NO_DEAL_BANNER = ("#ffffff", "#b32d0c")

#: keys that end a ``--step`` replay, as the legacy view's ``q``
QUIT_KEYS = ("q", "quit", "\x04")  # \x04: Ctrl-D, which a terminal in cbreak mode sends as is

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


def outcome_label(record: NegotiationRecord, grid: PriceGrid) -> str:
    """``DEAL at <price>`` or ``NO DEAL``: the banner's words, in the terminal and the browser."""
    if record.deal:
        return f"DEAL at {fmt(money(grid, record.deal_level))}"
    return "NO DEAL (the talks broke down)" if record.broke_down else "NO DEAL"


def banner_colours(deal: bool) -> tuple[str, str]:
    """``(text, background)`` of the outcome banner (see :data:`DEAL_BANNER`)."""
    return DEAL_BANNER if deal else NO_DEAL_BANNER


def outcome_text(record: NegotiationRecord, grid: PriceGrid) -> Text:
    """The outcome banner, ``DEAL at <price>`` or ``NO DEAL``, in readable colours."""
    fg, bg = banner_colours(record.deal)
    return Text(outcome_label(record, grid), style=f"bold {fg} on {bg}")


def read_key(stream: TextIO | None = None) -> str:
    """One key press where the terminal allows it (POSIX cbreak mode), else one line.

    The legacy view advanced on any key and quit on ``q``. In a POSIX
    terminal the key is taken at once, without Enter; Ctrl-C still
    interrupts (cbreak mode keeps signals). Elsewhere (Windows, a pipe) the
    whole line is read, so ``q`` then Enter quits. Returns ``""`` at end of input.
    """
    stream = stream if stream is not None else sys.stdin
    try:
        import termios
        import tty
    except ImportError:  # not POSIX
        return stream.readline()
    try:
        fd = stream.fileno()
        saved = termios.tcgetattr(fd)
    except (AttributeError, OSError, ValueError, termios.error):  # not a terminal
        return stream.readline()
    try:
        tty.setcbreak(fd, termios.TCSANOW)  # keep keys typed ahead (TCSAFLUSH drops them)
        return os.read(fd, 32).decode(errors="ignore")
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


def wants_quit(key: str) -> bool:
    """Whether a key (or line) read by :func:`read_key` asks to stop: ``q``, or end of input."""
    return key == "" or key.strip().lower() in QUIT_KEYS


def render(record: NegotiationRecord, grid: PriceGrid, ranges: Ranges, rounds: int,
           console_width: int = 80) -> list[Text]:
    """Every round's screen, then the outcome line (the whole replay, for tests and pipes)."""
    scale = scale_for(grid, console_width)
    out = [render_frame(f, scale, ranges, rounds) for f in frames(record, grid)]
    out.append(outcome_text(record, grid))
    return out


__all__ = [
    "DEAL_BANNER",
    "NO_DEAL_BANNER",
    "Frame",
    "Scale",
    "banner_colours",
    "frames",
    "outcome_label",
    "outcome_text",
    "read_key",
    "render",
    "render_frame",
    "scale_for",
    "wants_quit",
]
