"""Writing a report: ``report.md`` with its figures (PNG) and tables (CSV), all atomically.

The sections have already run and hold everything in memory; this module
only lays them out and writes them. Every file goes through
:mod:`market.files` (a temporary name, renamed into place), figures and
tables first and ``report.md`` last, so the markdown never points at a file
that is not there and a crash leaves no half-written file. An existing
folder is fine: the report's files are replaced, other files are left alone.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from market.files import all_or_nothing, save_figure, write_text
from market.report import references
from market.report.section import Section
from market.report.stats import p_text

#: figures are for reading on a page, not for print: small files
DPI = 90
REPORT = "report.md"
#: how long each part took: the one output that depends on more than the seed
TIMINGS = "timings.csv"
#: every test of every section, confirmatory and exploratory
TESTS = "tests.csv"


def markdown_table(df: pd.DataFrame) -> str:
    """A DataFrame of already formatted cells as a GitHub markdown table."""
    cols = [str(c) for c in df.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for row in df.itertuples(index=False):
        lines.append("| " + " | ".join(str(v).replace("|", "\\|") for v in row) + " |")
    return "\n".join(lines)


def section_markdown(number: int, s: Section) -> str:
    """One section: question, experiment, figures, tables, answer, why, command."""
    parts = [f"## {number}. {s.title}", "", f"**Question.** {s.question}", "",
             f"**Experiment.** {s.experiment}", ""]
    for name in s.figures:
        parts += [f"![{s.title}]({name})", ""]
    if s.text_block:
        parts += ["```text", s.text_block.rstrip(), "```", ""]
    for caption, table in s.display:
        parts += [f"*{caption}*", "", markdown_table(table), ""]
    parts += [f"**Answer.** {s.answer}", ""]
    if s.why:
        parts += [f"**Why.** {s.why}", ""]
    if s.tests:
        parts += ["*Tests: confirmatory ones answer the question (Holm-corrected together); "
                  "exploratory ones are not corrected and are not stated as findings alone*",
                  "", markdown_table(tests_display(s.tests)), ""]
    if s.related:
        parts += [f"**Related work.** {s.related}", ""]
    files = ", ".join(f"[{f}]({f})" for f in s.tables)
    if files:
        parts += [f"Tables: {files}.", ""]
    parts += ["Reproduce this section alone:", "", "```bash", s.command, "```", ""]
    return "\n".join(parts)


def report_markdown(sections: Sequence[Section], header: str) -> str:
    """The whole report: a header, a table of contents, the sections in order."""
    toc = [f"{i}. [{s.title}](#{anchor(i, s.title)})" for i, s in enumerate(sections, 1)]
    body = [section_markdown(i, s) for i, s in enumerate(sections, 1)]
    related = " ".join(s.related for s in sections)
    if related:
        body.append(references.markdown(related))
    return "\n".join([header.rstrip(), "", *toc, "", *body]).rstrip() + "\n"


def tests_display(tests: Sequence[Any]) -> pd.DataFrame:
    """A section's tests as formatted cells: estimate, p, Holm's p, verdict, and the
    smallest effect the design would have found."""
    rows = []
    for t in tests:
        d, f = t.diff.diff, f"{{:+,.{t.digits}f}}"
        mde = d.detectable()
        rows.append({
            "test": t.label, "kind": "confirmatory" if t.confirmatory else "exploratory",
            "estimate (95% interval)": f"{f.format(d.value)} ({f.format(d.lo)} to "
                                       f"{f.format(d.hi)})",
            "p": p_text(t.diff.p_welch).removeprefix("p ").removeprefix("= "),
            "Holm p": (p_text(t.diff.p_holm).removeprefix("p ").removeprefix("= ")
                       if math.isfinite(t.diff.p_holm) else ""),
            "verdict": t.diff.verdict,
            "detectable (80% power)": (f"±{abs(mde):,.{t.digits}f}" if math.isfinite(mde)
                                       else ""),
        })
    return pd.DataFrame(rows)


def tests_table(sections: Sequence[Section]) -> pd.DataFrame:
    """Every section's tests, one row each."""
    return pd.DataFrame([t.row(s.name) for s in sections for t in s.tests],
                        columns=["section", "test", "kind", "estimate", "lo", "hi", "n", "p",
                                 "p_holm", "verdict", "detectable"])


def anchor(number: int, title: str) -> str:
    """GitHub's anchor of the heading ``## {number}. {title}``."""
    text = f"{number}. {title}".lower()
    kept = "".join(ch for ch in text if ch.isalnum() or ch in " -_")
    return kept.replace(" ", "-")


def csv_text(df: pd.DataFrame) -> str:
    buf = io.StringIO()
    df.to_csv(buf, index=False, float_format="%.6g")
    return buf.getvalue()


def timings_table(sections: Sequence[Section], seconds: float) -> pd.DataFrame:
    """What took how long: each section, its own timings, and the whole run (seconds)."""
    rows = [("report", "the whole run", seconds)]
    for s in sections:
        rows.append((s.name, "the section", s.seconds))
        rows += [(s.name, what, t) for what, t in s.timings.items()]
    return pd.DataFrame(rows, columns=["section", "what", "seconds"])


def write_report(out: str | Path, sections: Sequence[Section], header: str,
                 seconds: float = 0.0) -> list[Path]:
    """Write every section's figures and tables, ``timings.csv``, then ``report.md``; return
    the paths. Every file but ``timings.csv`` depends on the seed alone.

    All of them appear together or, if one cannot be written, none does."""
    out = Path(out)
    written: list[Path] = []
    with all_or_nothing():
        for s in sections:
            for name, fig in s.figures.items():
                written.append(save_figure(fig, out / name, dpi=DPI))
            for name, df in s.tables.items():
                written.append(write_text(csv_text(df), out / name))
        written.append(write_text(csv_text(tests_table(sections)), out / TESTS))
        written.append(write_text(csv_text(timings_table(sections, seconds)), out / TIMINGS))
        written.append(write_text(report_markdown(sections, header), out / REPORT))
    return written
