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
# the default grouping when some captures come from a lab: the lab's protocol and condition,
# and for a capture without lab metadata its own protocol under this category — never pooled
# with other protocols into one "–" group
LAB_SERIES = "lab_protocol"
NOT_FROM_LAB = "not from a lab (series: protocol)"
SERIES_FALLBACK = "lab_protocol, else protocol"


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


BROWSER_LOGS = ("har", "netlog", "qlog")  # pages.format of a browser log (no packets of its own)


def _is_log(row: dict) -> bool:
    return row.get("format") in BROWSER_LOGS


def _incomplete(row: dict) -> bool:
    """A capture's load not whole (truncated, begun before the capture …); a browser log's "no
    packets" is the ``browser_logs`` warning's, not this."""
    return row.get("complete") is False and not _is_log(row)


def metric_value(row: dict, key: str):
    if key in ("packets", "bytes") and _is_log(row):
        return None  # (a browser log has no packets: left out of those figures, not a 0 in them)
    if key == "packets":
        a, b = row.get("packets_c2s"), row.get("packets_s2c")
        return None if a is None or b is None else a + b
    if key == "bytes":
        a, b = row.get("bytes_c2s"), row.get("bytes_s2c")
        return None if a is None or b is None else a + b
    return row.get(key)


def default_group_by(rows: list[dict]) -> list[str]:
    """``lab_protocol`` and ``condition`` when some capture comes from a lab (a capture without
    lab metadata is then grouped by its ``protocol``: ``_group_values``), else ``protocol`` and
    ``condition``."""
    first = LAB_SERIES if any(r.get(LAB_SERIES) for r in rows) else "protocol"
    return [first, "condition"]


def _group_values(r: dict, keys: list[str], fallback: bool) -> tuple:
    """A row's group.  ``fallback`` (the default grouping with lab captures among the rows): a
    capture without lab metadata takes its own protocol as its series and ``NOT_FROM_LAB`` as
    its category, so captures of different protocols are never pooled into one group."""
    if fallback and not r.get(LAB_SERIES):
        return (r.get("protocol"), NOT_FROM_LAB) + tuple(None for _ in keys[2:])
    return tuple(r.get(k) for k in keys)


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
    fallback = not group_by and keys[0] == LAB_SERIES and any(not r.get(LAB_SERIES) for r in pages)
    groups: dict[tuple, list[dict]] = {}
    for r in pages:
        groups.setdefault(_group_values(r, keys, fallback), []).append(r)
    order = sorted(groups, key=lambda g: tuple(_sort_key(v) for v in g))
    out_groups: list[dict[str, Any]] = []
    for g in order:
        rs = groups[g]
        lab = not fallback or g[1] != NOT_FROM_LAB
        key = dict(zip(keys, g)) if lab else {"protocol": g[0], LAB_SERIES: None, "condition": None}
        out_groups.append({"key": key, "series": label(g[0]), "category": " · ".join(label(v) for v in g[1:]) or "all",
                           "captures": len(rs), "incomplete": sum(1 for r in rs if _incomplete(r)),
                           "browser_logs": sum(1 for r in rs if _is_log(r)),
                           "metrics": {m: describe([metric_value(r, m) for r in rs]) for m, _, _ in METRICS}})
    series: list[str] = sorted({grp["series"] for grp in out_groups}, key=lambda s: (s == NONE_LABEL, s))
    categories: list[str] = []
    for grp in out_groups:
        if grp["category"] not in categories:
            categories.append(grp["category"])
    base = next((b for b in BASELINES if b in series), None)
    table = []
    warnings: list[dict[str, Any]] = []
    for cat in categories:
        cells: dict[str, Any] = {}
        ns: dict[str, int] = {}
        bad: dict[str, int] = {}
        for s in series:
            found = [x for x in out_groups if x["series"] == s and x["category"] == cat]
            cells[s] = found[0]["metrics"]["page_load_time"]["median"] if found else None
            ns[s] = found[0]["metrics"]["page_load_time"]["n"] if found else 0
            bad[s] = found[0]["incomplete"] if found else 0
        a = cells.get(base) if base else None
        speedup = {s: (None if not a or cells[s] is None else (a - cells[s]) / a) for s in series if s != base} if base else {}
        table.append({"category": cat, "page_load_time_median": cells, "n": ns, "incomplete": bad, "speedup": speedup})
        given = [s for s, v in speedup.items() if v is not None]
        single = sorted({s for s in given if ns[s] == 1} | ({base} if given and base is not None and ns[base] == 1 else set()))
        if single:
            warnings.append({"kind": "single_capture", "category": cat, "series": single,
                             "text": f"{cat}: the speedup of {', '.join(s for s in given)} over {base} rests on one capture of "
                                     f"{', '.join(single)} (n = 1): a single load, not a median"})
    # what the medians rest on, said where a load is not whole (never implied complete): a
    # truncated capture, one not decrypted (its protocol unknown: the series "–"), a browser log
    # beside the capture of the same load (counted as a load of its own)
    for g, grp in zip(order, out_groups):
        if grp["incomplete"]:
            why = sorted({str(r.get("completeness") or "") for r in groups[g] if _incomplete(r)} - {""})
            warnings.append({"kind": "incomplete_loads", "category": grp["category"], "series": [grp["series"]],
                             "text": f"{grp['series']} · {grp['category']}: {grp['incomplete']} of {grp['captures']} load(s) incomplete, "
                                     f"counted in its figures all the same ({'; '.join(why[:3]) or 'see pages.parquet complete'})"})
    unknown = [r for r in pages if not r.get("protocol") and not _is_log(r)]
    if unknown:
        warnings.append({"kind": "protocol_unknown", "category": "", "series": [NONE_LABEL],
                         "text": f"{len(unknown)} capture(s) have no protocol (no request decrypted: no key log for them?): "
                                 f"grouped by protocol, they are the series {NONE_LABEL}, not their own protocol's"})
    logs = [r for r in pages if _is_log(r)]
    if logs:
        warnings.append({"kind": "browser_logs", "category": "", "series": sorted({label(r.get("protocol")) for r in logs}),
                         "text": f"{len(logs)} browser log(s) ({', '.join(sorted({str(r['format']) for r in logs}))}) are loads of their own: "
                                 "a log of a captured load counts that load twice; their packets and bytes are left out (none on a wire)"})
    if fallback:
        warnings.append({"kind": "not_from_a_lab", "category": NOT_FROM_LAB, "series": [],
                         "text": f"{sum(1 for r in pages if not r.get(LAB_SERIES))} capture(s) without lab metadata are grouped by "
                                 f"their protocol under '{NOT_FROM_LAB}', apart from the lab's protocols and conditions"})
    kinds: dict[str, int] = {}
    for e in errors or []:
        kinds[e.get("kind") or NONE_LABEL] = kinds.get(e.get("kind") or NONE_LABEL, 0) + 1
    return {"group_by": [SERIES_FALLBACK, *keys[1:]] if fallback else keys, "series": series, "categories": categories,
            "baseline": base, "warnings": warnings,
            "metrics": [{"key": k, "label": lab, "unit": u} for k, lab, u in METRICS],
            "groups": out_groups, "whitepaper": table, "captures": len(pages),
            "errors": {"count": len(errors or []), "kinds": kinds}}
