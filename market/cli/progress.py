"""One progress bar for every command's long steps: rich, on stderr, gone when done.

Anything that can take longer than a second shows what it is doing, how far
it is and how long is left. The bar draws on stderr so ``--json`` output
stays clean, only on a terminal (a pipe or a log gets nothing), and is
transient: once the step ends it disappears, so an error after it is still
one line.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

Update = Callable[..., None]


@contextlib.contextmanager
def progress_bar(label: str, total: float | None, unit: str = "", *,
                 quiet: bool = False) -> Iterator[Update]:
    """Yield ``update(completed=None, advance=None, description=None, total=None)``.

    ``total=None`` draws a spinner with the elapsed time (work of unknown size).
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
    columns = [SpinnerColumn(), TextColumn(f"[bold]{label}[/] {{task.description}}"), BarColumn(),
               MofNCompleteColumn(), TextColumn(unit), TimeElapsedColumn()]
    if total is not None:
        columns += [TextColumn("left"), TimeRemainingColumn()]
    with Progress(*columns, console=console, transient=True,
                  disable=quiet or not console.is_terminal) as bar:
        task = bar.add_task("", total=total)

        def update(completed: float | None = None, advance: float | None = None,
                   description: str | None = None, total: float | None = None) -> None:
            kw = {k: v for k, v in (("completed", completed), ("advance", advance),
                                    ("description", description), ("total", total))
                  if v is not None}
            bar.update(task, **kw)

        yield update
