"""What the papers report, for the report to put beside our numbers. Each value cites its
place in the paper; values the text gives only as savings are converted, and say so."""

from __future__ import annotations

#: the paper's trace names for ours (Stratus §4.2)
TRACE_OF = {"google": "Google", "twosigma": "TwoSigma"}

#: the four schedulers of Stratus Fig. 4 (§4.3)
FIG4_SET = ("stratus", "fleet", "hotspot", "scloud")

# Stratus §5.1: "Stratus outperforms HSpot by reducing the cloud bill by 25% (Google) and 31%
# (TwoSigma) ... reduces cost by 44% (Google) and 17% (TwoSigma) compared to SCloud ...
# reduces the cloud bill of Fleet by 17% (Google) and 22% (TwoSigma)".
SAVING_VS = {"Google": {"hotspot": 0.25, "scloud": 0.44, "fleet": 0.17},
             "TwoSigma": {"hotspot": 0.31, "scloud": 0.17, "fleet": 0.22}}


def fig4_normalized(trace: str) -> dict[str, float]:
    """Fig. 4's bars (cost over the most expensive of the four), derived from §5.1's savings:
    cost_x = cost_stratus / (1 - saving_x)."""
    sav = SAVING_VS.get(trace)
    if not sav:
        return {}
    cost = {"stratus": 1.0, **{k: 1.0 / (1.0 - v) for k, v in sav.items()}}
    top = max(cost.values())
    return {k: round(v / top, 3) for k, v in cost.items()}


#: Fig. 5 / §5.1: Stratus's constraining-resource utilization (VCores Google, memory TwoSigma)
FIG5_STRATUS = {"Google": 0.86, "TwoSigma": 0.79}

#: Table 2 (§5.1): normalized job latency, (p50, p95)
TABLE2 = {"Google": {"stratus": (1.3, 3.2), "fleet": (1.2, 3.1), "hotspot": (2.2, 7.0),
                     "scloud": (2.5, 11.4)},
          "TwoSigma": {"stratus": (1.1, 1.6), "fleet": (1.0, 1.4), "hotspot": (1.1, 1.5),
                       "scloud": (1.2, 2.0)}}

#: Fig. 6 / §5.2: how much less Stratus costs than SCloud after each added feature
FIG6_CHAIN = ("scloud", "scloud+pack", "scloud+pack+scale", "scloud+pack+scale+clear")
FIG6_SAVING = {"Google": {"scloud": 0.44, "scloud+pack": 0.17, "scloud+pack+scale": 0.09,
                          "scloud+pack+scale+clear": 0.08},
               "TwoSigma": {"scloud": 0.17, "scloud+pack": 0.11, "scloud+pack+scale": 0.08,
                            "scloud+pack+scale+clear": 0.07}}

#: Fig. 7 / §5.3: on-demand only, Stratus's saving over the others ranges over
FIG7_SAVING_RANGE = {"Google": (0.10, 0.29), "TwoSigma": (0.14, 0.25)}

#: Fig. 8 / §5.4.2: the saving of instance clearing, 1 - cost(stratus)/cost(no clearing):
#: "31% (Google) and 14% (TwoSigma) lower cost at h = 0.01"; at h = 1 no-clearing costs
#: "4% (Google) and 3% (TwoSigma) more"; "at h = 100 ... comparable"
FIG8_CLEARING_SAVING = {"Google": {0.01: 0.31, 1.0: 1 - 1 / 1.04, 100.0: 0.0},
                        "TwoSigma": {0.01: 0.14, 1.0: 1 - 1 / 1.03, 100.0: 0.0}}

#: §5.1 (Fargate): its daily cost over HSpot's
FARGATE_OVER_HOTSPOT = 4.4


#: the generators that stand for the paper's workloads (Stratus §4.2), and the formats of
#: the real traces it ran
GENERATOR_OF = {"google": "Google", "twosigma": "TwoSigma"}
FORMAT_OF = {"google2011": "Google"}
#: the paper's instance types (§4.1, Fig. 3c)
CATALOG = "m4"
#: options that take a run out of the paper's setting when set (the paper rents only spot
#: or only on-demand instances, with no commitment, waiting policy or injected faults)
OFF_SETTING = ("reserved", "savings_plan", "waiting", "faults")


def setting(spec: dict, market: str) -> tuple[str | None, str]:
    """(the paper's trace, "") when a run of canonical ``spec`` is the paper's setting for
    a figure at ``market``: the workload family (by its generator or format, never by the
    label a user gave it), the m4 catalog, that market, nothing the paper did not have;
    else (None, why not)."""
    trace = str(spec.get("trace") or "")
    family = (GENERATOR_OF.get(trace[len("synthetic:"):].partition("?")[0])
              if trace.startswith("synthetic:") else FORMAT_OF.get(spec.get("format") or ""))
    if family is None:
        return None, f"{trace} is not a workload the paper ran (synthetic:google, " \
                     "synthetic:twosigma or a google2011 trace)"
    catalog = spec.get("catalog") or CATALOG
    if catalog != CATALOG:
        return None, f"catalog {catalog}, the paper's is {CATALOG}"
    if (spec.get("market") or "spot") != market:
        return None, f"market {spec.get('market')}, the figure's is {market}"
    off = [k for k in OFF_SETTING if spec.get(k)]
    if off:
        return None, ", ".join(f"--{k.replace('_', '-')}" for k in off) + " set"
    return family, ""


def setting_text(family: str, market: str) -> str:
    """The paper's setting in words, for a caption."""
    return f"the paper's {family} workload on {CATALOG} at {market} prices (Stratus §4.1-4.2)"
