"""Tests of the project as a whole: golden results, the README and examples, the
benchmarks, the import layers."""
