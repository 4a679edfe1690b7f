"""Typed run specifications: one frozen dataclass per command, each option a field with
exactly one default and one validator. The CLI parses argv into a spec, a sweep builds its
cells' specs from TOML, and the Python API's keyword arguments are the fields; all three
meet here, so one cell has one canonical form and one key wherever it was written.

A validator takes what a user can write (a string from argv, a TOML or Python value) and
returns the canonical value, or raises ``Bad`` with what it takes; the spec turns that into
one ConfigError naming the option in the caller's terms (``--hours`` on the command line,
``grid[0].hours`` in a sweep config, ``hours`` in Python)."""

from stratus.app.spec.fields import (
    CATALOG_HELP,
    LABEL,
    MIN_TICK_S,
    Bad,
    Spec,
    cli_label,
    flag,
    labelled,
    names,
    number,
    numbers,
    opt,
    text,
)
from stratus.app.spec.live import LiveSpec
from stratus.app.spec.qos import QosRunSpec, QosSweepSpec, QosWorkloadOptions
from stratus.app.spec.replay import (
    WINDOW_KEYS,
    CloudSpec,
    CommitSpec,
    CompareSpec,
    EstimateSpec,
    ReplaySpec,
    SensitivitySpec,
    SpotPrices,
    WindowSpec,
    slice_plan,
)
from stratus.app.spec.share import (
    SHARE_SPECS,
    ShareDefectSpec,
    ShareOptions,
    ShareSimulateSpec,
    ShareSoloSpec,
    ShareSweepSpec,
)
from stratus.app.spec.waiting import AdviseSpec, AnalyzeSpec, PoolOptions, ServerSpec, WaitingSpec

__all__ = ["CATALOG_HELP", "LABEL", "MIN_TICK_S", "Bad", "Spec", "cli_label", "flag",
           "labelled", "names", "number", "numbers", "opt", "text", "WINDOW_KEYS",
           "CloudSpec", "CommitSpec", "CompareSpec", "EstimateSpec", "ReplaySpec", "SensitivitySpec",
           "SpotPrices", "WindowSpec", "slice_plan", "SHARE_SPECS", "ShareDefectSpec",
           "ShareOptions", "ShareSimulateSpec", "ShareSoloSpec", "ShareSweepSpec",
           "AdviseSpec", "AnalyzeSpec", "PoolOptions", "ServerSpec", "WaitingSpec",
           "QosRunSpec", "QosSweepSpec", "QosWorkloadOptions", "LiveSpec", "SPECS"]

#: every command's spec, by the command's name
SPECS: dict[str, type[Spec]] = {s.command: s for s in (
    ReplaySpec, CompareSpec, SensitivitySpec, EstimateSpec, WaitingSpec, AdviseSpec,
    CommitSpec,
    AnalyzeSpec, *SHARE_SPECS.values(), QosRunSpec, QosSweepSpec, LiveSpec)}
