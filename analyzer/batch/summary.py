"""The numbers of the batch report: per group of captures (protocol and condition by default),
the median and quartiles of each page figure, and the SPDY whitepaper's table (page load time per
protocol and condition, and each protocol's speedup over the baseline).  Plain data
(``OUT/report.json``); ``ui/batch_report.py`` draws it.

Quartiles are linear interpolation between order statistics at (n − 1)·p (numpy's default,
DuckDB's ``quantile_cont``); a capture without a value (no response: no TTFB) is left out of
that figure only, and ``n`` counts the values used.
"""
from __future__ import annotations

import math
from typing import Any

METRICS: list[tuple[str, str, str]] = [  # (key, label, unit)
    ("page_load_time", "page load time", "s"),
    ("ttfb", "time to first byte", "s"),
    ("packets", "packets (both directions)", ""),
    ("bytes", "bytes on the wire (both directions)", "B"),
    ("request_header_compression", "request header compression (1 − wire/decoded)", ""),
    ("response_header_compression", "response header compression (1 − wire/decoded)", ""),
]
BASELINES = ("h1", "http/1.1", "http/1.0")
NONE_LABEL = "–"


def quantile(xs: list[float], p: float) -> float | None:
    """``xs`` sorted; linear interpolation at (n − 1)·p."""
    if not xs:
        return None
    pos = (len(xs) - 1) * p
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def describe(values: list) -> dict[str, Any]:
    xs = sorted(float(v) for v in values if v is not None and not (isinstance(v, float) and math.isnan(v)))
    return {"n": len(xs), "median": quantile(xs, 0.5), "q1": quantile(xs, 0.25), "q3": quantile(xs, 0.75),
            "min": xs[0] if xs else None, "max": xs[-1] if xs else None}


def metric_value(row: dict, key: str):
    if key == "packets":
        a, b = row.get("packets_c2s"), row.get("packets_s2c")
        return None if a is None or b is None else a + b
    if key == "bytes":
        a, b = row.get("bytes_c2s"), row.get("bytes_s2c")
        return None if a is None or b is None else a + b
    return row.get(key)


def default_group_by(rows: list[dict]) -> list[str]:
    first = "lab_protocol" if any(r.get("lab_protocol") for r in rows) else "protocol"
    return [first, "condition"]


def label(v) -> str:
    if v is None:
        return NONE_LABEL
    if isinstance(v, float) and v.is_integer():
        return f"{v:g}"
    return str(v)


def _sort_key(v):
    return (v is None, isinstance(v, str), v if v is not None else 0)


def summarise(pages: list[dict], group_by: list[str] | None = None, errors: list[dict] | None = None) -> dict[str, Any]:
    """``pages``: rows of pages.parquet.  Groups are the distinct values of ``group_by``; the
    first key is the series (a colour, the whitepaper table's columns), the others together the
    category (the x axis, the table's rows)."""
    keys = group_by or default_group_by(pages)
    groups: dict[tuple, list[dict]] = {}
    for r in pages:
        groups.setdefault(tuple(r.get(k) for k in keys), []).append(r)
    order = sorted(groups, key=lambda g: tuple(_sort_key(v) for v in g))
    out_groups: list[dict[str, Any]] = []
    for g in order:
        rs = groups[g]
        out_groups.append({"key": dict(zip(keys, g)), "series": label(g[0]), "category": " · ".join(label(v) for v in g[1:]) or "all",
                           "captures": len(rs), "metrics": {m: describe([metric_value(r, m) for r in rs]) for m, _, _ in METRICS}})
    series: list[str] = sorted({grp["series"] for grp in out_groups}, key=lambda s: (s == NONE_LABEL, s))
    categories: list[str] = []
    for grp in out_groups:
        if grp["category"] not in categories:
            categories.append(grp["category"])
    base = next((b for b in BASELINES if b in series), None)
    table = []
    for cat in categories:
        cells: dict[str, Any] = {}
        for s in series:
            found = [x for x in out_groups if x["series"] == s and x["category"] == cat]
            cells[s] = found[0]["metrics"]["page_load_time"]["median"] if found else None
        a = cells.get(base) if base else None
        speedup = {s: (None if not a or cells[s] is None else (a - cells[s]) / a) for s in series if s != base} if base else {}
        table.append({"category": cat, "page_load_time_median": cells, "speedup": speedup})
    kinds: dict[str, int] = {}
    for e in errors or []:
        kinds[e.get("kind") or NONE_LABEL] = kinds.get(e.get("kind") or NONE_LABEL, 0) + 1
    return {"group_by": keys, "series": series, "categories": categories, "baseline": base,
            "metrics": [{"key": k, "label": lab, "unit": u} for k, lab, u in METRICS],
            "groups": out_groups, "whitepaper": table, "captures": len(pages),
            "errors": {"count": len(errors or []), "kinds": kinds}}
