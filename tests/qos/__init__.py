"""Tests of stratus.qos (QoPS, VQoPS, DVQoPS)."""
