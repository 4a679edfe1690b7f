"""Tests of stratus.sharing (the shared cluster, chargeback)."""
