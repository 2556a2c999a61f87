"""Hostile HARs for the fields the browser-log readers gained on 2026-12-02..04, for
tests/test_hostile_browserlog23.py: WebPageTest's per-entry set-up times (``_dns_start`` …
``_ssl_end``, ``_all_start``, ``_load_start``: ms from the page's start), ``headersSize``,
``pages``/``pageTimings`` and a log opened alone (``Analysis.start_time``), and wirefall's own
HAR extensions (``_header_bytes_wire``/``_header_bytes_decoded``, ``_priority_wire``,
``_push_parent``, ``_reset``).

Each builder takes the output directory and returns the path of the HAR it wrote; most start
from a real HAR (WebPageTest's amazon run, shared captures; Playwright's ``pw-h2``, in the
repository) and mutate it.  ``BUILDERS`` names them all.

    .venv/bin/python scripts/hostile/browserlog23_inputs.py OUTDIR [NAME ...]
"""
from __future__ import annotations

import copy
import gzip
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
WPT = ROOT.parent / "shared" / "captures" / "hars" / "webpagetest-amazon.har.gz"
PW = ROOT / "sample_captures" / "page" / "pw-h2.har.gz"

# values no field should be trusted with (json.dumps writes NaN and Infinity as the bare
# tokens Chrome's and Python's readers accept)
ODD: list[Any] = [float("nan"), float("inf"), float("-inf"), 1e308, -1e308, -1, -1.5, "12", "x", True, False, None, [], [1],
                  {}, {"a": 1}, 10 ** 30, 2 ** 63, 1.5, 10 ** 400]
WPT_SETUP = ("_dns_start", "_dns_end", "_connect_start", "_connect_end", "_ssl_start", "_ssl_end", "_all_start", "_load_start")
NASTY = "<script>alert(1)</script>\x1b[31m\x00\x07\r\n\u202e\u2028&amp;\"'"


def load(src: Path) -> dict:
    return json.loads(gzip.decompress(src.read_bytes()))


def write(out: Path, name: str, d: Any, *, raw: bytes | None = None) -> Path:
    p = Path(out) / f"{name}.har"
    p.write_bytes(raw if raw is not None else json.dumps(d).encode())
    return p


def wpt_odd_setup(out: Path) -> Path:
    """Every WebPageTest set-up field of every entry an odd value (entry i: ODD[i + k])."""
    d = load(WPT)
    for i, e in enumerate(d["log"]["entries"]):
        for k, f in enumerate(WPT_SETUP):
            e[f] = ODD[(i + k) % len(ODD)]
    return write(out, "wpt_odd_setup", d)


def wpt_odd_pairs(out: Path) -> Path:
    """WebPageTest's ``_all_start``/``_load_start`` kept (so its set-up times are read) and,
    on every other entry, the six ``_dns_*``/``_connect_*``/``_ssl_*`` odd values (10**400 among them)."""
    d = load(WPT)
    for i, e in enumerate(d["log"]["entries"]):
        if i % 2:
            for k, f in enumerate(WPT_SETUP[:6]):
                e[f] = ODD[(i * 3 + k) % len(ODD)]
    return write(out, "wpt_odd_pairs", d)


def wpt_reversed(out: Path) -> Path:
    """Each pair backwards (``_dns_end`` before ``_dns_start``) and ``_all_start`` after
    ``_load_start``: none of them may be taken."""
    d = load(WPT)
    for e in d["log"]["entries"]:
        for a, b in (("_dns_start", "_dns_end"), ("_connect_start", "_connect_end"), ("_ssl_start", "_ssl_end")):
            if isinstance(e.get(a), (int, float)) and isinstance(e.get(b), (int, float)) and e[a] >= 0:
                e[a], e[b] = e[b] + 5, e[a]
    return write(out, "wpt_reversed", d)


def wpt_far(out: Path) -> Path:
    """Set-up times far outside the page (1e15 ms, -1e15 ms) and a ``_load_start`` of 1e308."""
    d = load(WPT)
    for i, e in enumerate(d["log"]["entries"]):
        e["_dns_start"], e["_dns_end"] = (-1e15, 1e15) if i % 2 else (1e15, 2e15)
        e["_connect_start"], e["_connect_end"] = 0, 1e308
        if i % 3 == 0:
            e["_load_start"] = 1e308
    return write(out, "wpt_far", d)


def odd_page_times(out: Path) -> Path:
    """Pages whose ``startedDateTime`` is missing, a number, year 1 or 9999, and whose
    ``pageTimings`` are NaN, 1e308, strings and negative."""
    d = load(WPT)
    p0, p1 = d["log"]["pages"]
    p0["pageTimings"] = {"onContentLoad": 1e308, "onLoad": float("inf")}
    del p1["startedDateTime"]
    p1["pageTimings"] = {"onContentLoad": "12", "onLoad": 10 ** 400}
    d["log"]["pages"] += [{"id": "p_num", "startedDateTime": 12345, "title": [1], "pageTimings": None},
                          {"id": "p_y1", "startedDateTime": "0001-01-01T00:00:00Z", "title": "y1",
                           "pageTimings": {"onLoad": 1e12}},
                          {"id": "p_y9999", "startedDateTime": "9999-12-31T23:59:59.999Z", "title": "y9999",
                           "pageTimings": {"onLoad": 1e308}},
                          "not a page", None, {"id": None}]
    return write(out, "odd_page_times", d)


def page_start_only(out: Path, page: int = 0) -> Path:
    """One page of amazon whose ``startedDateTime`` is moved to year 9999 (its entries stay in 2026)."""
    d = load(WPT)
    d["log"]["pages"][page]["startedDateTime"] = "9999-12-31T23:59:59.999Z"
    return write(out, "page_start_9999", d)


def page_start_year1(out: Path) -> Path:
    """Both pages at year 1 (a log alone would start there: every time ~2000 years long)."""
    d = load(WPT)
    for p in d["log"]["pages"]:
        p["startedDateTime"] = "0001-01-01T00:00:00.000Z"
    return write(out, "page_start_year1", d)


def no_page(out: Path) -> Path:
    """Entries whose pageref names no page, or is a number, list or null; pages not a list."""
    d = load(PW)
    refs: list[Any] = ["nope", 7, ["x"], None, "", {"id": "page@x"}]
    for i, e in enumerate(d["log"]["entries"]):
        e["pageref"] = refs[i % len(refs)]
    d["log"]["pages"] = {"id": "not a list"}
    return write(out, "no_page", d)


def many_one_page(out: Path, n: int = 100_000) -> Path:
    """``n`` entries of one page (pw-h2's first entry, its URL numbered), WebPageTest's fields
    on each: the readers' and exports' time must stay linear."""
    d = load(PW)
    base = d["log"]["entries"][0]
    base["request"]["headers"] = base["request"]["headers"][:2]
    base["response"]["headers"] = base["response"]["headers"][:2]
    base["response"]["content"] = {"size": 10, "mimeType": "text/html"}
    pid = d["log"]["pages"][0]["id"]
    ents = []
    for i in range(n):
        e = copy.deepcopy(base)
        e["request"]["url"] = f"https://many.example/r{i}"
        e["pageref"] = pid
        e.update({"_dns_start": 0, "_dns_end": 1, "_all_start": 0, "_load_start": 5})
        ents.append(e)
    d["log"]["entries"] = ents
    return write(out, f"many_one_page_{n}", d)


def wirefall_odd_sizes(out: Path) -> Path:
    """pw-h2 as wirefall's own HAR (``creator`` wirefall) with ``_header_bytes_wire`` /
    ``_header_bytes_decoded`` of every odd type, and odd ``_priority_wire``, ``_push_parent``,
    ``_reset``."""
    d = load(PW)
    d["log"]["creator"] = {"name": "wirefall", "version": "0.23"}
    odd_side: list[Any] = ODD + [-(10 ** 400), {"request": 1}]
    for i, e in enumerate(d["log"]["entries"]):
        v = odd_side[i % len(odd_side)]
        w = odd_side[(i + 7) % len(odd_side)]
        if i % 3 == 0:
            e["_header_bytes_wire"], e["_header_bytes_decoded"] = v, w
        else:
            e["_header_bytes_wire"] = {"request": v, "response": w}
            e["_header_bytes_decoded"] = {"request": w, "response": v}
        e["_priority_wire"] = [{"weight": 1e308}, {"urgency": NASTY}, "x", None, {"a": {"b": [1] * 3}}][i % 5]
        e["_push_parent"] = [10 ** 400, -1, True, "3", 1e308, 0][i % 6]
        e["_reset"] = [NASTY, 5, None, "CANCEL" * 10000][i % 4]
        e["_exchange"] = [10 ** 400, "x", -1][i % 3]
        e["_stream_id"] = [10 ** 400, -1, "7", 1e308][i % 4]
    return write(out, "wirefall_odd_sizes", d)


def huge_sizes(out: Path) -> Path:
    """headersSize, bodySize and content.size 10**400, 1e308, -5, "12", NaN (not wirefall's)."""
    d = load(PW)
    vals: list[Any] = [10 ** 400, 1e308, -5, "12", float("nan"), 2 ** 64, "99999999999999999999", True]
    for i, e in enumerate(d["log"]["entries"]):
        v = vals[i % len(vals)]
        e["request"]["headersSize"] = v
        e["response"]["headersSize"] = vals[(i + 1) % len(vals)]
        e["request"]["bodySize"] = vals[(i + 2) % len(vals)]
        e["response"]["bodySize"] = v
        e["response"].setdefault("content", {})["size"] = vals[(i + 3) % len(vals)]
    return write(out, "huge_sizes", d)


def nasty_text(out: Path) -> Path:
    """Control characters and HTML in URLs, headers, page titles and ids, creator, mime types."""
    d = load(PW)
    d["log"]["creator"] = {"name": NASTY, "version": NASTY}
    for p in d["log"]["pages"]:
        p["title"] = NASTY
    for i, e in enumerate(d["log"]["entries"]):
        e["request"]["url"] = e["request"]["url"] + "?q=" + NASTY
        e["request"]["headers"].append({"name": "x-" + NASTY, "value": NASTY})
        e["response"]["headers"].append({"name": NASTY, "value": NASTY})
        e["response"].setdefault("content", {})["mimeType"] = NASTY
        e["_initiator"] = {"type": NASTY, "url": NASTY}
        e["_error"] = NASTY if i % 4 == 3 else None
        e["_priority"] = NASTY
        e["_resourceType"] = NASTY
    return write(out, "nasty_text", d)


def nasty_wpt(out: Path) -> Path:
    """amazon with HTML and control characters in page titles, URLs and headers."""
    d = load(WPT)
    for p in d["log"]["pages"]:
        p["title"] = NASTY
    for e in d["log"]["entries"]:
        e["request"]["url"] += "#" + NASTY
        e["response"]["headers"].append({"name": "x-nasty", "value": NASTY})
    return write(out, "nasty_wpt", d)


def huge_timings(out: Path) -> Path:
    """pw-h2 whose ``timings`` are 1e308 ms, 1e15 ms, NaN, strings, and some sane (20 ms, 1e9 ms: 11.6 days)."""
    d = load(PW)
    vals: list[Any] = [1e308, 1e15, float("nan"), "5", -1e308, 1e12, 20, 1e9, 10 ** 400]
    for i, e in enumerate(d["log"]["entries"]):
        e["timings"] = {k: vals[(i + j) % len(vals)] for j, k in enumerate(("blocked", "dns", "connect", "ssl", "send", "wait", "receive"))}
    return write(out, "huge_timings", d)


def many_pages(out: Path, n: int = 20_000) -> Path:
    """``n`` pages (one entry each, the same id every other page, titles of HTML), in reverse
    time order: the pages' notices and selection must stay linear."""
    d = load(PW)
    base = d["log"]["entries"][0]
    base["request"]["headers"] = base["request"]["headers"][:1]
    base["response"]["headers"] = base["response"]["headers"][:1]
    p0 = d["log"]["pages"][0]
    pages, ents = [], []
    for i in range(n):
        p = copy.deepcopy(p0)
        p["id"] = f"page_{i // 2}"
        p["title"] = f"<b>page {i}</b>\x1b[2J"
        p["startedDateTime"] = f"2026-12-01T09:{59 - (i * 60 // n):02d}:00.000Z"
        pages.append(p)
        e = copy.deepcopy(base)
        e["request"]["url"] = f"https://pages.example/p{i}"
        e["pageref"] = p["id"]
        e["startedDateTime"] = p["startedDateTime"]
        ents.append(e)
    d["log"]["pages"], d["log"]["entries"] = pages, ents
    return write(out, f"many_pages_{n}", d)


def entries_far_apart(out: Path) -> Path:
    """pw-h2 with one entry at year 1 and one at 9999 (the others where they were), the page at
    its own start: a waterfall ~10 000 years wide must still be drawn in bounded size."""
    d = load(PW)
    d["log"]["entries"][1]["startedDateTime"] = "0001-01-01T00:00:00.000Z"
    d["log"]["entries"][2]["startedDateTime"] = "9999-12-31T23:59:58.000Z"
    return write(out, "entries_far_apart", d)


BUILDERS: dict[str, Callable[[Path], Path]] = {
    f.__name__: f for f in (wpt_odd_setup, wpt_odd_pairs, wpt_reversed, wpt_far, odd_page_times, page_start_only, page_start_year1, no_page,
                            wirefall_odd_sizes, huge_sizes, nasty_text, nasty_wpt, huge_timings, entries_far_apart, many_pages, many_one_page)}


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    for name in argv[1:] or list(BUILDERS):
        print(BUILDERS[name](out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
