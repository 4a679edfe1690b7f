"""The project's exceptions. Every user-facing failure is one of these, with a message
that names the file, row, field or decision at fault; the CLI prints it without a traceback."""


class StratusError(Exception):
    """Base class: an error the CLI reports as one line."""


class ConfigError(StratusError):
    """A bad option, name or parameter."""


class TraceError(StratusError):
    """A workload or price trace that cannot be read as given (names file, row, field)."""


class DecisionError(StratusError):
    """A scheduler returned a decision the engine refuses: a policy bug, never repaired."""
