"""``stratus report RESULTS_DIR -o OUT_DIR``: the papers' figures from a sweep, as one static
HTML page (``index.html``) with its PNGs beside it, written as a unit."""

from __future__ import annotations

import html
import sys
from pathlib import Path

from stratus.app.figures_ablations import ablation_figures
from stratus.app.figures_waiting import commitment_figures, waiting_figures
from stratus.base.errors import ConfigError

CSS = """body{font-family:Georgia,serif;max-width:1100px;margin:2em auto;color:#222;
line-height:1.4}h1{font-size:1.6em}h2{font-size:1.2em;border-bottom:1px solid #ccc;
margin-top:2em}figure{margin:1em 0}figure img{max-width:100%;border:1px solid #eee}
figcaption{font-size:.9em;color:#444}table{border-collapse:collapse;font-size:.85em;
margin:.6em 0}td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}
th{background:#f4f4f4}.lead{font-size:1.05em}code{font-size:.9em}.fail{color:#a00}.note{color:#850}"""


#: the replay figures in the paper's order
PAPER_ORDER = ("fig4-cost", "fig5-utilization", "table2-latency", "fargate", "fig6-ablation",
               "fig7-on-demand", "fig8-sensitivity")


def _in_paper_order(fig) -> int:
    return PAPER_ORDER.index(fig.name) if fig.name in PAPER_ORDER else len(PAPER_ORDER)


def _owned(name: str) -> bool:
    return name == "index.html" or (name.startswith("fig") and name.endswith(".png")) or \
        (name.startswith(("waiting-", "bill-vs-reserved-")) and name.endswith(".png"))


def _quiet(draw):
    """``draw`` without matplotlib's layout and legend warnings on stderr (a long label
    that tight_layout cannot fit, a group with nothing to label): the figure is drawn."""
    def run(path):
        import warnings

        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=UserWarning, module="matplotlib")
            warnings.filterwarnings("ignore", category=UserWarning, module="stratus")
            draw(path)
    return run


def _table(rows: list[dict]) -> str:
    if not rows:
        return ""
    cols = list(dict.fromkeys(k for r in rows for k in r))
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in cols)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(r.get(c, '')))}</td>" for c in cols)
                   + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def build(results: Path) -> tuple[dict, dict]:
    """The page and its figures as ``outputs.write_dir`` writers (name -> write(path)), and
    the document of what they hold. Nothing is drawn until the writers run."""
    from stratus.app import figures, report_lead
    from stratus.app.report_groups import comparable
    from stratus.app.sweep_store import read_rows

    skipped: dict[str, str] = {}
    df = read_rows(results, skipped)
    for name, why in skipped.items():
        print(f"stratus: warning: {name}: {why}; skipped", file=sys.stderr, flush=True)
    if df.empty:
        raise ConfigError(f"{results}: no result rows (run `stratus sweep` first)")
    ok, notes = comparable(df[df["status"] == "ok"])
    failed = df[df["status"] != "ok"]
    figs = (sorted(figures.replay_figures(ok) + ablation_figures(ok), key=_in_paper_order)
            + waiting_figures(ok) + commitment_figures(ok) if not ok.empty else [])
    notes += [n for f in figs for n in f.notes]  # HSpot beside task-per-instance
    lead = report_lead.lead(ok) if not ok.empty else []
    parts = ["<h1>Stratus sweep report</h1>"]
    if lead:
        parts.append('<ul class="lead">' + "".join(f"<li>{html.escape(x)}</li>" for x in lead)
                     + "</ul>")
    parts.append(f"<p>Results: <code>{html.escape(str(results))}"
                 f"</code>: {len(df)} cells, {len(ok)} ok, {len(failed)} failed. Every figure "
                 "shows the mean and spread over the windows (slices × seeds) of each trace, "
                 "never a single run; the paper's values sit beside ours only where the run "
                 "is the paper's setting (its workload, m4, its market), and each caption "
                 "says which.</p>")
    parts += [f'<p class="note">{html.escape(n)}</p>' for n in notes]
    parts += [f'<p class="note">Skipped {html.escape(n)}: {html.escape(w)}.</p>'
              for n, w in skipped.items()]
    files = {}
    for f in figs:
        parts.append(f"<h2>{html.escape(f.title)}</h2>")
        if f.draw is not None:
            png = f"{f.name}.png"
            files[png] = _quiet(f.draw)
            parts.append(f'<figure><img src="{png}" alt="{html.escape(f.title)}">'
                         f"<figcaption>{f.caption}</figcaption></figure>")
        else:
            parts.append(f"<p><small>{f.caption}</small></p>")
        parts.append(_table(f.table))
    if not failed.empty:
        parts.append("<h2>Failed cells</h2>")
        parts.append(_table([{"trace": r.trace_label, "options": r.options_json,
                              "error": r.error} for r in failed.itertuples()]))
    page = (f"<!doctype html><html lang=en><head><meta charset=utf-8><title>Stratus "
            f"report</title><style>{CSS}</style></head><body>{''.join(parts)}</body></html>")
    doc = {"figures": list(files), "sections": [f.title for f in figs],
           "tables": {f.name: f.table for f in figs}, "cells": len(df),
           "cells_ok": len(ok), "cells_failed": len(failed), "lead": lead, "notes": notes,
           "skipped_files": skipped}
    files["index.html"] = lambda path: path.write_text(page, encoding="utf-8")
    return doc, files


def write_report(results_dir: str, output: str, force: bool = False) -> dict:
    """The report of a sweep's results in ``output`` (new or empty; ``force`` replaces an
    earlier report): the page and its figures as one unit."""
    from stratus.app import outputs

    results = Path(results_dir)
    if not (results / "rows").is_dir():
        raise ConfigError(f"{results}: not a sweep's results directory (no rows/)")
    out = outputs.check_dir(output, "-o", [results], force, owned=_owned)
    doc, files = build(results)
    outputs.write_dir(out, files, owned=_owned)  # the page and its figures as one unit
    doc["report"] = str(out / "index.html")
    return doc


def report_text(doc: dict) -> str:
    from stratus.app.report import table

    parts = [*doc.get("lead", []), *(f"note: {n}" for n in doc.get("notes", []))]
    for name, rows in doc["tables"].items():
        if rows and name in ("fig4-cost", "table2-latency", "fig5-utilization", "fargate"):
            cols = list(dict.fromkeys(k for r in rows for k in r))
            parts.append(f"\n{name}")
            parts.append(table(cols, [[r.get(c, "") for c in cols] for r in rows],
                               align_left=2))
    parts.append(f"\nreport: {doc['report']}")
    return "\n".join(parts)
