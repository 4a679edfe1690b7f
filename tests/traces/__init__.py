"""Tests of stratus.traces (traces/): the schema, the loaders, the synthetic workloads,
conversion."""
