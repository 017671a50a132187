"""Figures written to files: a training run's history, a market run, a batch's results.

matplotlib (Agg) only, saved atomically through :mod:`market.files`; the
browser view has its own panels in :mod:`market.view`.
"""
