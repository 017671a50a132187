"""Many runs: round-robin tournaments of strategies, batch sweeps of the market, Dask.

Every run draws its seed from the batch's seed and its own index, so the
same command gives the same table whatever the number of processes or the
scheduler; results go to CSV and Parquet, written atomically.
"""
