"""Waiting policies over fixed (reserved) capacity with an on-demand overflow (paper 000):
the queueing analysis."""
