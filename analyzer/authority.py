"""The host of requests whose own headers do not name it: a connection the capture joined
mid-way (HTTP/2's ``:authority``, HTTP/3's, SPDY's ``:host`` are references to HPACK / QPACK /
zlib state from before the capture), or an HTTP/1.0 request without ``Host``.  Such a request
was shown with its path as its URL (``/app.js``), which reads like a URL and is none.

``fill(analysis)`` runs once after the pass (``pipeline.analyze``; on the merged model when the
pass was parallel, since a DNS answer and the connection it names may be in different
workers) and gives every such request the host the wire does tell, in this order:

1. the connection's TLS SNI (or QUIC's), when its handshake is in the capture;
2. else the name a DNS lookup in the capture resolved to the server's address, the lookup
   answered before the connection's first packet (``waterfall.dns_lookups``; the latest such
   lookup: the rule the waterfall's DNS phase uses, ``waterfall.match_dns``, from the other side);
3. else ``<unknown>``: the URL is ``https://<unknown>/path`` and the completeness summary counts
   the request (``unknown.authority``).

``exchange.authority`` holds the name found (with the server's port when it is not the
scheme's default), ``url`` the URL built from it, and ``sources["authority"]`` says where it
came from: ``"tls_sni"``, ``"dns"`` or ``"unknown"`` (docs/JSON.md).  Requests that name their
host, CONNECT requests, and analyses from a browser log are left as they are.
"""
from __future__ import annotations

from .model import Analysis, Connection, Exchange

UNKNOWN_HOST = "<unknown>"
DEFAULT_PORT = {"https": 443, "http": 80}


def _needs(e: Exchange) -> bool:
    return (not e.authority or e.authority == UNKNOWN_HOST) and e.path is not None and e.method != "CONNECT" and (
        e.url is None or e.url == e.path or "://" not in e.url[:12])


def _scheme(e: Exchange, c: Connection | None) -> str:
    if e.scheme:
        return e.scheme
    return "https" if c is not None and (c.tls is not None or c.quic is not None) else "http"


def _with_port(name: str, scheme: str, c: Connection | None) -> str:
    if c is None:
        return name
    port = c.server[1]
    return name if port == DEFAULT_PORT.get(scheme) else f"{name}:{port}"


def _dns_name(lookups, c: Connection) -> str | None:
    addr = c.server[0]
    start = c.connect_start if c.connect_start is not None else c.start
    best = None
    for d in lookups:
        rt = d.response_time
        if rt is None or rt > start + 1e-9 or addr not in d.addresses or not d.name:
            continue
        if best is None or rt >= best.response_time:
            best = d
    return best.name.rstrip(".") if best is not None else None


def fill(an: Analysis) -> int:
    """Give every request without a host the one the wire tells (module docstring); returns
    how many requests were given ``<unknown>``."""
    if getattr(an, "source", "capture") != "capture":
        return 0
    todo = [e for e in an.exchanges if _needs(e)]
    if not todo:
        return 0
    conns = {c.id: c for c in an.connections}
    lookups = None
    names: dict[int, tuple[str | None, str]] = {}  # conn id -> (name, source)
    unknown = 0
    for e in todo:
        c = conns.get(e.connection)
        hit = names.get(e.connection)
        if hit is None:
            sni = None
            if c is not None:
                sni = (c.tls.sni if c.tls is not None else None) or (c.quic.sni if c.quic is not None else None)
            if sni:
                hit = (sni, "tls_sni")
            elif c is not None:
                if lookups is None:
                    from .waterfall import dns_lookups

                    lookups = dns_lookups(an)
                name = _dns_name(lookups, c)
                hit = (name, "dns") if name else (None, "unknown")
            else:
                hit = (None, "unknown")
            names[e.connection] = hit
        name, source = hit
        scheme = _scheme(e, c)
        src = dict(e.sources or {})
        src["authority"] = source
        e.sources = src
        if name is None:
            unknown += 1
            e.url = f"{scheme}://{UNKNOWN_HOST}{e.path}"
            continue
        e.authority = _with_port(name, scheme, c)
        e.url = f"{scheme}://{e.authority}{e.path}"
    return unknown
