"""What a report section is given (:class:`Context`) and what it hands back (:class:`Section`).

A section runs one experiment with the project's own modules (training,
exact evaluation, the market, batch runs) and returns everything the writer
needs, held in memory: its text (question, experiment, answer, why), its
figures (open matplotlib figures), its tables (DataFrames written as CSV) and
a few headline numbers for ``--json``. Nothing touches the output folder
until every requested section has finished, so a failure leaves no report
half-written.

Seeds: every random choice of a section flows from the report's seed through
:meth:`Context.seed_for`, keyed by the section's *name* (not its position),
so ``--only NAME`` reproduces exactly the numbers of that section in the
full report.
"""

from __future__ import annotations

import contextlib
import os
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from market.errors import RunFailed

if TYPE_CHECKING:  # annotations only: ``run.py --help`` lists the sections without pandas
    import pandas as pd

#: master seeds a headline is checked at (:meth:`Context.masters`)
MASTERS = 3

#: ``update(completed=None, advance=None, description=None, total=None)`` of a progress bar
Update = Callable[..., None]
#: ``progress(label, total, unit)``: a context manager yielding an :data:`Update`
ProgressFactory = Callable[[str, float | None, str], contextlib.AbstractContextManager[Update]]


@contextlib.contextmanager
def no_progress(label: str, total: float | None, unit: str = "") -> Iterator[Update]:
    """The silent default: sections report progress, nobody draws it."""
    del label, total, unit
    yield lambda **_: None


@dataclass(frozen=True)
class Context:
    """What every section gets: the seed, the size of the run, where progress goes.

    ``quick``: few seeds and small markets (a smoke test of the whole report,
    about 20 s on an idle 2-core machine); the full report is the one to read. ``processes``:
    worker processes for market batches (results do not depend on it).
    ``out``: the output folder as the user named it (for the commands the
    report prints).
    """

    seed: int = 0
    quick: bool = False
    processes: int = 1
    progress: ProgressFactory = no_progress
    out: str = "out/report"

    def seed_for(self, name: str, *keys: int) -> int:
        """A seed for ``name`` (a section, or a part of one) and integer ``keys``.

        ``SeedSequence(seed, spawn_key=(crc32(name), *keys))``: independent
        streams per name and keys, the same whichever sections run.
        """
        seq = np.random.SeedSequence(self.seed, spawn_key=(zlib.crc32(name.encode()), *keys))
        return int(seq.generate_state(1, np.uint32)[0] >> np.uint32(1))

    def masters(self, n: int = MASTERS) -> list[Context]:
        """This context and the next ``n - 1`` master seeds' (``seed + 1``, ...): a headline
        holds only if it holds at each, or is reported as its distribution over them."""
        return [replace(self, seed=self.seed + k) for k in range(n)]

    def command(self, name: str) -> str:
        """The command that reproduces section ``name`` alone, into a folder of its own (so it
        does not replace the whole report's ``report.md``)."""
        quick = " --quick" if self.quick else ""
        return (f"python run.py report --out out/report-{name} --only {name} "
                f"--seed {self.seed}{quick}")

    def pick(self, full: Any, quick: Any) -> Any:
        """``quick`` in a quick run, else ``full``: the one switch of a section's sizes."""
        return quick if self.quick else full

    def batch(self, label: str, specs: Sequence[Any], per_step: bool = False) -> Any:
        """Market runs through the batch runner (:func:`market.runs.batch.run_batch`, its
        process pool and per-run seeds), with a progress bar; kept in memory, no files.

        Raises :class:`~market.errors.RunFailed` if a run failed: a report is not written
        from part of its runs.
        """
        from market.runs.batch import run_batch

        with self.progress(label, len(specs), "market runs") as update:
            res = run_batch(specs, None, processes=min(self.processes, len(specs)),
                            per_step=per_step,
                            on_result=lambda _o, done, _total: update(completed=done))
        if res.failed:
            first = res.table.loc[res.table["error"].notna(), "error"].iloc[0]
            raise RunFailed(f"{label}: {res.failed} market run(s) failed ({first})")
        return res


@dataclass
class Section:
    """One answered question, in memory until the writer writes it.

    ``figures``: file name -> open matplotlib figure (PNG); ``tables``: file
    name -> DataFrame (CSV, the numbers in full); ``display``: captioned
    tables of formatted text printed in the report as markdown;
    ``text_block``: preformatted text shown as is (the legacy terminal view);
    ``numbers``: headline figures for ``--json``. ``why``: the explanation,
    where the question asks for one. ``timings``: what took how long, kept out
    of everything but ``timings.csv``.
    """

    name: str
    title: str
    question: str
    experiment: str
    answer: str
    why: str = ""
    figures: dict[str, Any] = field(default_factory=dict)
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    display: list[tuple[str, pd.DataFrame]] = field(default_factory=list)
    text_block: str = ""
    numbers: dict[str, Any] = field(default_factory=dict)
    command: str = ""
    seconds: float = 0.0
    #: how long parts of it took (label -> seconds): written to timings.csv only, so that
    #: every other file depends on the seed alone
    timings: dict[str, float] = field(default_factory=dict)
    #: every test the section ran (:func:`market.report.stats.family`): confirmatory ones
    #: answer its question and are Holm-corrected together; the rest explore
    tests: list[Any] = field(default_factory=list)
    #: what the literature says and how these numbers compare (with citations)
    related: str = ""

    def files(self) -> list[str]:
        """Every file this section writes, figures first."""
        return [*self.figures, *self.tables]


def cores() -> int:
    """Cores this process may use (the default number of batch processes)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)
