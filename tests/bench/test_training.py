"""The training bench measures what it says: its warm-cache figure is a load, not a compile."""

from __future__ import annotations

from market.bench.training import compile_probe
from market.game import train_kernel


def test_compile_probe_on_the_warm_cache_loads_without_compiling(monkeypatch):
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    train_kernel.ensure_compiled()  # this process has loaded (or compiled and saved) the kernel
    probe = compile_probe(None)
    assert probe["compiled"] is False
    assert probe["ready"] > 0 and probe["import"] > 0
