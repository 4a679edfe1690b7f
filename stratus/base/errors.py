"""The project's exceptions. Every user-facing failure is one of these, with a message
that names the file, row, field or decision at fault; the CLI prints it without a traceback.
``shown`` is how a message quotes a value (never a numpy repr)."""


class StratusError(Exception):
    """Base class: an error the CLI reports as one line."""


class ConfigError(StratusError):
    """A bad option, name or parameter."""


class TraceError(StratusError):
    """A workload or price trace that cannot be read as given (names file, row, field)."""


class DecisionError(StratusError):
    """A scheduler returned a decision the engine refuses: a policy bug, never repaired."""


def plain(value):
    """``value`` with numpy scalars and arrays (inside lists, tuples and dicts too) made
    the Python numbers, lists and strings they hold; anything else as it is."""
    if isinstance(value, (list, tuple)):
        return type(value)(plain(v) for v in value)
    if isinstance(value, dict):
        return {plain(k): plain(v) for k, v in value.items()}
    if type(value).__module__ == "numpy" and hasattr(value, "tolist"):  # scalar or array
        return value.tolist()
    return value


def shown(value, limit: int | None = None) -> str:
    """How a message shows a value a user gave: its Python repr (quotes show a string's
    spaces), with numpy values as plain numbers (``inf``, ``1.5``, never
    ``np.float64(inf)``); cut to ``limit`` characters."""
    text = repr(plain(value))
    if limit is not None and len(text) > limit:
        text = text[:limit - 3] + "..."
    return text
