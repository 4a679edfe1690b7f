"""Deadline admission control (paper 001: QoPS, VQoPS, DVQoPS)."""
