"""Helpers the test modules share: plain functions, classes and Hypothesis strategies
(fixtures stay in the conftest.py files). Imported as ``from tests.helpers.X import Y``;
under pytest the repository root is on sys.path (tests/ is a package), and worker
processes that multiprocessing spawns inherit that path, so they can unpickle what is
defined here."""
