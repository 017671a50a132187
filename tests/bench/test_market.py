"""The market bench measures what it says: negotiations happen, memory is read from the child."""

from __future__ import annotations

from market.bench.market import _periods, memory


def test_periods_count_real_negotiations_and_time():
    per_step, negotiations = _periods(400, repeats=2)
    assert len(per_step) == 2 and all(t > 0 for t in per_step)
    # the first step of a period pairs all 200 Sellers with 200 Buyers, later steps fewer
    assert all(200 <= n <= 200 * 10 for n in negotiations)


def test_memory_is_measured_in_a_fresh_process():
    small = memory(200)
    assert small["agent_rows"] == 2 * 200  # 200 traders, two periods of agent records
    assert 0 < small["base_kib"] <= small["peak_kib"] < 1024 * 1024
