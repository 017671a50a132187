"""One progress bar for every command's long steps: rich, on stderr, gone when done.

Anything that can take longer than a second shows what it is doing, how far
it is and how long is left. The bar draws on stderr so ``--json`` output
stays clean, and is transient: once the step ends it disappears, so an error
after it is still one line.

When stderr is not a terminal (a pipe, a log file, a scheduler), a bar would
draw nothing and a long step would look like a hung program, so the same
progress becomes plain lines, as ``pip`` and rich's non-interactive consoles
do: a line once the command has been silent :data:`FIRST_LINE` seconds (but not in a
step's first :data:`SOONEST`), one every
:data:`EVERY` seconds after, and one when it ends (only for steps that said
anything). Each starts with :data:`PREFIX`, so that a log's reader (or a
script) tells them from the one line an error ends with.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable, Iterator

Update = Callable[..., None]
#: what every plain progress line starts with
PREFIX = "[progress] "
#: seconds of silence before a step that is not drawn says what it is doing: counted from
#: the command's last line (or its start), so that a command of several short steps is not
#: silent for all of them (never sooner than :data:`SOONEST` into the step)
FIRST_LINE = 2.0
SOONEST = 0.5
#: seconds between its lines after that: no piped command is silent for 3 s
EVERY = 2.0
#: when the command last said something on stderr (its start, at first)
_last_line = [time.monotonic()]


def command_started() -> None:
    """A command starts: its silence counts from now (a process may run several, as the
    tests do in one)."""
    _last_line[0] = time.monotonic()


class PlainLines:
    """The progress of one step as plain lines on stderr, from a timer thread."""

    def __init__(self, label: str, total: float | None, unit: str) -> None:
        self.label, self.total, self.unit = label, total, unit
        self.completed = 0.0
        self.description = ""
        self.start = time.monotonic()
        self.said = False
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name=f"progress {label}",
                                        daemon=True)

    def update(self, completed: float | None = None, advance: float | None = None,
               description: str | None = None, total: float | None = None,
               phase: bool = False) -> None:
        with self._lock:
            if phase:  # a new phase of unknown size: no count carried over from the last
                self.total, self.completed = None, 0.0
            if total is not None:
                self.total = total
            if completed is not None:
                self.completed = completed
            if advance is not None:
                self.completed += advance
            if description is not None:  # rich's markup is for the bar; a line is plain
                from rich.text import Text

                self.description = Text.from_markup(description).plain

    def line(self, end: bool = False) -> str:
        with self._lock:
            what = f"{self.label} {self.description}".strip()
            seconds = time.monotonic() - self.start
            if end:
                return f"{what}: done in {seconds:.1f} s"
            if self.total:
                done = f"{self.completed:,.0f} of {self.total:,.0f} {self.unit}".rstrip()
                return f"{what}: {done} ({seconds:.0f} s)"
            return f"{what}: working ({seconds:.0f} s)"

    def _say(self, text: str) -> None:
        print(PREFIX + text, file=sys.stderr, flush=True)
        self.said = True
        _last_line[0] = time.monotonic()

    def _run(self) -> None:
        wait = max(SOONEST, FIRST_LINE - (time.monotonic() - _last_line[0]))
        while not self._stop.wait(wait):
            self._say(self.line())
            wait = EVERY

    def __enter__(self) -> PlainLines:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        if self.said and exc[0] is None:
            self._say(self.line(end=True))


@contextlib.contextmanager
def progress_bar(label: str, total: float | None, unit: str = "", *,
                 quiet: bool = False) -> Iterator[Update]:
    """Yield ``update(completed=None, advance=None, description=None, total=None,
    phase=False)``.

    ``total=None`` draws a spinner with the elapsed time (work of unknown size);
    ``phase=True`` starts such a phase, the last phase's count gone (a tournament's
    "writing the tables" is not "100 of 100 pairings").
    """
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    console = Console(stderr=True)
    if not quiet and not console.is_terminal:  # piped: plain lines instead of a bar
        with PlainLines(label, total, unit) as lines:
            yield lines.update
        return
    columns = [SpinnerColumn(), TextColumn(f"[bold]{label}[/] {{task.description}}"), BarColumn(),
               MofNCompleteColumn(), TextColumn(unit), TimeElapsedColumn()]
    if total is not None:
        columns += [TextColumn("left"), TimeRemainingColumn()]
    with Progress(*columns, console=console, transient=True,
                  disable=quiet or not console.is_terminal) as bar:
        task = bar.add_task("", total=total)

        def update(completed: float | None = None, advance: float | None = None,
                   description: str | None = None, total: float | None = None,
                   phase: bool = False) -> None:
            kw = {k: v for k, v in (("completed", completed), ("advance", advance),
                                    ("description", description), ("total", total))
                  if v is not None}
            if phase:
                bar.reset(task, total=None, description=description or "")
            bar.update(task, **kw)

        yield update
