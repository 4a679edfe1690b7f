"""The ranges time options take, in one place: the CLI, sweep configs, the Python API and
the engine's own config refuse alike (docs/decisions.md, "Time options have ranges").

A time outside these is no experiment anyone runs: a one-hour scheduling tick already
leaves every task waiting half an hour on average, and a trillion-second one reports
latencies of a billion; past 1e11 s (about 3,000 years) from the origin, doubles no longer
keep a task's milliseconds apart from its submit time."""

MIN_TICK_S = 1.0  # a finer tick makes a day's replay millions of scheduling rounds
MAX_TICK_S = 3600.0  # an hour: the coarsest scheduling interval a batch study uses
MAX_HOURS = 87_600.0  # ten years: a window, a warm-up, a guard (the longest logs span years)
MAX_SECONDS = MAX_HOURS * 3600.0  # a duration in seconds: a wait threshold, a slot
MAX_SPINUP_S = 3600.0  # an instance that takes longer than an hour to boot is broken
MAX_INSTANT_S = 1e11  # |a point in trace or price-history time| (traces.synthetic's too)
