"""Read a Chromium NetLog (JSON, optionally gzip'd) into per-request records.

Chromium's NetLog is the client's own account of a page load: for each URL
request its method, URL, response status, the session it was bound to (QUIC,
HTTP/2 or a plain socket) and timestamps (ms, Chromium's TimeTicks). The lab
keeps it next to each capture as timing truth.

    requests(path, origin="https://127.0.0.1") -> [NetlogRequest, ...]
    (origin matches with or without a port)
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class NetlogRequest:
    source_id: int
    method: str = ""
    url: str = ""
    status: int | None = None
    transport: str = ""       # "quic" | "h2" | "http1" (how Chromium sent it)
    start_ms: float | None = None   # URL_REQUEST_START_JOB
    headers_ms: float | None = None  # response headers read
    end_ms: float | None = None     # REQUEST_ALIVE end
    body_bytes: int = 0             # URL_REQUEST_JOB_FILTERED_BYTES_READ total
    request_headers: list[str] = field(default_factory=list)

    @property
    def path(self) -> str:
        rest = self.url.split("://", 1)[-1]
        return "/" + rest.split("/", 1)[1] if "/" in rest else "/"


def load(path: str | Path) -> dict:
    """The NetLog as a dict (``constants``, ``events``), through wirefall's reader
    (analyzer/browserlog/netlog.py: compressed or not, chosen by content; a log cut short
    by a killed browser, anywhere, read to its last whole event)."""
    root = str(Path(__file__).resolve().parents[2])
    if root not in sys.path:  # run as a script from the checkout
        sys.path.insert(0, root)
    from wirefall.analyzer.browserlog.netlog import load_json

    return load_json(str(path))


def requests(path: str | Path, origin: str | None = None) -> list[NetlogRequest]:
    d = load(path)
    c = d["constants"]
    ev = {v: k for k, v in c["logEventTypes"].items()}
    src = {v: k for k, v in c["logSourceType"].items()}
    phase = {v: k for k, v in c["logEventPhase"].items()}
    reqs: dict[int, NetlogRequest] = {}
    for e in d["events"]:
        if src.get(e["source"]["type"]) != "URL_REQUEST":
            continue
        sid = e["source"]["id"]
        t = ev.get(e["type"], "")
        p = e.get("params", {})
        ms = float(e["time"])
        r = reqs.get(sid)
        if t == "URL_REQUEST_START_JOB" and "url" in p:
            if r is None:
                r = reqs[sid] = NetlogRequest(sid, method=p.get("method", ""), url=p["url"], start_ms=ms)
            continue
        if r is None:
            continue
        if t in ("HTTP_TRANSACTION_QUIC_SEND_REQUEST_HEADERS", "HTTP_TRANSACTION_HTTP2_SEND_REQUEST_HEADERS",
                 "HTTP_TRANSACTION_SEND_REQUEST_HEADERS"):
            r.transport = {"HTTP_TRANSACTION_QUIC_SEND_REQUEST_HEADERS": "quic",
                           "HTTP_TRANSACTION_HTTP2_SEND_REQUEST_HEADERS": "h2"}.get(t, "http1")
            r.request_headers = list(p.get("headers", [])) if isinstance(p.get("headers"), list) else \
                [p.get("line", "")] + list(p.get("headers", {}) or [])
        elif t == "HTTP_TRANSACTION_READ_RESPONSE_HEADERS" and "headers" in p:
            first = p["headers"][0] if p["headers"] else ""
            parts = first.split()
            if len(parts) >= 2 and parts[1].isdigit():
                r.status = int(parts[1])
            r.headers_ms = ms
        elif t == "URL_REQUEST_JOB_FILTERED_BYTES_READ":
            r.body_bytes += int(p.get("byte_count", 0))
        elif t == "REQUEST_ALIVE" and phase.get(e["phase"]) == "PHASE_END":
            r.end_ms = ms
    out = sorted(reqs.values(), key=lambda r: (r.start_ms or 0, r.source_id))
    if origin is not None:
        origin = origin.rstrip("/")
        out = [r for r in out if r.url.startswith(origin) and r.url[len(origin):len(origin) + 1] in ("/", ":")]
    return out
