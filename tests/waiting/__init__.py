"""Tests of stratus.waiting: waiting policies, the reserved pool, spot speculation."""
