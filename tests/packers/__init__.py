"""Tests of stratus.packers (packers/)."""
