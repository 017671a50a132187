"""The RL bench times the environments it names, each row marked against its target."""

from __future__ import annotations

import pytest

pytest.importorskip("gymnasium")

from market.bench import rl  # noqa: E402

#: one worker: the second test loads the environments' compiled step the first compiled (two
#: workers compiling it at once cost 25 s each after an edit, or on a fresh clone)
pytestmark = pytest.mark.xdist_group("rl")


def test_quick_section_rows_measure_real_steps():
    rows = {r.metric: r for r in rl.run(repeats=1, quick=True)}
    fast = rows["single environment, compiled opponent"]
    slow = rows["single environment, move by move (reference)"]
    assert fast.value > 0 and slow.value > 0 and fast.target is not None
    assert rows["speed-up of the compiled single environment"].value == pytest.approx(
        fast.value / slow.value)
    assert rows["vector environment, 1,024 rows"].target is not None


def test_a_timed_step_is_a_real_step():
    assert rl._single(True, 0.01) > 0 and rl._vector(8, 0.01) > 0
