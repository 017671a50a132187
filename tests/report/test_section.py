"""Seeds and commands of a section: the same numbers whichever sections run."""

from __future__ import annotations

from market.report.section import Context


def test_a_seed_depends_on_the_report_seed_the_name_and_the_keys_only():
    ctx = Context(seed=3)
    assert ctx.seed_for("bias", 1) == Context(seed=3, quick=True).seed_for("bias", 1)
    seeds = {ctx.seed_for("bias", 1), ctx.seed_for("bias", 2), ctx.seed_for("sizes", 1),
             Context(seed=4).seed_for("bias", 1)}
    assert len(seeds) == 4
    assert all(0 <= s < 2**31 for s in seeds)


def test_the_command_reproduces_one_section():
    ctx = Context(seed=7, quick=True, out="docs/pages/report")
    assert ctx.command("clock") == ("python run.py report --out out/report-clock --only clock "
                                    "--seed 7 --quick")
    assert ctx.pick(1, 2) == 2 and Context().pick(1, 2) == 1
