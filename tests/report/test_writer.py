"""The writer: markdown as GitHub renders it, every file written whole."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd

from market.report.section import Section
from market.report.writer import anchor, markdown_table, write_report


def test_markdown_tables_escape_pipes():
    df = pd.DataFrame({"a": ["x|y"], "b": [1]})
    assert markdown_table(df) == "| a | b |\n|---|---|\n| x\\|y | 1 |"


def test_anchors_are_githubs():
    assert anchor(1, "The first-trained bias") == "1-the-first-trained-bias"
    assert anchor(3, "Which equilibrium do the learners find?") == (
        "3-which-equilibrium-do-the-learners-find")


def test_write_report_writes_every_file_and_links_them(tmp_path):
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    s = Section(name="demo", title="A demo", question="Why?", experiment="We ran it.",
                answer="Because.", figures={"demo.png": fig},
                tables={"demo.csv": pd.DataFrame({"x": [1.5]})},
                display=[("shown", pd.DataFrame({"x": ["1.5"]}))], text_block="BUYER =",
                command="python run.py report --out d --only demo --seed 0")
    (tmp_path / "old.txt").write_text("left alone")
    paths = write_report(tmp_path, [s], "# Header")
    assert [p.name for p in paths] == ["demo.png", "demo.csv", "tests.csv", "timings.csv",
                                       "report.md"]  # tests.csv even with no test
    text = (tmp_path / "report.md").read_text()
    assert text.startswith("# Header")
    for piece in ("[A demo](#1-a-demo)", "## 1. A demo", "**Question.** Why?",
                  "![A demo](demo.png)", "```text\nBUYER =\n```", "| 1.5 |", "**Answer.** Because.",
                  "[demo.csv](demo.csv)", "python run.py report --out d --only demo --seed 0"):
        assert piece in text, piece
    assert pd.read_csv(tmp_path / "demo.csv")["x"].tolist() == [1.5]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["demo.csv", "demo.png", "old.txt",
                                                          "report.md", "tests.csv",
                                                          "timings.csv"]


def test_every_section_cites_its_literature_and_every_reference_is_cited():
    import importlib
    import re

    from market import report
    from market.report import references

    related = {name: importlib.import_module(f"market.report.{name}").RELATED
               for name in report.SECTIONS}
    assert all(len(text) > 150 for text in related.values())
    everything = " ".join(related.values())
    assert references.cited(everything) == list(references.REFERENCES)
    # every "Author (year)" or "Author year" the paragraphs name has its full reference (the
    # first author: a co-author's name, after "and" or a comma, is not a reference's key)
    named = set(re.findall(r"(?<!and )(?<!, )\b([A-ZÅ-Ž][a-zà-ž]+)(?: et al\.)?,? \(?(\d{4})",
                           everything))
    listed = {(r.split(",")[0], re.search(r"\((\d{4})\)", r).group(1))
              for r in references.REFERENCES}
    assert {n for n in named if n[0] in {s for s, _ in listed}} <= listed
    md = references.markdown(related["clock"])
    assert "Roth, A. E." in md and "Gode" not in md  # a section alone lists only its own
