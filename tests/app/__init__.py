"""Tests of stratus.app: the command line, the Python API, compare, sweeps and reports."""
