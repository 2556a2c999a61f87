"""OUT/report.html, OUT/report.json and one PNG per figure, across every capture in OUT
(``wirefall batch``; the numbers are ``analyzer.batch.summary``'s).

Each figure is a box plot of one page figure (page load time, TTFB, packets, bytes, request and
response header compression): one box per group, the series (protocol by default) in colour,
the category (the condition by default) on the x axis.  The boxes are drawn from the table's own
numbers (median, quartiles, min and max as whiskers), so figure and table cannot disagree.
Text from captures and manifests reaches the figures through ``html_text`` and the page through
``html.escape``.
"""
from __future__ import annotations

import html
import json
import os
from pathlib import Path
from typing import Any

from wirefall.analyzer.safetext import html_text

PALETTE = ["#4C78A8", "#F58518", "#54A24B", "#E45756", "#72B7B2", "#B279A2", "#FF9DA6", "#9D755D", "#BAB0AC", "#EECA3B"]


def _fmt(v, unit: str = "") -> str:
    if v is None:
        return "–"
    if unit == "s":
        return f"{v * 1000:,.1f} ms"
    if unit == "B" or (isinstance(v, float) and v.is_integer() and abs(v) >= 10):
        return f"{v:,.0f}"
    if abs(v) < 1.5 and not float(v).is_integer():
        return f"{100 * v:.1f} %"
    return f"{v:,.1f}"


def box_figure(summary: dict[str, Any], metric: dict[str, str]):
    import plotly.graph_objects as go

    key, unit = metric["key"], metric["unit"]
    scale = 1000.0 if unit == "s" else (100.0 if key.endswith("compression") else 1.0)
    fig = go.Figure()
    for i, s in enumerate(summary["series"]):
        gs = [g for g in summary["groups"] if g["series"] == s and g["metrics"][key]["n"]]
        if not gs:
            continue
        ms = [g["metrics"][key] for g in gs]
        fig.add_trace(go.Box(
            name=html_text(s), x=[html_text(g["category"]) for g in gs],
            q1=[m["q1"] * scale for m in ms], median=[m["median"] * scale for m in ms], q3=[m["q3"] * scale for m in ms],
            lowerfence=[m["min"] * scale for m in ms], upperfence=[m["max"] * scale for m in ms],
            marker_color=PALETTE[i % len(PALETTE)], hoverinfo="y+name",
        ))
    axis = {"s": "ms", "B": "bytes"}.get(unit, "% of decoded" if key.endswith("compression") else "")
    title = f"{metric['label']} — median, quartiles, min–max per {html_text(' × '.join(summary['group_by']))}"
    fig.update_layout(title={"text": title, "font": {"size": 15}}, boxmode="group", template="plotly_white",
                      width=1000, height=480, margin={"l": 70, "r": 20, "t": 60, "b": 80},
                      yaxis_title=axis, xaxis_title=html_text(" · ".join(summary["group_by"][1:]) or ""),
                      legend_title_text=html_text(summary["group_by"][0]))
    return fig


def _table(headers: list[str], rows: list[list[str]]) -> str:
    # (html_text: markup escaped and control / bidi characters shown as escapes — a U+202E in a
    # capture's file name reversed how it read; html.escape kept them raw)
    h = "".join(f"<th>{html_text(x)}</th>" for x in headers)
    body = "".join("<tr>" + "".join(f"<td>{html_text(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{h}</tr></thead><tbody>{body}</tbody></table>"


def metric_table(summary: dict[str, Any], metric: dict[str, str]) -> str:
    key, unit = metric["key"], metric["unit"]
    rows = []
    for g in summary["groups"]:
        m = g["metrics"][key]
        rows.append([g["series"], g["category"], str(m["n"]), _fmt(m["median"], unit), _fmt(m["q1"], unit), _fmt(m["q3"], unit),
                     _fmt(m["min"], unit), _fmt(m["max"], unit)])
    return _table([summary["group_by"][0], " · ".join(summary["group_by"][1:]) or "group", "n", "median", "q1", "q3", "min", "max"], rows)


def whitepaper_table(summary: dict[str, Any]) -> str:
    base = summary["baseline"]
    heads = ["condition"] + [f"{s} PLT (median)" + ("" if s == base else f" / speedup vs {base}" if base else "") for s in summary["series"]]
    rows = []
    for r in summary["whitepaper"]:
        cells = [r["category"]]
        for s in summary["series"]:
            v = _fmt(r["page_load_time_median"][s], "s")
            if base and s != base:
                sp = r["speedup"].get(s)
                v += " / " + ("–" if sp is None else f"{100 * sp:.1f} %")
            n, bad = r["n"].get(s, 0), r.get("incomplete", {}).get(s, 0)
            if n or bad:  # (what the median rests on: the captures behind it, and those not whole)
                v += f" (n {n}" + (f", {bad} incomplete" if bad else "") + ")"
            cells.append(v)
        rows.append(cells)
    return _table(heads, rows)


CSS = """body{font-family:system-ui,sans-serif;margin:24px;color:#222;max-width:1100px}
table{border-collapse:collapse;margin:8px 0 24px}td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px;text-align:right}
td:first-child,td:nth-child(2),th{text-align:left}th{background:#f3f3f3}h2{margin-top:32px}.note{color:#555;font-size:13px}"""


def render_html(summary: dict[str, Any], figs: list, pngs: list[str], errors: list[dict], out_name: str) -> str:
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>wirefall batch: {html.escape(out_name)}</title>"
             f"<style>{CSS}</style></head><body>",
             f"<h1>wirefall batch report</h1><p>{summary['captures']} capture(s) analysed, {summary['errors']['count']} error(s); "
             f"grouped by {html.escape(', '.join(summary['group_by']))}. Medians and quartiles (linear interpolation); "
             "the boxes are drawn from the tables' numbers (whiskers: min and max).</p>"]
    warns = summary.get("warnings") or []
    if warns:  # (report.json's warnings: a speedup on one capture, incomplete loads, no protocol, browser logs, captures without lab metadata)
        parts.append("<h2>Warnings</h2><ul class='warnings'>" + "".join(f"<li>{html.escape(str(w.get('text', '')))}</li>" for w in warns)
                     + "</ul>")
    if summary["whitepaper"] and len(summary["series"]) > 1:
        parts.append("<h2>Page load time per condition (the SPDY whitepaper's table)</h2>"
                     f"<p class='note'>speedup = (A − B) / A with A = {html.escape(str(summary['baseline'] or '–'))}, "
                     "on the medians; n: the captures behind each median, and how many of them are incomplete loads.</p>" + whitepaper_table(summary))
    for i, (metric, fig) in enumerate(zip(summary["metrics"], figs)):
        parts.append(f"<h2>{html.escape(metric['label'])}</h2>")
        parts.append(fig.to_html(full_html=False, include_plotlyjs=(i == 0), config={"displaylogo": False}))
        if i < len(pngs):
            parts.append(f"<p class='note'>image: <a href='{html.escape(pngs[i])}'>{html.escape(pngs[i])}</a></p>")
        parts.append(metric_table(summary, metric))
    if errors:
        kinds = ", ".join(f"{k}: {n}" for k, n in sorted(summary["errors"]["kinds"].items()))
        parts.append(f"<h2>Errors ({len(errors)}: {html.escape(kinds)})</h2>")
        parts.append(_table(["capture", "kind", "error"], [[e.get("capture") or "", e.get("kind") or "", e.get("error") or ""] for e in errors[:200]]))
        if len(errors) > 200:
            parts.append(f"<p class='note'>… {len(errors) - 200} more in errors.parquet</p>")
    parts.append("</body></html>")
    return "\n".join(parts)


def write_report(out: str | os.PathLike, group_by: list[str] | None = None, images: bool = True) -> list[str]:
    """Write report.json, report.html and (``images``) report-METRIC.png in OUT; returns the
    names written."""
    from wirefall.analyzer.batch.store import read_dataset
    from wirefall.analyzer.batch.summary import summarise
    from wirefall.analyzer.export import write_atomic

    outp = Path(out)
    pages = read_dataset(outp, "pages").to_pylist()
    errors = read_dataset(outp, "errors").to_pylist()
    errors.sort(key=lambda e: (e.get("capture") or ""))
    summary = summarise(pages, group_by, errors)
    written = []
    write_atomic(str(outp / "report.json"), (json.dumps(summary, indent=1, default=str) + "\n").encode(), force=True)
    written.append("report.json")
    figs = [box_figure(summary, m) for m in summary["metrics"]]
    pngs: list[str] = []
    if images and pages:
        from wirefall.ui.figures import write_images

        pngs = [f"report-{m['key']}.png" for m in summary["metrics"]]
        write_images([(f, str(outp / p)) for f, p in zip(figs, pngs)])
        written += pngs
    write_atomic(str(outp / "report.html"), render_html(summary, figs, pngs, errors, outp.name).encode("utf-8"), force=True)
    written.append("report.html")
    return written
