"""Hypothesis strategies for scheduler names with options (issue 35): ``NAME?KEY=VALUE&...``
with a registered name's factory options and its parts' ``KEY.NAME`` parameters, each
value drawn from what it declares (``Option``: a flag or a word; ``Param``: a type and a
range or choices), valid or, at most one per string, not. Shared by the registry's property
test and the CLI fuzz."""

from __future__ import annotations

import math

from hypothesis import strategies as st

from stratus.app.registry import get_spec, scheduler_names
from stratus.policy.params import Param, declared

BOOL_WORDS = ["true", "false", "1", "0", "yes", "no", "on", "off", "True", "OFF"]
JUNK = ["x", "maybe", "1,2", "[1]", "0x10"]  # no '&' or '=': those are the syntax


def _fmt(x: float) -> st.SearchStrategy[str]:
    """A float as a user may write it: Python's repr, %g, or with a plus or spaces."""
    return st.sampled_from([repr(x), f"{x:g}", f" {x!r}"])


def _option_values(opt, valid: bool) -> st.SearchStrategy[str]:
    if isinstance(opt.default, bool):
        return st.sampled_from(BOOL_WORDS) if valid else st.sampled_from(["maybe", "2", "-1",
                                                                          "none", "tru"])
    if opt.choices:
        return st.sampled_from(list(opt.choices)) if valid else \
            st.sampled_from(["nosuch", opt.choices[0].upper() + "x", "1", "none"])
    if isinstance(opt.default, int):  # a plug-in's number option: any whole number
        return st.integers(-5, 50).map(str) if valid else st.sampled_from(["1.5", "x", "nan"])
    if isinstance(opt.default, float):
        return st.floats(-1e6, 1e6).map(repr) if valid else st.sampled_from(["x", "nan", "inf"])
    return st.text("abcdefghij-", min_size=1, max_size=8) if valid else st.nothing()


def param_values(p: Param, valid: bool) -> st.SearchStrategy[str]:
    """Text of a value ``p`` takes (``valid``), or of one it refuses."""
    none = ["none", "None"] if p.none else []
    if p.kind is bool:
        return st.sampled_from(BOOL_WORDS + none) if valid else \
            st.sampled_from(["maybe", "2", "-1", "tru", *(["none"] if not p.none else [])])
    if p.choices:
        words = [str(c) for c in p.choices]
        if valid:
            extra = [f"{c}.0" for c in p.choices if isinstance(c, int)]
            return st.sampled_from(words + extra + none)
        bad = ["nosuch", "-1", "2", "0.5", "nan", *JUNK[:2]] if p.kind is int else \
            ["nosuch", words[0].upper() + "x", "1"]
        return st.sampled_from([b for b in bad if b not in words] +
                               ([] if p.none else ["none"]))
    if p.kind in (int, float):
        return _numbers(p, valid, none)
    return st.text("abcdefghij-", min_size=1, max_size=8) if valid else st.nothing()


def _numbers(p: Param, valid: bool, none: list[str]) -> st.SearchStrategy[str]:
    lo = -1e9 if p.low is None else p.low
    hi = lo + 1e9 if p.high is None else p.high
    if valid:
        if p.kind is int:
            ints = st.integers(math.ceil(lo) + (p.low_open and lo == int(lo)),
                               min(math.floor(hi), 10**6))
            out = st.one_of(ints.map(str), ints.map(lambda k: f"{k}.0"),
                            st.just(str(10**25)) if p.high is None else ints.map(str))
        else:
            edges = [x for x, ok in ((lo, not p.low_open), (hi, not p.high_open)) if ok]
            inside = st.floats(lo, hi, exclude_min=p.low_open, exclude_max=p.high_open,
                               allow_nan=False, allow_infinity=False)
            out = st.one_of(inside.flatmap(_fmt), st.sampled_from([repr(x) for x in edges])
                            if edges else inside.map(repr))
        return st.one_of(out, st.sampled_from(none)) if none else out
    bad = ["nan", "inf", "-inf", "1e400", *JUNK]
    if p.low is not None:
        bad += [repr(p.low)] if p.low_open else []
        bad += [repr(p.low - 1), repr(p.low - 1e-3 * max(1.0, abs(p.low)))]
    if p.high is not None:
        bad += [repr(p.high)] if p.high_open else []
        bad += [repr(p.high + 1), repr(p.high * 2 + 1)]
    if p.kind is int:
        bad += ["1.5", "2.25", "1e-3"]
    if not p.none:
        bad += ["none"]
    return st.sampled_from(bad)


def _parts_params(name: str) -> dict[str, Param]:
    """``KEY.NAME`` -> its declaration, for the scheduler ``name``'s parts."""
    sched = get_spec(name).factory()
    if not hasattr(sched, "parts"):
        return {}
    return {f"{k}.{n}": p for k, part in sched.parts().items()
            for n, p in declared(part).items()}


@st.composite
def option_strings(draw, names: list[str] | None = None, bad_rate: float = 0.5):
    """(text, bad): a scheduler name with options and parameters, and the key of the one
    item it holds that must be refused (its value, or the key itself), or None."""
    name = draw(st.sampled_from(names or scheduler_names()))
    spec = get_spec(name)
    items: dict[str, str] = {}
    for key in draw(st.lists(st.sampled_from(sorted(spec.options)), unique=True)
                    if spec.options else st.just([])):
        items[key] = draw(_option_values(spec.options[key], True))
    base = f"{name}?{'&'.join(f'{k}={v}' for k, v in items.items())}" if items else name
    params = _parts_params(base)
    for key in draw(st.lists(st.sampled_from(sorted(params)), unique=True, max_size=4)
                    if params else st.just([])):
        items[key] = draw(param_values(params[key], True))
    bad = None
    if draw(st.floats(0, 1)) < bad_rate:
        kinds = ["option-key", "param-key", "part-key"]
        kinds += ["option"] * 2 if spec.options else []
        kinds += ["param"] * 3 if params else []
        kind = draw(st.sampled_from(kinds))
        if kind == "option":
            bad = draw(st.sampled_from(sorted(spec.options)))
            items[bad] = draw(_option_values(spec.options[bad], False))
        elif kind == "param":
            bad = draw(st.sampled_from(sorted(params)))
            items[bad] = draw(param_values(params[bad], False))
        elif kind == "option-key":
            bad = draw(st.sampled_from(["nope", "packing", "dim", "threshold"]))
        elif kind == "param-key":
            bad = draw(st.sampled_from(["nope.x", "packer.nope", "clearing.nope",
                                        "scaler.unit", "migrator.dim"]))
        else:
            bad = draw(st.sampled_from(sorted(params))).partition(".")[0] + ".nope" \
                if params else "scaler.nope"
        if kind in ("option-key", "param-key", "part-key"):
            if bad in items or bad in spec.options or bad in params:
                bad = None  # drawn a real key: then no bad item
            else:
                items[bad] = draw(st.sampled_from(["1", "true", "x"]))
    order = draw(st.permutations(list(items)))
    text = f"{name}?{'&'.join(f'{k}={items[k]}' for k in order)}" if items else name
    return text, bad
