"""Tests of the stratus core (stratus/*.py): the engine, its model and view, markets,
faults, estimators, the integer bound, results, parameters."""
