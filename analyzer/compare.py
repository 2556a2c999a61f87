"""Compare two captures of the same page: requests matched one by one, and the page-level
table in the SPDY whitepaper's form (A, B, the difference and the speedup (A − B) / A).

Matching: by normalised URL (scheme, host, port without its default, path and query); a
URL loaded several times is matched in order.  When the two captures load the page from
different origins (another host or port, as a lab or staging server does) and matching by
URL finds fewer pairs than matching by path and query, the latter is used and said so.
"""
from __future__ import annotations

from collections import defaultdict, deque
from typing import Any
from urllib.parse import urlsplit

from .model import Analysis, Exchange
from .stats import req_wire, resp_wire

DEFAULT_PORTS = {"http": 80, "https": 443}
LOW_MATCH = 0.5  # below this share of requests matched, warn that the pages differ


def normalise_url(url: str | None, with_origin: bool = True) -> str:
    if not url:
        return ""
    try:
        u = urlsplit(url)
        port = u.port
    except ValueError:
        return url
    scheme = (u.scheme or "").lower()
    host = (u.hostname or "").lower()
    path = u.path or "/"
    q = f"?{u.query}" if u.query else ""
    if not with_origin:
        return path + q
    netloc = host if port in (None, DEFAULT_PORTS.get(scheme)) else f"{host}:{port}"
    return f"{scheme}://{netloc}{path}{q}"


def _start(e: Exchange) -> float | None:
    return e.request_start if e.request_start is not None else e.response_start


def _ordered(an: Analysis) -> list[Exchange]:
    return sorted((e for e in an.exchanges if e.url), key=lambda e: (_start(e) or 0.0, e.id))


def _match(a: list[Exchange], b: list[Exchange], with_origin: bool):
    queues: dict[str, deque] = defaultdict(deque)
    for e in b:
        queues[normalise_url(e.url, with_origin)].append(e)
    pairs, only_a = [], []
    for e in a:
        q = queues.get(normalise_url(e.url, with_origin))
        if q:
            pairs.append((e, q.popleft()))
        else:
            only_a.append(e)
    used = {id(y) for _, y in pairs}
    only_b = [e for e in b if id(e) not in used]
    return pairs, only_a, only_b


def _side(e: Exchange, t0: float) -> dict[str, Any]:
    s = _start(e)
    ttfb = e.response_start - s if e.response_start is not None and s is not None else None
    end = e.response_end if e.response_end is not None else e.response_start
    return {
        "exchange": e.id,
        "url": e.url,
        "protocol": e.protocol,
        "connection": e.connection,
        "stream_id": e.stream_id,
        "status": e.status,
        "start": None if s is None else s - t0,
        "ttfb": ttfb,
        "duration": None if s is None or end is None else end - s,
        "bytes": e.response_body_bytes,
        "header_bytes_wire": req_wire(e) + resp_wire(e),  # (HTTP/3: QPACK encoder-stream bytes included)
        "pushed": e.pushed,
    }


def _diff(a, b):
    return None if a is None or b is None else b - a


def _speedup(a, b):
    return None if a in (None, 0) or b is None else (a - b) / a


def page_figures(an: Analysis) -> dict[str, Any]:
    """The whitepaper's page-level quantities for one capture (web connections only:
    those that carried at least one request; DNS and unrelated flows are left out).  Web
    connections that carried none — a preconnect never used, a handshake the browser dropped,
    a background connection — are counted apart (``connections_without_requests`` and their
    ``bytes_without_requests``, both ways), not left out without a word."""
    from .stats import compute

    st = compute(an)  # (header bytes: for HTTP/3 with the QPACK encoder stream, see analyzer.stats)
    web = {e.connection for e in an.exchanges}
    conns = [c for c in an.connections if c.id in web]
    idle = [c for c in an.connections if c.id not in web and c.protocol not in (None, "dns")]
    t0 = an.start_time
    ends = [t for e in an.exchanges if (t := e.response_end or e.response_start)]
    cap = st.capture
    req_w, req_d = cap.req_headers
    resp_w, resp_d = cap.resp_headers
    return {
        "page_load_time": (max(ends) - t0) if ends else None,
        "connections": len(conns),
        "connections_without_requests": len(idle),
        "bytes_without_requests": sum(c.stats[0].bytes + c.stats[1].bytes for c in idle),
        "requests": sum(1 for e in an.exchanges if not e.pushed),
        "pushes": sum(1 for e in an.exchanges if e.pushed),
        "packets_c2s": sum(c.stats[0].packets for c in conns),
        "packets_s2c": sum(c.stats[1].packets for c in conns),
        "bytes_c2s": sum(c.stats[0].bytes for c in conns),
        "bytes_s2c": sum(c.stats[1].bytes for c in conns),
        "request_header_bytes_wire": req_w,
        "request_header_bytes_decoded": req_d,
        "response_header_bytes_wire": resp_w,
        "response_header_bytes_decoded": resp_d,
        "request_header_compression": (1 - req_w / req_d) if req_d else None,
        "response_header_compression": (1 - resp_w / resp_d) if resp_d else None,
        "request_qpack_encoder_bytes": cap.qpack_encoder[0],
        "response_qpack_encoder_bytes": cap.qpack_encoder[1],
        "protocols": sorted({e.protocol for e in an.exchanges}),
    }


PAGE_ROWS = [
    ("page_load_time", "page load time (s)"),
    ("connections", "connections"),
    ("connections_without_requests", "  web connections without a request"),
    ("bytes_without_requests", "  their bytes, both ways (not in the rows below)"),
    ("requests", "requests"),
    ("pushes", "pushes"),
    ("packets_c2s", "packets client→server"),
    ("packets_s2c", "packets server→client"),
    ("bytes_c2s", "bytes client→server"),
    ("bytes_s2c", "bytes server→client"),
    ("request_header_bytes_wire", "request header bytes (wire)"),
    ("request_header_bytes_decoded", "request header bytes (decoded)"),
    ("response_header_bytes_wire", "response header bytes (wire)"),
    ("response_header_bytes_decoded", "response header bytes (decoded)"),
    ("request_qpack_encoder_bytes", "  of the request wire: QPACK encoder stream"),
    ("response_qpack_encoder_bytes", "  of the response wire: QPACK encoder stream"),
    ("request_header_compression", "request header compression"),
    ("response_header_compression", "response header compression"),
]


def compare(a: Analysis, b: Analysis) -> dict[str, Any]:
    ea, eb = _ordered(a), _ordered(b)
    pairs, only_a, only_b = _match(ea, eb, True)
    mode = "url"
    if ea and eb:
        p2, oa2, ob2 = _match(ea, eb, False)
        if len(p2) > len(pairs):
            pairs, only_a, only_b, mode = p2, oa2, ob2, "path"
    ta, tb = a.start_time, b.start_time
    matched = []
    for x, y in pairs:
        sa, sb = _side(x, ta), _side(y, tb)
        matched.append({
            "url": normalise_url(x.url, mode == "url"),
            "a": sa,
            "b": sb,
            "diff": {k: _diff(sa[k], sb[k]) for k in ("start", "ttfb", "duration", "bytes", "header_bytes_wire")},
        })
    pa, pb = page_figures(a), page_figures(b)
    page = {}
    for key, _label in PAGE_ROWS:
        va, vb = pa[key], pb[key]
        page[key] = {"a": va, "b": vb, "diff": _diff(va, vb), "speedup": _speedup(va, vb) if key != "request_header_compression" and key != "response_header_compression" else None}
    total = max(len(ea), len(eb), 1)
    warnings = []
    if mode == "path":
        warnings.append("the captures load the page from different origins; requests matched by path and query")
    share = len(pairs) / total
    if share < LOW_MATCH:
        warnings.append(f"only {len(pairs)} of {total} requests matched: the captures may not load the same page")
    return {
        "a": {"file": a.path, "protocols": pa["protocols"]},
        "b": {"file": b.path, "protocols": pb["protocols"]},
        "match_mode": mode,
        "match_share": share,
        "matched": matched,
        "only_a": [_side(e, ta) for e in only_a],
        "only_b": [_side(e, tb) for e in only_b],
        "page": page,
        "warnings": warnings,
    }


def _fmt(key: str, v) -> str:
    if v is None:
        return "–"
    if key.endswith("compression"):
        return f"{100 * v:.1f} %"
    if key == "page_load_time":
        return f"{v:.3f}"
    if isinstance(v, float):
        return f"{v:.3f}"
    return f"{v:,}"


def render_text(res: dict[str, Any]) -> str:
    out = [f"A: {res['a']['file']} ({', '.join(res['a']['protocols']) or '-'})",
           f"B: {res['b']['file']} ({', '.join(res['b']['protocols']) or '-'})", ""]
    rows = [["", "A", "B", "B − A", "(A − B) / A"]]
    for key, label in PAGE_ROWS:
        p = res["page"][key]
        sp = p["speedup"]
        rows.append([label, _fmt(key, p["a"]), _fmt(key, p["b"]),
                     ("–" if p["diff"] is None else (f"{100 * p['diff']:+.1f} pt" if key.endswith("compression") else
                                                      (f"{p['diff']:+.3f}" if isinstance(p["diff"], float) else f"{p['diff']:+,}"))),
                     "–" if sp is None else f"{100 * sp:.1f} %"])
    w = [max(len(r[i]) for r in rows) for i in range(5)]
    for i, r in enumerate(rows):
        out.append("  ".join([r[0].ljust(w[0])] + [r[j].rjust(w[j]) for j in range(1, 5)]))
        if i == 0:
            out.append("  ".join("-" * x for x in w))
    out.append("(A − B) / A: the load time's speedup, as the SPDY whitepaper defines it; a count's or a size's saving")
    out.append("")
    out.append(f"{len(res['matched'])} requests matched by {'URL' if res['match_mode'] == 'url' else 'path and query'}, "
               f"{len(res['only_a'])} only in A, {len(res['only_b'])} only in B")
    ms = lambda v: "–" if v is None else f"{1000 * v:.1f}"
    rows = [["url", "start A", "start B", "ttfb A", "ttfb B", "dur A", "dur B", "bytes A", "bytes B"]]
    for m in res["matched"]:
        a, b = m["a"], m["b"]
        rows.append([m["url"][-60:], ms(a["start"]), ms(b["start"]), ms(a["ttfb"]), ms(b["ttfb"]), ms(a["duration"]), ms(b["duration"]),
                     str(a["bytes"]), str(b["bytes"])])
    for e in res["only_a"]:
        rows.append([("A only: " + (e["url"] or ""))[-60:], ms(e["start"]), "", ms(e["ttfb"]), "", ms(e["duration"]), "", str(e["bytes"]), ""])
    for e in res["only_b"]:
        rows.append([("B only: " + (e["url"] or ""))[-60:], "", ms(e["start"]), "", ms(e["ttfb"]), "", ms(e["duration"]), "", str(e["bytes"])])
    w = [max(len(r[i]) for r in rows) for i in range(9)]
    out.append("")
    for i, r in enumerate(rows):
        out.append("  ".join([r[0].ljust(w[0])] + [r[j].rjust(w[j]) for j in range(1, 9)]).rstrip())
        if i == 0:
            out.append("  ".join("-" * x for x in w))
    for wmsg in res["warnings"]:
        out.append(f"warning: {wmsg}")
    return "\n".join(out)
