"""The waterfall: one model of what every view draws (TUI, web app, PNG/SVG/HTML export,
compare), built once from the timeline model.

``build(analysis, group_by=None, color_by="content")`` returns a ``Waterfall``:

- ``rows``: one ``Row`` per ``Exchange`` in start order (or grouped by connection), each
  with its ``phases`` ``(name, start, end)`` in epoch seconds taken from packet times:
  ``dns`` (the lookup in the capture for the connection's host — its SNI, else the
  request's Host/:authority — whose answer holds the connection's server address and that
  ended before the connection began, from its first query to the last answer before the
  connection of its queries for the name and its CNAME chain (``match_dns``); one lookup is
  charged to one connection, the first to use it — none when a request for that name on
  another connection, one already open or joined mid-way, came between the answer and this
  connection), ``connect`` (TCP handshake: SYN → the client's ACK; or QUIC Initial →
  handshake done), ``tls`` (TCP: from the end of the TCP handshake — the client's set-up of
  TLS before its ClientHello is TLS — to the later Finished; QUIC: none), ``send``
  (request_start→request_end), ``wait`` (request_end→response_start: the first response
  byte's packet on the wire) and ``receive`` (response_start→response_end).  dns/connect/tls
  are drawn only on the first exchange of a connection (WebPageTest convention).
  The phases are sequential and cover the row from ``start`` to ``end`` exactly: where two
  overlap on the wire (a request sent before the handshake ended — TLS False Start, 0-RTT,
  QUIC — or a response that began before the request ended) the earlier phase ends where the
  later one begins, and time no phase covers is ``blocked`` (queued/stalled: between the DNS
  lookup's last answer and the connection's first packet) or ``idle`` (between the set-up and
  the request).  A
  capture cannot show when the browser queued a request, so a row begins at its first packet
  (DNS query, SYN/Initial, or the request's first byte).  ``phase_totals(row)`` gives each
  phase's total; they add up to the row's total.
- content classes and colours in the WebPageTest convention, a protocol badge, markers
  (push, priority, reset, flow-control stall, retransmission, gap) and hover lines.
- ``milestones``: first packet, first byte of the HTML, last byte of the last response, and
  a laid-over HAR's DOMContentLoaded and load events (``browser_milestones``)
  (page load time as seen on the wire) — of the page's requests only: ``page_of`` tells the
  page apart from background traffic in the same capture (rows keep ``background`` and its
  ``background_reason``; the rule is in ``page_of``'s docstring and docs/JSON.md).

Nothing here imports plotly; ``ui/figures.py`` draws a ``Waterfall``.
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from wirefall.dissectors.dataclass_repr import FACTORY, dataclass_repr
from wirefall.dissectors.registry import find, kind_types

from .model import DIRECTION_ARROWS, Analysis, Connection, Exchange, Frame, Note, NoteKind, not_sent_of

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from .waterfall_model import ConnectionRow, Marker, Milestone, Row, Throughput, Waterfall  # noqa: F401 (re-exported)

# build()'s view model (Waterfall, Row, ...) is defined in analyzer.waterfall_model, imported
# by build() and by the first ``waterfall.Row`` etc. (below): the commands that need only
# page_of/phases_by_exchange do not generate those dataclasses' methods at every start.
_VIEW_MODEL = frozenset(("ConnectionRow", "Marker", "Milestone", "Row", "Throughput", "Waterfall"))


def __getattr__(name: str) -> Any:
    if name in _VIEW_MODEL:
        from . import waterfall_model

        return getattr(waterfall_model, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

PHASES = ("blocked", "dns", "connect", "tls", "idle", "send", "wait", "receive")
PHASE_LABELS = {
    "blocked": "Queued / stalled",
    "dns": "DNS lookup",
    "connect": "Initial connection",
    "tls": "TLS negotiation",
    "idle": "Connection idle (ready, request not yet sent)",
    "send": "Request sent",
    "wait": "Waiting (TTFB)",
    "receive": "Content download",
}
CONTENT_CLASSES = ("html", "css", "script", "image", "font", "video", "other")

# The waterfall palette (docs/WATERFALL.md), after WebPageTest's: the connection phases
# (dns teal, connect orange, TLS purple), a colour of their own for sending the request and
# for waiting for the first byte (TTFB), and per content class (light, dark): the download is
# drawn light where no byte arrived and dark for each burst of packets that carried the
# body (``Row.chunks``); without chunks the whole download is dark.
PHASE_COLORS = {"dns": "#1f7c83", "connect": "#e58226", "tls": "#c141cd"}
BLOCKED_COLOR = "#d3d3d3"  # queued / stalled
IDLE_COLOR = "#606060"  # a connection set up before its first request was sent: a thin line (WebPageTest leaves it blank)
SEND_COLOR = "#3f5ba9"  # request sent (indigo: never a content colour)
WAIT_COLOR = "#7fe07f"  # waiting for the first byte (WebPageTest's light TTFB green)
CONTENT_COLORS = {
    "html": ("#82b5fc", "#2d6fd1"),
    "css": ("#b2ea94", "#3f8f1f"),
    "script": ("#fec584", "#a8700f"),  # (dark: a deep amber, apart from the connect orange #e58226 it once all but equalled)
    "image": ("#c4a7e7", "#6c5ce0"),  # (dark: an iris violet; #8b5ccc was TLS's #c141cd beside it, CIEDE2000 10.7)
    "font": ("#ff7a6b", "#d9331f"),
    "video": ("#f4a6cf", "#d6338a"),  # (pink: its teal was the DNS lookup's to the eye, RGB distance 24)
    "other": ("#b5b5b5", "#8c8c8c"),  # (light: #c4c4c4 was queued's #d3d3d3 but for 26)
}
# Colours for colour-by-connection (light, dark) — cycled.
CONNECTION_COLORS = [
    ("#9ecae1", "#3182bd"), ("#fdae6b", "#e6550d"), ("#a1d99b", "#31a354"), ("#bcbddc", "#756bb1"),
    ("#fc9272", "#de2d26"), ("#c7e9c0", "#238b45"), ("#fdd0a2", "#d94801"), ("#d9d9d9", "#636363"),
    ("#c6dbef", "#08519c"), ("#fbb4b9", "#c51b8a"),
]
BADGES = {
    "http/1.0": "HTTP/1.0", "http/1.1": "HTTP/1.1", "h2": "h2", "h2c": "h2c", "spdy/2": "SPDY/2",
    "spdy/3": "SPDY/3", "spdy/3.1": "SPDY/3.1", "h3": "h3", "h3-29": "h3-29", "quic": "QUIC", "gquic": "gQUIC",
}
MARKER_KINDS = ("push", "priority", "reset", "stall", "retransmission", "out_of_order", "gap")
SORTS = ("start", "duration", "size", "host")  # build(sort=...): row order within a group
GROUPS = ("connection", "host")  # build(group_by=...): rows grouped, groups in order of first use
THROUGHPUT_BIN = 0.010  # seconds per bin of the throughput track (widened for long captures)
MAX_THROUGHPUT_BINS = 4000
CHUNK_GAP = 0.001  # packets of one response further apart than this start a new burst (Row.chunks)
MAX_CHUNKS = 64  # bursts kept per row (past it, the smallest gaps between them closed)

_EXT_CLASS = {
    "html": "html", "htm": "html", "xhtml": "html", "css": "css", "js": "script", "mjs": "script",
    "png": "image", "jpg": "image", "jpeg": "image", "gif": "image", "webp": "image", "avif": "image",
    "svg": "image", "ico": "image", "bmp": "image", "woff": "font", "woff2": "font", "ttf": "font",
    "otf": "font", "eot": "font", "mp4": "video", "webm": "video", "m4s": "video", "m4v": "video", "mov": "video",
    "ogv": "video",
}


@lru_cache(maxsize=8192)  # (pure; a request-heavy capture asks about a few values 10^5 times)
def content_class(content_type: str | None, url: str | None = None) -> str:
    """WebPageTest's request classes from the MIME type, else the URL's extension."""
    ct = (content_type or "").split(";", 1)[0].strip().lower()
    if ct:
        if "html" in ct:
            return "html"
        if ct == "text/css":
            return "css"
        if "javascript" in ct or "ecmascript" in ct or ct in ("application/x-js", "text/jscript"):
            return "script"
        if ct.startswith("image/"):
            return "image"
        if ct.startswith("font/") or "font" in ct or ct in ("application/vnd.ms-fontobject",):
            return "font"
        if ct.startswith("video/") or ct in ("application/vnd.apple.mpegurl", "application/dash+xml"):
            return "video"
    if url:
        path = url.split("?", 1)[0].split("#", 1)[0]
        ext = path.rsplit("/", 1)[-1].rsplit(".", 1)[-1].lower() if "." in path.rsplit("/", 1)[-1] else ""
        if ext in _EXT_CLASS:
            return _EXT_CLASS[ext]
    return "other"


@dataclass(init=False, slots=True, eq=False, repr=False)  # (nothing compares two lookups by value)
class DnsLookup:
    """A DNS query in the capture and its answer (addresses, CNAME chain, rcode), and the connection it is charged to."""

    __repr__ = dataclass_repr  # (@dataclass's own text, not compiled at import: dissectors/dataclass_repr.py)

    name: str
    query_time: float
    query_packet: int
    response_time: float | None
    response_packet: int | None
    addresses: list[str] = field(default_factory=list)
    names: list[str] = field(default_factory=list)  # qname and the CNAME chain
    rcode: str | None = None
    used_by: int | None = None  # connection id whose first row shows this lookup
    qtype: str | None = None  # the query's record type ("A", "AAAA", "HTTPS" …)
    client: str | None = None  # the address that asked
    # (match_dns's lookup of a connection: the queries it is made of — the name's and its CNAME
    # chain's, first to last answer; empty on a query of the capture)
    parts: list[DnsLookup] = field(default_factory=list)

    # (@dataclass(init=False): written out, not compiled at every start; tests/test_dataclass_init.py)
    def __init__(self, name: str, query_time: float, query_packet: int, response_time: float | None, response_packet: int | None,
                 addresses: list[str] = FACTORY, names: list[str] = FACTORY, rcode: str | None = None, used_by: int | None = None,
                 qtype: str | None = None, client: str | None = None, parts: list[DnsLookup] = FACTORY) -> None:
        self.name = name
        self.query_time = query_time
        self.query_packet = query_packet
        self.response_time = response_time
        self.response_packet = response_packet
        self.addresses = [] if addresses is FACTORY else addresses
        self.names = [] if names is FACTORY else names
        self.rcode = rcode
        self.used_by = used_by
        self.qtype = qtype
        self.client = client
        self.parts = [] if parts is FACTORY else parts


# ------------------------------------------------------------------------- the page

# Link-local addresses (169.254.0.0/16, fe80::/10): cloud metadata servers and VM agents
# (their HTTP long-polls run beside every page load captured on a cloud VM), never a page.
BG_LINK_LOCAL = "link-local address {addr} (metadata server or VM agent, not the page)"
BG_FOREIGN_REFERER = "Referer/Origin from another origin ({origin})"
BG_OTHER_CLIENT = "from another client host ({addr}; the page's browser is {doc})"
BG_OTHER_AGENT = "sent by another program (User-Agent {agent!r}, not the document's) and not tied to the page"
BG_BEFORE_DOCUMENT = "started before the page's document and not tied to it"
BG_AFTER_PAGE = "started after the page's last response and not tied to it"
_DEFAULT_PORT = {"http": "80", "https": "443"}
UNKNOWN_VALUE = "<unknown>"  # a header value the capture does not show (analyzer.completeness.UNKNOWN)
_MAX_LINK_PASSES = 8  # fixpoint passes of the Referer/connection/host rule (each O(requests))
_MAX_REDIRECTS = 20


@dataclass(init=False, eq=False, repr=False)  # (nothing compares two pages by value)
class Page:
    """The page a capture loads, apart from background traffic (see ``page_of``)."""

    __repr__ = dataclass_repr  # (@dataclass's own text, not compiled at import: dissectors/dataclass_repr.py)

    document: int | None  # exchange id of the page's document (None: no request at all)
    redirects: list[int]  # exchange ids of the redirects that led to the document, first first
    origins: list[str]  # origins of the page's requests (scheme://host[:port])
    start: float | None  # the first packet that is not background traffic's
    start_packet: int | None
    end: float | None  # last byte of the page's last response
    end_packet: int | None
    background: dict[int, str]  # exchange id -> why it is not the page's

    # (@dataclass(init=False): written out, not compiled at every start; tests/test_dataclass_init.py)
    def __init__(self, document: int | None, redirects: list[int], origins: list[str], start: float | None, start_packet: int | None,
                 end: float | None, end_packet: int | None, background: dict[int, str]) -> None:
        self.document = document
        self.redirects = redirects
        self.origins = origins
        self.start = start
        self.start_packet = start_packet
        self.end = end
        self.end_packet = end_packet
        self.background = background

    def to_dict(self) -> dict[str, Any]:
        return {"document": self.document, "redirects": list(self.redirects), "origins": list(self.origins),
                "start": self.start, "start_packet": self.start_packet, "end": self.end, "end_packet": self.end_packet,
                "background": len(self.background)}


def _link_local(addr: str) -> bool:
    addr = addr.split("%", 1)[0]
    if ":" not in addr and not addr.startswith("169.254."):
        # (no IPv6 text, and not 169.254/16: a valid IPv4 address in the only form ip_address
        # takes, dotted decimal without leading zeros, would begin so; ipaddress, ~1 ms of a
        # start, is imported only for the addresses that may be link-local)
        return False
    import ipaddress

    try:
        ip = ipaddress.ip_address(addr)
    except ValueError:
        return False
    if ip.version == 6 and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_link_local


@lru_cache(maxsize=8192)  # (pure, as content_class)
def _origin(url: str | None) -> str | None:
    """scheme://host[:port] of an absolute URL, lower case, default port left out."""
    if not url or "://" not in url:
        return None
    scheme, _, rest = url.partition("://")
    netloc = rest.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0].rsplit("@", 1)[-1].lower()
    scheme = scheme.lower()
    if not netloc or not scheme.isascii() or netloc.startswith("<unknown>"):  # (analyzer.authority: no host known)
        return None
    host, sep, port = netloc.rpartition(":")
    if sep and not host.endswith("]") and "]" in port:  # [v6] without a port
        host, port = netloc, ""
    if sep and port == _DEFAULT_PORT.get(scheme):
        netloc = host
    return f"{scheme}://{netloc}"


def _ex_host(e: Exchange, c: Connection | None) -> str | None:
    o = _origin(e.url)
    if o is not None:
        return o.split("://", 1)[1]
    if e.authority:
        return e.authority.lower()
    if c is not None:
        sni = (c.tls.sni if c.tls is not None else None) or (c.quic.sni if c.quic is not None else None)
        if sni:
            return sni.lower()
        a = c.server[0]
        return f"[{a}]:{c.server[1]}" if ":" in a else f"{a}:{c.server[1]}"
    return None


def _is_document(e: Exchange) -> bool:
    if e.pushed:
        return False
    dest = e.header("sec-fetch-dest", response=False)
    if dest is not None:  # the browser says what it fetches
        return dest.strip().lower() == "document"
    return content_class(e.content_type or e.header("content-type"), e.url or e.path) == "html"


class _Request:
    """What ``page_of``'s rules read of a request, made once for all the requests that share
    its connection, request header list (a decoder shares one list between identical header
    blocks), URL, authority and push flag — a request-heavy capture has a few of these for
    10^5 requests.  ``tied``: rule 3 tied one of them to the page, and so every one (what
    ties a request — the page's origins, hosts and connections — only grows)."""

    __slots__ = ("connection", "pushed", "origin", "host", "referer", "origin_header", "agent", "browser",
                 "navigation", "tied", "unsent")

    def __init__(self, e: Exchange, c: Connection | None) -> None:
        ref = org = dest = ua = None  # the first of each request header (one pass over them)
        for k, v in e.request_headers:
            kl = k.lower()
            if kl == "referer" and ref is None:
                ref = v
            elif kl == "origin" and org is None:
                org = v
            elif kl == "sec-fetch-dest" and dest is None:
                dest = v
            elif kl == "user-agent" and ua is None and v != UNKNOWN_VALUE:
                ua = v
        o = _origin(e.url)
        self.connection = e.connection
        self.pushed = e.pushed
        self.origin = o  # the URL's origin and host
        self.host = o.split("://", 1)[1] if o is not None else _ex_host(e, c)
        self.referer = _origin(ref) if ref is not None else None  # the origins Referer and Origin name
        self.origin_header = _origin(org) if org and org != "null" else None
        self.agent = ua
        self.browser = ref is not None or org is not None or dest is not None  # a browser's headers
        self.navigation = dest is not None and dest.strip().lower() == "document"  # Sec-Fetch-Dest: document
        self.tied = False
        # a browser log's request that never reached the network: its connection is the one all
        # such rows share (browserlog.build.no_network_connection), which ties none to another
        self.unsent = e.browser is not None and not_sent_of(e.browser) is not None  # (no call for a capture's exchange: page_of is on requests --json's path)


def _link_local_end(c: Connection | None) -> str | None:
    """The connection's link-local endpoint address (server's first), if it has one."""
    if c is None:
        return None
    return c.server[0] if _link_local(c.server[0]) else c.client[0] if _link_local(c.client[0]) else None


# page_of's rule 3 ties the requests that share a _Request at once, in order of first use, while
# every one ties at its first request (True; tests/test_page_of_fast.py sets it off to compare)
_TIE_BY_REQUEST_FACTS = True


BROWSER_EVENTS = (("start_render", "start_render", "Start Render"), ("on_content_load", "dom_content_loaded", "DOMContentLoaded"),
                  ("on_load", "load_event", "Load event"))
BROWSER_EVENT_SLACK = 30.0  # seconds after the last packet (or row) within which a log's page event is this load's
BROWSER_START_SLACK = 5.0  # seconds before the first packet within which a log's page may start (navigation before any packet)


def browser_milestones(an: Analysis, t0: float, t_end: float) -> list:
    """The browser's page events — a HAR's ``onContentLoad`` and ``onLoad`` (DevTools' and
    WebPageTest's DOMContentLoaded and load lines) — as milestones on the capture's clock:
    each laid-over page's times minus its ``clock_offset`` (``browserlog.matching.placed_pages``),
    of the pages that start within the capture (``BROWSER_START_SLACK`` before its first
    packet at most: WebPageTest's HAR of two runs, the capture of the first, gives the first)
    and whose events fall before ``BROWSER_EVENT_SLACK`` after its end; no packet of their
    own.  A log whose requests matched none gives no offset: its pages are not placed."""
    from .browserlog.comparison import KIND_LABELS
    from .waterfall_model import Milestone

    b = an.browser if isinstance(an.browser, dict) else {}
    pages = []
    for p in b.get("pages") or ():
        off = p.get("clock_offset") if isinstance(p, dict) else None
        if not isinstance(off, (int, float)):
            continue
        ts = {k: p[k] - off for k, _, _ in BROWSER_EVENTS if isinstance(p.get(k), (int, float))}
        start = p["start"] - off if isinstance(p.get("start"), (int, float)) else min(ts.values(), default=t0)
        if ts and t0 - BROWSER_START_SLACK <= start <= t_end and all(t0 <= t <= t_end + BROWSER_EVENT_SLACK for t in ts.values()):
            pages.append((p, ts))
    out = []
    for i, (p, ts) in enumerate(pages):
        src = KIND_LABELS.get(str(p.get("source")), str(p.get("source") or "browser log"))
        tag = f"{src} page {i + 1}" if len(pages) > 1 else src
        for k, name, label in BROWSER_EVENTS:
            if k in ts:
                out.append(Milestone(name, f"{label} ({tag})", ts[k]))
    return out


def page_of(an: Analysis, exs: list[Exchange] | None = None, starts: dict[int, float] | None = None) -> Page:
    """The page of a capture, told apart from unrelated traffic captured with it.

    Requests are taken in start order (first known byte).  First, a request a browser log
    says is not its page's (``browser.background``: a HAR entry without pageref, wirefall's
    own ``_background``, a NetLog request Chrome made for itself or for another site's page —
    ``browserlog.netlog._mark_background``) is background with the log's reason, the log
    opened alone or laid over the capture; the rule then decides among the rest:

    1. *Link-local*: a request on a connection with an endpoint in 169.254.0.0/16 or
       fe80::/10 (a cloud metadata server, a VM agent's long-poll) is background — unless
       the document itself is link-local, in which case this rule is off.
    2. *The document*: the first request (not pushed, not link-local) that is a document —
       request header ``Sec-Fetch-Dest: document``, or else a response that is HTML
       (Content-Type, or the URL's extension) — preferring one with a response, and, when
       some request says ``Sec-Fetch-Dest: document``, one that says so (a browser's
       navigation before another program's HTML); with none, the first request on the
       earliest connection.  Redirects that led to it (an earlier 3xx whose Location
       resolves to the document's URL, followed back) are the page's too.
    2b. *Another client host*: when the capture shows a browser (below), a request from a
       client address other than the document's, of the same address family (the browser's
       host may use IPv4 and IPv6 side by side), is background — a second machine's traffic
       seen by the same capture.
    3. *Tied to the page* (repeated until nothing changes): a request whose ``Referer`` or
       ``Origin`` is one of the page's origins, or that shares a connection with a page
       request, or — having neither header, and no ``User-Agent`` other than the
       document's — goes to a host of the page; its origin, host and connection then belong
       to the page (not the connection that a browser log's requests that never reached the
       network share: a cache hit of the page ties none of Chrome's own failed look-ups).
    4. *The rest*, in start order: a request with a Referer/Origin from another origin is
       background.  If the capture shows a browser (some request carries ``Referer``,
       ``Origin`` or ``Sec-Fetch-Dest``), one whose ``User-Agent`` differs from the
       document's is background (another program: an agent, OS telemetry, curl), and of the
       others one that started before the
       document (a long-poll already open; not a response whose request the capture did not
       see: it may have begun after) is background, one that starts before the page's
       last tied response ends is the page's (no header ties it, its timing does) and any
       later one is background; without a browser (curl, h2load, nghttp: no such header
       anywhere) nothing tells a page apart and every remaining request is the page's.

    ``start`` is where the page's first row begins (``starts``: exchange id -> its waterfall
    row's start — the DNS lookup charged to its connection, its connection's first packet,
    or its request's first byte; computed when not given), so packets before it — background
    traffic, a connection the capture joined mid-way idling before the navigation — do not
    count; with no page request, the capture's first packet.  ``end`` is the last byte of
    the page's last response (the page load milestone).

    Every rule reads of a request only its ``_Request`` (rules 1 and 2b: its connection),
    and of an exchange its id, times, status and response: the facts are made once per
    distinct ``_Request`` and the per-request passes only look them up."""
    conns = {c.id: c for c in an.connections}
    if exs is None:
        exs = [e for e in an.exchanges if _exchange_start(e) is not None]
        exs.sort(key=lambda e: (_exchange_start(e), e.id))
    if an.source != "capture" or an.browser:
        # a browser log, opened alone or laid over the capture, says itself which requests are
        # not its page's (a HAR entry without pageref; wirefall's own _background; a NetLog
        # request Chrome made for itself, or for another site's page: netlog._mark_background):
        # background, and the rules decide among the rest (analyzer/browserlog/build.py:
        # ``browser.background``).  Over a capture as alone: the amazon load's GMS check-in,
        # refused before the network, was a page row there, as bg-mixed's second ListAccounts,
        # timed inside the page, of three alike
        said = {e.id: why for e in exs if isinstance(e.browser, dict) and isinstance(why := e.browser.get("background"), str)}
        if said:
            p = page_of(an, [e for e in exs if e.id not in said], starts)
            p.background.update(said)
            if not len(an.index):
                p.start = _log_page_start(an, [e for e in exs if e.id not in p.background])
            return p

    def start_of(e: Exchange) -> float:
        t = _exchange_start(e)
        assert t is not None  # every caller's exs holds only exchanges with a start (as above)
        return t

    # each exchange's request facts (``facts[i]``: of ``exs[i]``); the _Requests in order of first use
    reqs: dict[tuple, _Request] = {}
    facts: list[_Request] = []
    for e in exs:
        k = (e.connection, id(e.request_headers), e.url, e.authority, e.pushed)  # (the lists live as long as exs)
        r = reqs.get(k)
        if r is None:
            r = reqs[k] = _Request(e, conns.get(e.connection))
        facts.append(r)
    browser = any(r.browser for r in reqs.values())
    # rules 1 and 2b set connections apart: connection id -> why its requests are background
    link_local: dict[int, str] = {}
    for cid in dict.fromkeys(r.connection for r in reqs.values()):
        addr = _link_local_end(conns.get(cid))
        if addr is not None:
            link_local[cid] = BG_LINK_LOCAL.format(addr=addr)
    cands = [r for r in reqs.values() if not r.pushed and r.connection not in link_local] or [
        r for r in reqs.values() if not r.pushed]
    if not cands:
        return _page_bounds(an, Page(None, [], [], None, None, None, None, {}), exs, starts)
    if len(cands) == len(reqs) and any(r.connection in link_local for r in cands):
        link_local = {}  # the document is link-local itself: rule 1 is off
    cand = set(cands)

    def candidates() -> Iterator[tuple[Exchange, _Request]]:
        pairs = zip(exs, facts)
        return pairs if len(cand) == len(reqs) else ((e, r) for e, r in pairs if r in cand)

    navigations = [(e, r) for e, r in candidates() if r.navigation] if any(r.navigation for r in cands) else []
    found = next((x for x in navigations if x[0].response_start is not None), None) or (navigations[0] if navigations else None)
    if found is None:
        # the first document with a response, else the first document: one pass; _is_document
        # asked once per distinct (request facts, Content-Type, response header list, path)
        docs: dict[tuple, bool] = {}
        first_doc = None
        for e, r in candidates():
            dk = (r, e.content_type, id(e.response_headers), e.path)
            d = docs.get(dk)
            if d is None:
                d = docs[dk] = _is_document(e)
            if d:
                if e.response_start is not None:
                    found = (e, r)
                    break
                if first_doc is None:
                    first_doc = (e, r)
        found = found or first_doc
    guessed = found is None  # (no document in the capture: the first request stands for it)
    if found is None:
        first_conn = min({r.connection for r in cands}, key=lambda cid: (conns[cid].start if cid in conns else 0.0, cid))
        found = next(x for x in candidates() if x[1].connection == first_conn)
    doc, dreq = found
    if doc.connection in link_local:
        link_local = {}
    # 2b: another client host (same address family as the document's client, another address)
    other_client: dict[int, str] = {}
    dconn = conns.get(doc.connection)
    if dconn is not None and browser and dconn.client[0]:
        dclient = dconn.client[0]
        dv6 = ":" in dclient
        for cid in dict.fromkeys(r.connection for r in reqs.values()):
            c = conns.get(cid)
            if c is None or cid in link_local:
                continue
            a = c.client[0]
            if a and a != dclient and (":" in a) == dv6:  # (a browser log may not know a socket's address)
                other_client[cid] = BG_OTHER_CLIENT.format(addr=a, doc=dclient)
    apart = {**link_local, **other_client}
    doc_ua = dreq.agent if browser else None  # (without a browser no header tells programs apart)
    page: set[int] = {doc.id}  # the document and its redirects
    origins: list[str] = []
    origin_set: set[str] = set()
    hosts: set[str] = set()
    pconns: set[int] = set()

    def add(r: _Request) -> None:
        if r.origin is not None and r.origin not in origin_set:
            origin_set.add(r.origin)
            origins.append(r.origin)
        if r.host is not None:
            hosts.add(r.host)
        if not r.unsent:
            pconns.add(r.connection)

    def tie(r: _Request) -> bool:
        """Rule 3 for a request with these facts, now."""
        ref, org = r.referer, r.origin_header
        if (ref is not None and ref in origin_set) or (org is not None and org in origin_set) or r.connection in pconns or (
                ref is None and org is None and r.host in hosts and (r.agent is None or doc_ua is None or r.agent == doc_ua)):
            r.tied = True
            add(r)
        return r.tied

    add(dreq)
    if dreq.origin is None or guessed:
        # the document's own origin is not known (joined mid-way: its :authority an HPACK/QPACK
        # reference from before the capture): the origins its connection's requests name in
        # Referer / Origin are the page's — page-multi-late's subresources on static.lab.test
        # said "Referer: https://www.lab.test/", the origin the document's connection's own
        # requests named, and read as another origin's: background.  Likewise where no document is
        # in the capture and a subresource stands for it (the amazon load cut at packet 640: its
        # scripts on images-na say "Referer: https://www.amazon.com/", and the page's beacons to
        # fls-na, Origin www.amazon.com, read as another origin's)
        for r in reqs.values():
            if r.connection == doc.connection:
                for o in (r.referer, r.origin_header):
                    if o is not None and o not in origin_set:
                        origin_set.add(o)
                        origins.append(o)
    # redirects that led to the document
    redirects: list[int] = []
    target, dstart = doc, start_of(doc)
    for _ in range(_MAX_REDIRECTS):
        if not target.url:
            break
        tstart = start_of(target)
        prev = None
        for e, r in zip(exs, facts):
            if start_of(e) >= tstart:
                break
            loc = e.header("location") if e.status is not None and 300 <= e.status < 400 else None
            if loc and e.id not in page and r.connection not in apart:
                from urllib.parse import urljoin  # (~1 ms of a start: imported only when a redirect is seen)

                try:
                    if urljoin(e.url or "", loc).split("#", 1)[0] == target.url.split("#", 1)[0]:
                        prev = (e, r)
                except ValueError:
                    continue
        if prev is None:
            break
        redirects.insert(0, prev[0].id)
        page.add(prev[0].id)
        add(prev[1])
        target, dstart = prev[0], start_of(prev[0])
    # 3: the first pass in start order ties a request where its facts tie now.  While the facts
    # in order of first use each tie at their first request, that pass ties every request and
    # adds the same origins in the same order: no request is left, none need be looked at
    undecided: list[tuple[Exchange, _Request]] = []
    if not (_TIE_BY_REQUEST_FACTS and all(r.tied or tie(r) for r in reqs.values() if r.connection not in apart)):
        undecided = [(e, r) for e, r in zip(exs, facts) if e.id not in page and r.connection not in apart]
        for _ in range(_MAX_LINK_PASSES):
            rest = [(e, r) for e, r in undecided if not (r.tied or tie(r))]
            if len(rest) == len(undecided):
                break
            undecided = rest
    # the background: rules 1 and 2b (each in start order), then rule 4 on the rest
    background: dict[int, str] = {}
    for why in (link_local, other_client):
        if why:
            background.update((e.id, why[r.connection]) for e, r in zip(exs, facts) if r.connection in why)
    tied_end = None
    if browser and undecided:  # (rule 4's timing: the last end of the page's requests so far)
        left = {e.id for e, _ in undecided}
        ends = [t for e, r in zip(exs, facts) if e.id not in left and r.connection not in apart for t in (_exchange_end(e),) if t is not None]
        tied_end = max(ends) if ends else None
    for e, r in undecided:
        ref, org, ua = r.referer, r.origin_header, r.agent
        if ref is not None or org is not None:
            background[e.id] = BG_FOREIGN_REFERER.format(origin=ref or org)
        elif ua is not None and doc_ua is not None and ua != doc_ua:
            background[e.id] = BG_OTHER_AGENT.format(agent=ua[:80])
        elif not browser:
            pass  # the page's
        elif start_of(e) < dstart and e.request_start is not None:
            background[e.id] = BG_BEFORE_DOCUMENT
        # (a response whose request the capture did not see — a download the capture joined
        # mid-way — may have begun before the document or not: its timing below decides, so a
        # page load the capture joined keeps its download in the page: amazon cut at packet 200)
        elif tied_end is not None and start_of(e) <= tied_end:
            pass  # the page's
        else:
            background[e.id] = BG_AFTER_PAGE
    return _page_bounds(an, Page(doc.id, redirects, origins, None, None, None, None, background), exs, starts)


def _packet_at_time(an: Analysis, t: float) -> int | None:
    """The first packet whose time is ``t`` (captures are in time order, mostly: a bisection,
    then a bounded scan when the order is broken there)."""
    ts = an.index.ts
    n = len(ts)
    i = bisect_left(ts, t)
    if i < n and ts[i] == t:
        return i + 1
    try:
        return ts.index(t, 0, min(n, 1 << 20)) + 1
    except ValueError:
        return None


def _page_bounds(an: Analysis, p: Page, exs: list[Exchange], starts: dict[int, float] | None = None) -> Page:
    idx = an.index
    n = len(idx)
    bg = p.background
    if n:
        p.start, p.start_packet = idx.ts[0], 1
        if an.source == "capture" and any(e.id not in bg for e in exs):
            if starts is None:
                starts = {eid: ph[0][1] for eid, ph in phases_by_exchange(an).items() if ph}
            # min(starts of the page's exchanges), in one pass
            first: float | None = None
            for e in exs:
                eid = e.id
                if eid in starts and eid not in bg:
                    at = starts[eid]
                    if first is None or at < first:
                        first = at
            if first is not None and first > p.start:
                p.start, p.start_packet = first, _packet_at_time(an, first)
    # max((e.response_end, e.response_end_packet) of the page's exchanges, key=its time): the
    # first of the latest, without a list of pairs (every request of a request-heavy capture)
    end: float | None = None
    end_packet = None
    for e in exs:
        t = e.response_end
        if t is not None and (end is None or t > end) and e.id not in bg:
            end, end_packet = t, e.response_end_packet
    if end is not None:
        p.end, p.end_packet = end, end_packet
    if not n and bg and an.browser:
        p.start = _log_page_start(an, [e for e in exs if e.id not in bg])
    return p


def _log_page_start(an: Analysis, page_exs: list[Exchange]) -> float | None:
    """A browser log's page start when background requests are set apart (the log's own
    start, ``Analysis.start_time``, counts them): the first of its page's requests' starts
    (the browser's request start, its DNS lookup, its connection's set-up) and the page
    start the log gives (a HAR page's ``startedDateTime``) within ``LOG_PAGE_START_SLACK``
    before them."""
    from .model import log_start

    conns = {c.id: c for c in an.connections}
    ts: list[float] = []
    for e in page_exs:
        t = _exchange_start(e)
        if t is not None:
            ts.append(t)
        c = conns.get(e.connection)
        if c is not None and c.connect_start is not None:
            ts.append(c.connect_start)
    first, ts = log_start((an.browser or {}).get("pages"), page_exs, ts)
    return None if first is None else min(ts)


# ---------------------------------------------------------------------------------- DNS


def dns_lookups(an: Analysis) -> list[DnsLookup]:
    """DNS lookups in the capture: from ``dns`` frames when the DNS session is registered,
    else by re-reading the (few) packets of port-53 flows and decoding them here."""
    msgs: list[tuple[int, float, int, dict]] = []  # (conn, time, packet, fields)
    protos = an.frame_protocols()  # (known without reading the frames of a reopened analysis: none read when no DNS)
    for f in an.frames if protos is None or "dns" in protos else ():
        if f.protocol == "dns" and f.fields:
            msgs.append((f.connection, f.time, f.packet, dict(f.fields, response=f.type == "RESPONSE")))
    if not msgs:
        msgs = _read_dns_packets(an)
    client_of = {c.id: c.client[0] for c in an.connections if c.protocol == "dns"}  # (the flow's first sender: the asker)
    pending: dict[tuple[int, int | None, str | None], tuple[float, int]] = {}
    out: list[DnsLookup] = []
    for conn, t, pkt, fl in sorted(msgs, key=lambda m: m[2]):
        key = (conn, fl.get("id"), fl.get("qname"))
        if not fl.get("response"):
            pending.setdefault(key, (t, pkt))
            continue
        q = pending.pop(key, None)
        answers = fl.get("answers") or []
        addrs = [a[3] for a in answers if a[1] in ("A", "AAAA")]
        names = [fl.get("qname") or ""] + [a[3] for a in answers if a[1] == "CNAME"]
        out.append(DnsLookup(
            name=fl.get("qname") or "", query_time=q[0] if q else t, query_packet=q[1] if q else pkt,
            response_time=t, response_packet=pkt, addresses=addrs, names=names, rcode=fl.get("rcode"),
            qtype=_qtype(fl.get("qtype")), client=client_of.get(conn),
        ))
    qtypes = {(conn, fl.get("id"), fl.get("qname")): fl.get("qtype") for conn, _t, _p, fl in msgs if not fl.get("response")}
    for key, (t, pkt) in pending.items():  # unanswered queries
        out.append(DnsLookup(name=key[2] or "", query_time=t, query_packet=pkt, response_time=None, response_packet=None,
                             qtype=_qtype(qtypes.get(key)), client=client_of.get(key[0])))
    out.sort(key=lambda d: d.query_packet)
    return out


_QTYPE_NUMBERS = {1: "A", 28: "AAAA", 64: "SVCB", 65: "HTTPS"}


def _qtype(v: Any) -> str | None:
    """A query's record type by name (the DNS frames' ``qtype``: a name, or a number)."""
    if isinstance(v, int):
        return _QTYPE_NUMBERS.get(v, str(v))
    return v if isinstance(v, str) and v else None


def _read_dns_packets(an: Analysis) -> list[tuple[int, float, int, dict]]:
    dns_conns = {c.id for c in an.connections if c.protocol == "dns"}
    if not dns_conns or not len(an.index):
        return []
    from wirefall.dissectors import dns as dnsd

    from .capture import PacketSource
    from .packet import Decoder

    idx = an.index
    src = PacketSource(an.path)
    dec = Decoder()
    out = []
    try:
        conn_arr = idx.conn
        for i in range(len(idx)):
            if conn_arr[i] not in dns_conns:
                continue
            d = dec.decode(idx.linktype[i], src.read(idx.offset[i], idx.caplen[i]))
            if d is None or isinstance(d, str) or not d.payload:
                continue
            m = dnsd.parse(d.payload)
            if m.error and not m.questions:
                continue
            out.append((conn_arr[i], idx.ts[i], i + 1, {
                "id": m.id, "qname": m.qname, "qtype": m.qtype, "rcode": m.rcode, "response": m.response,
                "answers": [[a.name, a.type, a.ttl, a.value] for a in m.answers],
            }))
    except OSError:
        pass
    finally:
        src.close()
    return out


def _host_of(conn: Connection, exchanges: list[Exchange]) -> str | None:
    if conn.tls is not None and conn.tls.sni:
        return conn.tls.sni
    if conn.quic is not None and conn.quic.sni:
        return conn.quic.sni
    for e in exchanges:
        if e.authority:
            return e.authority.rsplit(":", 1)[0] if not e.authority.endswith("]") else e.authority
    return None


def _host_name(host: str | None) -> str | None:
    """The name in a Host / :authority / SNI value (port and IPv6 brackets taken off)."""
    if not host:
        return None
    h = host.strip().lower()
    if h.startswith("["):
        return None  # an address, never looked up
    h = h.rsplit(":", 1)[0] if h.count(":") == 1 else h
    return h.rstrip(".") or None


# the record types a browser's lookup asks and waits for before it connects: the addresses and
# the HTTPS/SVCB record (ALPN, ECH), for the name and for each name of its CNAME chain
LOOKUP_TYPES = frozenset(("A", "AAAA", "HTTPS", "SVCB"))
# a query of the chain sent more than this after the lookup's latest answer so far is another
# lookup's (the amazon load's resolver asked the CNAME targets' HTTPS records 9–13 ms after)
LOOKUP_FOLLOW_GAP = 0.1


def _dns_norm(name: str | None) -> str:
    return (name or "").lower().rstrip(".")


def match_dns(lookups: list[DnsLookup], conn: Connection, host: str | None) -> DnsLookup | None:
    """The lookup that gave this connection its server address: the queried name is the
    connection's host (SNI, else Host/:authority), the answer holds the server's address and
    it arrived before the connection's first packet; the latest such lookup wins.  Without a
    host name no lookup is charged (an address alone does not say which name was asked).

    The lookup returned spans what the client waited for (``parts``: its queries): from its
    first query (below) to the last answer, before the connection's SYN/Initial, of the
    queries of the same asker for the name and for every name of its CNAME chain, of the
    types ``LOOKUP_TYPES``, each sent at most ``LOOKUP_FOLLOW_GAP`` after the lookup's latest
    answer so far (a resolver asks the chain's names once the name's answers name them).
    Not the answer that carried the address alone: the amazon load's www.amazon.com — its A/AAAA
    answered at 9.1 ms, the HTTPS records of its CNAME target e15316.dsca.akamaiedge.net at
    37.6; Chrome's resolver job ran until its HTTPS query gave up (NetLog
    HOST_RESOLVER_DNS_TASK_TIMEOUT) and WebPageTest's HAR says ``_dns_ms`` 54."""
    name = _host_name(host)
    if name is None:
        return None
    start = conn.connect_start if conn.connect_start is not None else conn.start
    addr = conn.server[0]
    best = None
    best_t = 0.0  # best's response time
    for d in lookups:
        rt = d.response_time
        if rt is None or rt > start + 1e-9:
            continue
        if addr in d.addresses and _dns_norm(d.name) == name:
            if best is None or rt >= best_t:
                best, best_t = d, rt
    if best is None:
        return None
    # the lookup started with the first query for the same name that belongs to it: one sent
    # with it (A, AAAA, HTTPS in parallel: still unanswered when it was sent) or before it
    # whose answer gave no address (Chromium asks HTTPS first and A once that is answered:
    # bg-mixed's static.test, HTTPS 127 → 128, A 129 → 132, one 29 ms resolver job in its
    # NetLog), back to an earlier query that did give addresses (an earlier lookup, another
    # client's) or a second before
    first, first_q = best, best.query_time
    parts = [best]
    for d in sorted((d for d in lookups if d.name == best.name and d.query_time < best.query_time
                     and best.query_time - d.query_time < 1.0), key=lambda d: d.query_time, reverse=True):
        if d.response_time is not None and d.response_time < best.query_time and d.addresses:
            break
        if d.query_time < first_q:
            first, first_q = d, d.query_time
        if d.response_time is not None and d.response_time <= start + 1e-9 and d.client == best.client:
            parts.append(d)
    # the rest of the lookup: the other queries for the name and its CNAME chain, answered
    # before the connection began (a query answered after it was not waited for)
    cands = sorted((d for d in lookups if d.response_time is not None and first_q <= d.query_time and d.response_time <= start + 1e-9
                    and d.client == best.client and (d.qtype is None or d.qtype in LOOKUP_TYPES) and d not in parts),
                   key=lambda d: d.query_time)
    names = {_dns_norm(n) for d in parts for n in d.names} | {name}
    end = max(d.response_time or best_t for d in parts)
    grew = True
    while grew:  # (passes in time order until nothing joins: as many as the chain has steps)
        grew = False
        for d in cands:
            if d.query_time > end + LOOKUP_FOLLOW_GAP:
                break
            if d not in parts and _dns_norm(d.name) in names:
                parts.append(d)
                names.update(_dns_norm(n) for n in d.names)
                end = max(end, d.response_time or end)
                grew = True
    last = max(parts, key=lambda d: (d.response_time or 0.0, d.response_packet or 0))
    parts.sort(key=lambda d: d.query_packet)
    return DnsLookup(best.name, first_q, first.query_packet, last.response_time, last.response_packet, best.addresses,
                     best.names, best.rcode, qtype=best.qtype, client=best.client, parts=parts)


# ------------------------------------------------------------------------ markers helpers

# Which frame types draw which marker comes from the protocol registry (each protocol's
# descriptor's FrameKinds: reset, priority, push, blocked, window), read per call so a
# protocol added to (or changed in) the registry shows without an edit here.


def _field(f: Frame, *names, default=None):
    fl = f.fields or {}
    for n in names:
        if n in fl and fl[n] is not None:
            return fl[n]
    return default


def _initial_window(f: Frame, protocol: str) -> int | None:
    s = _field(f, "settings")
    items: list = []
    if isinstance(s, dict):
        items = list(s.items())
    elif isinstance(s, list):
        items = [tuple(x[:2]) if isinstance(x, (list, tuple)) else (x.get("id") or x.get("name"), x.get("value")) for x in s
                 if isinstance(x, (list, tuple, dict))]
    d = find(protocol)
    sid = d.initial_window_setting if d is not None else None
    keys = (sid, str(sid), "SETTINGS_INITIAL_WINDOW_SIZE", "INITIAL_WINDOW_SIZE")
    for k, v in items:
        key = k if not isinstance(k, str) else k.upper()
        if key in keys:
            try:
                return int(v)
            except (TypeError, ValueError):
                return None
    return None


def flow_control(protocol: str) -> str | None:
    """How a protocol's flow control shows (the registry's ``flow_control``), None: it has none."""
    d = find(protocol)
    return d.flow_control.get(protocol) if d is not None else None


def flow_control_stalls(frames: list[Frame], protocol: str) -> list[tuple[int | None, int, float, float | None, int]]:
    """Flow-control stalls of one HTTP/2 or SPDY/3+ connection: (stream id or None for the
    connection window, direction of the blocked sender, start, end, packet).  A stall starts
    when a DATA frame leaves the sender's window at zero and ends at the receiver's next
    WINDOW_UPDATE for that window.  QUIC/H3 BLOCKED frames are reported as they are."""
    out: list[tuple[int | None, int, float, float | None, int]] = []
    kind = flow_control(protocol)
    if kind is None:
        return out  # (SPDY/2 has no flow control)
    conn_window = [65535, 65535]  # credit the sender in direction d has (connection level)
    init = [65535, 65535]  # initial stream window for a sender in direction d
    stream_window: dict[tuple[int, int], int] = {}
    open_stall: dict[tuple[int | None, int], tuple[float, int]] = {}
    conn_level = kind == "connection"
    quic = kind == "blocked"  # QUIC: the sender says so in *_BLOCKED frames
    blocked_types, window_types = kind_types("blocked"), kind_types("window")
    for f in frames:
        t = f.type
        if quic:
            if t in blocked_types and f.protocol == "quic":
                out.append((f.stream_id if t == "STREAM_DATA_BLOCKED" else None, f.direction, f.time, None, f.packet))
            continue
        if t == "SETTINGS":
            v = _initial_window(f, protocol)
            if v is not None:
                d = 1 - f.direction  # settings bound the peer's sending
                delta = v - init[d]
                init[d] = v
                for (sd, sid) in list(stream_window):
                    if sd == d:
                        stream_window[(sd, sid)] += delta
        elif t == "DATA" and f.stream_id is not None:
            d = f.direction
            n = f.length
            key = (d, f.stream_id)
            stream_window[key] = stream_window.get(key, init[d]) - n
            if conn_level:
                conn_window[d] -= n
            if stream_window[key] <= 0 and (f.stream_id, d) not in open_stall:
                open_stall[(f.stream_id, d)] = (f.time, f.packet)
            if conn_level and conn_window[d] <= 0 and (None, d) not in open_stall:
                open_stall[(None, d)] = (f.time, f.packet)
        elif t in window_types:
            inc = _field(f, "increment", "window_size_increment", "delta_window_size", "delta", default=None)
            try:
                inc = int(inc) if inc is not None else None
            except (TypeError, ValueError):
                inc = None
            if inc is None:
                continue
            d = 1 - f.direction  # the update credits the peer's sending
            sid = f.stream_id or 0
            k: tuple[int | None, int]
            if sid == 0:
                conn_window[d] += inc
                k = (None, d)
            else:
                stream_window[(d, sid)] = stream_window.get((d, sid), init[d]) + inc
                k = (sid, d)
            st = open_stall.pop(k, None)
            if st is not None:
                out.append((k[0], d, st[0], f.time, st[1]))
        elif t in blocked_types:
            out.append((f.stream_id if t == "STREAM_DATA_BLOCKED" else None, f.direction, f.time, None, f.packet))
    for (stalled, d), (t0, pkt) in open_stall.items():
        out.append((stalled, d, t0, None, pkt))
    return out


# tshark's TCP analysis (analyzer/tcp_analysis.py: a second read of the TCP headers, ~6 µs a
# packet) gives the waterfall its retransmissions up to this many packets, or whenever it has
# been computed already; above, the reassembler's own list (segments whose bytes the capture
# had already carried: not the retransmissions that filled a hole, a loss before the capture
# point; docs/WATERFALL.md)
LOSS_ANALYSIS_MAX = 100_000


def tcp_flags_for_loss(an: Analysis):
    """The capture's ``TcpAnalysis`` when the waterfall may use it (``LOSS_ANALYSIS_MAX``), else None."""
    import os

    from .tcp_analysis import finished, tcp_analysis

    ta = finished(an)
    if ta is not None:
        return ta
    if len(an.index) > LOSS_ANALYSIS_MAX or not an.path or not os.path.isfile(an.path):
        return None
    from .capture import PacketSource

    try:
        return tcp_analysis(an, PacketSource(an.path))
    except (OSError, ValueError, EOFError):
        return None


def connection_loss_events(an: Analysis, conn: Connection, ta=None) -> list[tuple[str, float, int, str]]:
    """Retransmissions and capture gaps on a connection: (kind, time, packet, text).  With
    ``ta`` (``tcp_flags_for_loss``) the retransmissions are tshark's (``tcp.analysis.retransmission``,
    fast and spurious ones included: a segment that filled a hole counts) and so are its
    out-of-order segments (kind ``out_of_order``), else the reassembler's duplicates of bytes
    already captured."""
    out = []
    seen: set[int] = set()
    for n in conn.notes:
        if not isinstance(n, Note) or n.packet is None or not 0 < n.packet <= len(an.index):
            continue
        if n.kind is NoteKind.GAP:
            out.append(("gap", an.time(n.packet), n.packet, f"{n.length} bytes lost ({DIRECTION_ARROWS[n.direction or 0]})"))
        elif n.kind is NoteKind.RETRANSMISSION_DIFFERS:
            out.append(("retransmission", an.time(n.packet), n.packet, "retransmission (bytes differ)"))
            seen.add(n.packet)
    if ta is not None and conn.transport == "tcp":
        from .tcp_analysis import F_FAST_RETRANSMISSION, F_SPURIOUS_RETRANSMISSION, retransmissions_of

        for k, d, f in retransmissions_of(an, ta, conn):
            if k in seen:
                continue
            kind = " (fast)" if f & F_FAST_RETRANSMISSION else " (spurious)" if f & F_SPURIOUS_RETRANSMISSION else ""
            way = "" if d is None else " " + ("c→s" if d == 0 else "s→c")
            out.append(("retransmission", an.time(k), k, f"retransmission{way}{kind}"))
        # tshark's out-of-order segments: a hole filled within the handshake's RTT of the
        # highest segment (a lost segment resent at once — lossy page-h2's three late
        # recoveries, 690-726 ms — or packets reordered on the way); not a retransmission in
        # tshark's words, so a mark of its own
        for k, d, _f in retransmissions_of(an, ta, conn, "tcp.analysis.out_of_order"):
            if k not in seen:
                way = "" if d is None else " " + ("c→s" if d == 0 else "s→c")
                out.append(("out_of_order", an.time(k), k, f"out-of-order segment{way} (filled a hole: a quick resend or reordering)"))
    else:  # the flow layer's per-packet lists (DirStats.retransmission_packets: packet numbers)
        for d, st in enumerate(conn.stats):
            for pkt in getattr(st, "retransmission_packets", ()) or ():
                if 0 < pkt <= len(an.index) and pkt not in seen:
                    out.append(("retransmission", an.time(pkt), pkt, "retransmission " + ("c→s" if d == 0 else "s→c")))
    out.sort(key=lambda x: x[2])
    return out


# ---------------------------------------------------------------------------------- build


def _exchange_start(e: Exchange) -> float | None:
    t = e.request_start  # (the first of request_start, request_end, response_start, response_end set)
    if t is None:
        t = e.request_end
        if t is None:
            t = e.response_start
            if t is None:
                t = e.response_end
    return t


def _exchange_end(e: Exchange) -> float | None:
    t = e.response_end  # (the last of response_end, response_start, request_end, request_start set;
    if t is None:       # plain tests, no generator: stats calls it for every request of every row)
        t = e.response_start
        if t is None:
            t = e.request_end
            if t is None:
                t = e.request_start
    return t


def _ms(a: float | None, b: float | None) -> str:
    return "" if a is None or b is None else f"{(b - a) * 1000:.1f} ms"


def _fmt_bytes(n: int | None) -> str:
    if n is None:
        return "?"
    if n < 1024:
        return f"{n} B"
    if n < 1 << 20:
        return f"{n / 1024:.1f} KiB"
    return f"{n / (1 << 20):.2f} MiB"


def _tls_span(conn: Connection) -> tuple[float | None, float | None]:
    if conn.tls_start is not None:
        return conn.tls_start, conn.tls_end
    t = conn.tls
    if t is None or t.client_hello_time is None:
        return None, None
    ends = [x for x in (t.client_finished_time, t.server_finished_time) if x is not None]
    return t.client_hello_time, (max(ends) if ends else None)


def _log_says_ready(e: Exchange, c: Connection) -> bool:
    """The browser's own record of this request (a NetLog or HAR laid over the capture) has no
    DNS, connect or TLS of its own, and the wire shows the connection ready (its handshake
    done) before the request began (its browser start moved to the wire's clock by the log's
    own offset): the browser found the connection ready — made for another request it raced
    for, or a preconnect —, so the connection's set-up is not this row's; the connection's own
    row still draws it.  The amazon load's ue-base.js, the first request on a QUIC connection
    ready 13 ms before it (raced for three requests that went over TCP; NetLog: bound to the
    QUIC session, no connect) drew 72 ms of connect and 19 ms idle; its second document, on a
    connection ready 194 ms before, the same.  A document whose connection the navigation
    opened just before its request (the lab's loads: ready 10-40 ms after it) keeps it."""
    b = e.browser
    if not isinstance(b, dict) or b.get("source") not in ("netlog", "har"):
        return False
    t, off = b.get("times"), b.get("offsets")
    if not (isinstance(t, dict) and isinstance(off, dict) and t.get("send_start") is not None and t.get("connect_start") is None
            and t.get("ssl_start") is None and t.get("dns_start") is None):
        return False
    start, shift = t.get("start"), off.get("request_start")
    ready = max((x for x in (c.connect_end, c.tls_end) if x is not None), default=None)
    return isinstance(start, float) and isinstance(shift, float) and ready is not None and ready <= start - shift


def exchange_phases(e: Exchange, conn: Connection | None = None, dns: DnsLookup | None = None) -> list[tuple[str, float, float]]:
    """The phases of one exchange's row, sequential and contiguous (see the module doc):
    ``conn`` (and its ``dns`` lookup) for the first exchange of a connection, which also
    draws the connection's phases — unless a browser log laid over the capture says the request
    did not wait for it (``_log_says_ready``)."""
    if conn is not None and conn.first_packet and _log_says_ready(e, conn):
        conn = dns = None
    if conn is None and not e.pushed:
        # the common row (a request sent, then answered, in order): what the loop below makes
        # of it, without the loop (request-heavy captures have tens of thousands of them)
        rs, re, sp, pe = e.request_start, e.request_end, e.response_start, e.response_end
        if rs is not None and re is not None and sp is not None and pe is not None and rs <= re <= sp <= pe:
            return [("send", rs, re), ("wait", re, sp), ("receive", sp, pe)]
    raw: list[tuple[str, float, float]] = []
    c = conn
    if c is not None:
        if dns is not None and dns.response_time is not None:
            raw.append(("dns", dns.query_time, dns.response_time))
        if c.connect_start is not None and c.connect_end is not None and c.connect_end >= c.connect_start:
            raw.append(("connect", c.connect_start, c.connect_end))
        ts, te = _tls_span(c)
        if ts is not None and te is not None:
            if c.connect_end is not None and ts < c.connect_end:
                ts = c.connect_end  # QUIC: handshake is already the connect phase
            elif (c.connect_start is not None and c.connect_end is not None and ts > c.connect_end
                  and (e.request_start is None or e.request_start >= ts)):
                # TLS over TCP: the client's TLS set-up begins as its TCP handshake ends (its
                # ACK of the SYN/ACK) — Chrome's SSL_CONNECT begins in the millisecond its
                # TCP_CONNECT ends, a HAR's ssl and the Resource Timing's secureConnectionStart
                # likewise —, so the time until its ClientHello reached the wire is the
                # client making it, not a queue: tls, not blocked (the amazon load's slow
                # client host: ACK 68.3 ms, ClientHello 84.0, TLS done 111.9 — NetLog
                # SSL_CONNECT 43 ms, WebPageTest's ssl 43).  Not when something else was sent
                # first (a request in the clear before the ClientHello keeps its gap).
                ts = c.connect_end
            if te > ts:
                raw.append(("tls", ts, te))
    # a pushed response has no request on the wire: its "request" is the promise, so
    # it waits from the promise to the first response byte and sends nothing
    if e.request_start is not None and e.request_end is not None and not e.pushed:
        raw.append(("send", e.request_start, e.request_end))
    wait_from = e.request_end if e.request_end is not None and not e.pushed else e.request_start
    if wait_from is not None and e.response_start is not None and e.response_start >= wait_from:
        raw.append(("wait", wait_from, e.response_start))
    if e.response_start is not None and e.response_end is not None:
        raw.append(("receive", e.response_start, e.response_end))
    start, end = _exchange_start(e), _exchange_end(e)
    if c is not None and c.first_packet == 0 and isinstance(e.browser, dict):
        # a browser log opened alone (a connection of no packet; a log's exchange has a browser
        # record, a capture's connection a first packet): the request's start, before
        # the connection's set-up, begins the row — a HAR's blocked, before dns and connect
        # (HAR 1.2: the timings add up to the entry's time), a NetLog's queueing from its
        # URL_REQUEST's start (before 2026-12-04 a NetLog's row began at the connect: the amazon
        # load's first request 41 ms late, its HAR entry 93 ms long for the log's 134)
        hs = (e.browser.get("times") or {}).get("start")
        if isinstance(hs, float) and start is not None and hs < start:
            start = hs
    if not raw:
        if start is None or end is None or end <= start:
            return []
        return [("wait" if e.response_start is None else "receive", start, end)]
    out: list[tuple[str, float, float]] = []
    for n, a, b in raw:
        if out:
            pn, pa, pb = out[-1]
            a = max(a, pa)  # never before the previous phase began
            if a < pb:  # overlap: the earlier phase ends where this one begins
                if a > pa:
                    out[-1] = (pn, pa, a)
                else:
                    out.pop()  # (cut to nothing)
            elif a > pb:
                # after the connection's set-up, before the request's first byte: the
                # connection was ready and idle (made ahead, a preconnect, or the request
                # came later) — not a request queued; between set-up steps: stalled
                out.append(("idle" if pn in _SETUP and n not in _SETUP else "blocked", pb, a))
        out.append((n, a, max(a, b)))
    if start is not None and start < out[0][1]:
        out.insert(0, ("blocked", start, out[0][1]))
    if end is not None and end > out[-1][2]:  # e.g. a response that ended without a first byte seen
        out.append(("wait" if e.response_start is None else "receive", out[-1][2], end))
    return out


_SETUP = frozenset(("dns", "connect", "tls"))

# the browser log's times (BrowserRecord.times, docs/JSON.md) that begin each phase, in order;
# TLS ends at ssl_end where the log gives it: a NetLog's connect_end is its TCP_CONNECT's end, the
# TLS start (amazon's document: TCP 17 ms, SSL_CONNECT 43 ms, drawn as 43 ms "blocked" before)
_BROWSER_POINTS = (("blocked", "start"), ("dns", "dns_start"), ("blocked", "dns_end"), ("connect", "connect_start"),
                   ("tls", "ssl_start"), ("blocked", "ssl_end"), ("blocked", "connect_end"), ("send", "send_start"),
                   ("wait", "send_end"), ("receive", "response_start"))


def browser_phases(rec: dict | None, clock_offset: float | None = None) -> list[tuple[str, float, float]]:
    """The browser's view of a request from its log's record (``Exchange.browser``): the
    phases (``PHASES`` names) between the times the log gives — blocked from its start to
    the first of dns/connect/send, dns, connect (to the TLS start or the connection's end),
    tls, send, wait (request sent → response headers), receive (→ response end) — on the
    browser's clock, or with ``clock_offset`` (browser minus capture, seconds:
    ``browser_clock_offsets``) on the capture's, sequential (a time before the previous one
    counts as the previous).  Empty without a record or its response end."""
    times = (rec or {}).get("times") or {}
    end = times.get("response_end")
    if not isinstance(end, (int, float)):
        return []
    points: list[tuple[str, float]] = []
    for name, key in _BROWSER_POINTS:
        t = times.get(key)
        if isinstance(t, (int, float)) and t <= end:
            t = max(float(t), points[-1][1]) if points else float(t)
            if points and points[-1][1] == t:
                points[-1] = (name, t)  # (a phase of no length: the later one begins here)
            else:
                points.append((name, t))
    out = [(name, a, b) for (name, a), (_n, b) in zip(points, points[1:] + [("end", float(end))]) if b > a]
    if clock_offset:
        out = [(name, a - clock_offset, b - clock_offset) for name, a, b in out]
    return out


def browser_clock_offsets(an: Analysis) -> dict[tuple[str, str | None], float]:
    """The clock offset (browser minus capture, seconds) by which each laid-over log's page
    events are placed on the capture's clock (``browser_milestones``: its pages'
    ``clock_offset``, ``browserlog.matching.placed_pages``), keyed by (log kind, file) — file
    None: every log of that kind.  ``build`` draws the log's bars (``Row.browser_phases``)
    moved by the same offset, so that a HAR's requests and its load event are on one clock
    (WebPageTest's HAR of the amazon load is 130–164 ms behind the capture: its bars were drawn
    that far left of the wire's while its load event was moved onto the capture's clock).  Only
    logs with page events have one (a HAR; a NetLog or qlog is drawn on its own clock)."""
    b = an.browser if isinstance(an.browser, dict) else {}
    by_kind: dict[str, set[float]] = {}
    for p in b.get("pages") or ():
        off = p.get("clock_offset") if isinstance(p, dict) else None
        if isinstance(off, (int, float)) and not isinstance(off, bool):
            by_kind.setdefault(str(p.get("source")), set()).add(float(off))
    out: dict[tuple[str, str | None], float] = {}
    for kind, offs in by_kind.items():
        if len(offs) == 1:
            out[(kind, None)] = next(iter(offs))
            continue
        # (several logs of one kind, each with its own offset: the one of each file, by the
        # rule its pages were placed by)
        from .browserlog.matching import PLACE_BY

        for lg in b.get("logs") or ():
            if not isinstance(lg, dict) or lg.get("kind") != kind:
                continue
            o = lg.get("offsets") or {}
            by = next((k for k in PLACE_BY if (o.get(k) or {}).get("count")), None)
            if by is not None and isinstance(o[by].get("median"), (int, float)):
                out[(kind, lg.get("file"))] = float(o[by]["median"])
    return out


def _clock_offset_of(rec: dict | None, offsets: dict[tuple[str, str | None], float]) -> float | None:
    if not rec or not offsets:
        return None
    src = str(rec.get("source"))
    off = offsets.get((src, rec.get("file")))
    return off if off is not None else offsets.get((src, None))


def phase_totals(row) -> dict[str, Any]:
    """Each phase's total in whole microseconds (``PHASES`` names; None where the row has no
    such phase), ``start``/``end`` (epoch seconds) and ``total`` (µs) of a ``Row`` or of a
    list of phases.  Every phase boundary is rounded to the microsecond once, so the phases
    add up to the total exactly."""
    from .waterfall_model import Row

    phases = row.phases if isinstance(row, Row) else row
    us = lambda t: round(t * 1e6)
    tot: dict[str, Any] = {n: None for n in PHASES}
    for n, a, b in phases:
        tot[n] = (tot[n] or 0) + us(b) - us(a)
    if isinstance(row, Row):
        tot["start"], tot["end"] = row.start, row.end
    else:
        tot["start"], tot["end"] = (phases[0][1], phases[-1][2]) if phases else (None, None)
    tot["total"] = us(tot["end"]) - us(tot["start"]) if phases else 0
    return tot


# A first request sent this long after its connection was ready did not wait for the
# connection (the browser made it ahead: a preconnect, or a connection raced for another
# request): its HAR entry starts at the request and has no dns/connect/ssl, as DevTools and
# Chrome's own HAR give a request on a ready socket (analyzer/export.py), and the views label
# its row with the request's own time first (``preconnected``).
PRECONNECT_IDLE = 0.050


def preconnected(phases) -> int | None:
    """Where a row's own request begins in its ``phases`` when its connection was set up at
    least ``PRECONNECT_IDLE`` before it (an ``idle`` phase that long: the phases after the
    last idle one), else None."""
    idle, last = 0, -1
    for i, (n, a, b) in enumerate(phases):
        if n == "idle":
            idle += round(b * 1e6) - round(a * 1e6)
            last = i
    return last + 1 if last >= 0 and idle >= PRECONNECT_IDLE * 1e6 and last + 1 < len(phases) else None


def _plan(an: Analysis, conns: dict, dns: bool = True, ordered: list[Exchange] | None = None):
    """Exchanges with a time, in start order; per connection its exchanges; the first
    exchange of each connection; the DNS lookup charged to each connection; all lookups.
    ``ordered``: every exchange of ``an`` already sorted by (request_start, id) (``requests``'
    own order): taken as it is when each has a request start, which is then its start (no
    second sort: 20 ms of 60 k requests, serial in ``-j 2``)."""
    if ordered is not None and len(ordered) == len(an.exchanges) and all(e.request_start for e in ordered):
        exs = list(ordered)
    else:
        exs = [e for e in an.exchanges if _exchange_start(e) is not None]
        exs.sort(key=lambda e: (_exchange_start(e), e.id))
    by_conn: dict[int, list[Exchange]] = {}
    for e in exs:
        by_conn.setdefault(e.connection, []).append(e)
    first_of_conn = {lst[0].id for lst in by_conn.values()}
    lookups = dns_lookups(an) if dns else []
    dns_for: dict[int, DnsLookup] = {}
    if lookups:
        used: set = set()
        # per host name, the (start, connection) of every request to it: an answer a request
        # on another connection (one already open, one the capture joined mid-way, one
        # coalesced) used before this connection began was not looked up for this connection
        asked: dict[str, list[tuple[float, int]]] = {}
        for e in exs:  # (in start order: each list is sorted)
            h = _host_name(e.authority or _ex_host(e, conns.get(e.connection)))
            if h is not None:
                asked.setdefault(h, []).append((_exchange_start(e) or 0.0, e.connection))
        for cid in sorted(by_conn, key=lambda c: (conns[c].start if c in conns else 0.0)):
            c = conns.get(cid)
            if c is None:
                continue
            d = match_dns(lookups, c, _host_of(c, by_conn[cid]))
            if d is not None and d.response_time is not None:
                cstart = c.connect_start if c.connect_start is not None else c.start
                reqs = asked.get(_host_name(d.name) or "", [])
                # (from the answer that gave the address)
                ans_t = max((p.response_time for p in d.parts if p.response_time is not None and c.server[0] in p.addresses),
                            default=d.response_time)
                i = bisect_left(reqs, (ans_t, -1))
                while i < len(reqs) and reqs[i][0] < cstart:
                    if reqs[i][1] != cid:
                        used.add((d.name, d.query_time))  # the answer served a request elsewhere first
                        d = None
                        break
                    i += 1
            # one lookup (A, AAAA, HTTPS queries sent together) is charged once, to the
            # first connection it served
            if d is not None and (d.name, d.query_time) not in used:
                used.add((d.name, d.query_time))
                dns_for[cid] = d
                for part in d.parts:  # (every query of the lookup: the name's and its CNAME chain's)
                    if part.used_by is None:
                        part.used_by = cid
    if dns and not lookups and not len(an.index) and an.browser:
        # a browser log opened alone (no packet, so no lookup on the wire): the lookup its own
        # record gives for the first request of each connection (a HAR's timings.dns)
        for cid, lst in by_conn.items():
            d = _browser_dns(lst[0], conns.get(cid))
            if d is not None:
                dns_for[cid] = d
    return exs, by_conn, first_of_conn, dns_for, lookups


def _browser_dns(e: Exchange, c: Connection | None) -> DnsLookup | None:
    """The DNS lookup a browser log's record (``Exchange.browser``) of ``e`` gives (its
    ``dns_start`` to ``dns_end``, on the log's clock), as a lookup of no packet; None without one."""
    times = (e.browser or {}).get("times") if isinstance(e.browser, dict) else None
    if not isinstance(times, dict):
        return None
    a, b = times.get("dns_start"), times.get("dns_end")
    if not isinstance(a, (int, float)) or not isinstance(b, (int, float)) or not b > a:
        return None
    addr = c.server[0] if c is not None and c.server and c.server[0] else None
    return DnsLookup(_ex_host(e, c) or "", float(a), 0, float(b), None, addresses=[addr] if addr else [],
                     used_by=c.id if c is not None else None)


def phases_by_exchange(an: Analysis, dns: bool = True) -> dict[int, list[tuple[str, float, float]]]:
    """Exchange id -> its row's phases (``exchange_phases``), without building the rows."""
    conns = {c.id: c for c in an.connections}
    exs, _, first_of_conn, dns_for, _ = _plan(an, conns, dns)
    out = {}
    for e in exs:
        c = conns.get(e.connection) if e.id in first_of_conn else None
        out[e.id] = exchange_phases(e, c, dns_for.get(c.id) if c is not None else None)
    return out


def build(an: Analysis, group_by: str | None = None, color_by: str = "content", dns: bool = True,
          sort: str | None = None) -> Waterfall:
    """Build the waterfall of ``an``.  ``sort`` (``SORTS``): rows by start (default), by
    duration or response size (largest first) or by host; ``group_by`` (``GROUPS``):
    ``"connection"`` or ``"host"`` orders rows by group (groups in order of first use), then by
    ``sort``; ``color_by="connection"`` colours the waiting and receiving bars by connection
    instead of by content class."""
    from .waterfall_model import HoverFacts, Milestone, Row, Waterfall

    if sort not in (None, *SORTS):
        raise ValueError(f"unknown sort {sort!r} (choose from {', '.join(SORTS)})")
    if group_by not in (None, *GROUPS):
        raise ValueError(f"unknown grouping {group_by!r} (choose from {', '.join(GROUPS)})")
    sort = sort or "start"
    conns = {c.id: c for c in an.connections}
    t0 = an.index.ts[0] if len(an.index) else 0.0
    t_end = an.index.ts[-1] if len(an.index) else 0.0
    if not len(an.index) and an.connections:  # a browser log (no packets): its first and last times
        t0, t_end = an.start_time, max((c.end for c in an.connections), default=0.0)

    exs, by_conn, first_of_conn, dns_for, lookups = _plan(an, conns, dns)
    by_start = list(exs)
    conn_color = {cid: CONNECTION_COLORS[i % len(CONNECTION_COLORS)] for i, cid in enumerate(by_conn)}

    # frames by (connection) for markers, only for connections with exchanges
    frames_by_conn: dict[int, list[Frame]] = {}
    markers_by_conn: dict[int, tuple[dict, dict]] = {}
    for f in an.frames:
        if f.connection in by_conn:
            frames_by_conn.setdefault(f.connection, []).append(f)
    stalls_by_conn: dict[int, _SpanEvents] = {}
    loss_by_conn: dict[int, _SpanEvents] = {}
    for cid, fl in frames_by_conn.items():
        proto = (conns[cid].protocol if cid in conns else None) or by_conn[cid][0].protocol
        kind = flow_control(proto)
        # (HTTP/2 and SPDY windows are counted from their start: on a connection the capture
        # joined mid-way (no SYN) the SETTINGS and WINDOW_UPDATEs before it are not known, and
        # counting from the default 65,535 made up stalls — the amazon load cut at packet 200:
        # challenge.js 'blocked by the stream window', none in the whole capture.  QUIC's
        # senders say so themselves, in BLOCKED frames.)
        if kind is not None and (kind == "blocked" or (cid in conns and conns[cid].connect_start is not None)):
            stalls_by_conn[cid] = _SpanEvents(flow_control_stalls(fl, proto), time_at=2, sid_at=0)
    ta = tcp_flags_for_loss(an) if any(conns[cid].transport == "tcp" for cid in by_conn if cid in conns) else None
    for cid in by_conn:
        if cid in conns:
            loss_by_conn[cid] = _SpanEvents(connection_loss_events(an, conns[cid], ta), time_at=1)

    rows: list[Row] = []
    row_of: dict[tuple[int, int | None], int] = {}
    clock_offsets = browser_clock_offsets(an) if an.browser else {}
    # what many rows hold alike, one object for all of them (review 29: a row took ~3 KB): the
    # colour dicts (one per colour), the connection labels (``Connection.label`` makes a new
    # string at each read), host names, the hover facts
    colors_of: dict[tuple[str, str], dict[str, str]] = {}
    labels: dict[int, str] = {}
    hosts: dict[str, str] = {}
    facts_of: dict[HoverFacts, HoverFacts] = {}
    for e in exs:
        c = conns.get(e.connection)
        start = _exchange_start(e)
        end = _exchange_end(e)
        # _plan keeps the exchanges with a known time: their first and last known times exist
        assert start is not None and end is not None
        first = e.id in first_of_conn
        phases = exchange_phases(e, c if first else None, dns_for.get(c.id) if first and c is not None else None)
        if phases:
            start, end = phases[0][1], phases[-1][2]
        ctype = e.content_type or e.header("content-type")
        cls = content_class(ctype, e.url or e.path)
        light, dark = conn_color.get(e.connection, CONNECTION_COLORS[0]) if color_by == "connection" else CONTENT_COLORS[cls]
        colors = colors_of.get((light, dark))
        if colors is None:  # (read-only: waterfall_layout.phase_colors copies it)
            colors = colors_of[(light, dark)] = dict(
                PHASE_COLORS, blocked=BLOCKED_COLOR, send=SEND_COLOR, wait=light if color_by == "connection" else WAIT_COLOR,
                receive=dark, light=light, idle=IDLE_COLOR)
        url = e.url or (e.path or "")
        label = labels.get(e.connection)
        if label is None:
            label = labels[e.connection] = c.label if c is not None else f"connection {e.connection}"
        facts = HoverFacts(e.reset, e.response_start is not None, e.content_encoding,
                           (e.sources or {}).get("response_body_bytes") == "lower_bound")  # (analyzer.completeness)
        facts = facts_of.setdefault(facts, facts)
        row = Row(
            index=len(rows), exchange=e.id, connection=e.connection, connection_label=label, protocol=e.protocol,
            badge=BADGES.get(e.protocol, e.protocol.upper()), method=e.method, url=url, status=e.status,
            content_class=cls, content_type=ctype, start=start, end=end, phases=phases, colors=colors,
            first_of_connection=first, pushed=e.pushed, stream_id=e.stream_id, browser=e.browser,
            # (waterfall_model.PACKET_KEYS' and SIZE_KEYS' order)
            packet_numbers=(e.request_start_packet, e.request_end_packet, e.response_start_packet, e.response_end_packet),
            size_values=(e.request_header_bytes_wire, e.request_header_bytes_decoded, e.response_header_bytes_wire,
                         e.response_header_bytes_decoded, e.request_body_bytes, e.response_body_bytes,
                         e.response_body_decoded_bytes),
            hover_facts=facts,
        )
        host = _ex_host(e, c) or ""
        row.host = hosts.setdefault(host, host)
        if e.browser:
            row.browser_clock_offset = _clock_offset_of(e.browser, clock_offsets)
            row.browser_phases = browser_phases(e.browser, row.browser_clock_offset)
        if not e.pushed:
            row_of.setdefault((e.connection, e.stream_id), row.index)
        mf = markers_by_conn.get(e.connection)
        if mf is None:
            mf = markers_by_conn[e.connection] = _marker_frames(frames_by_conn.get(e.connection, ()))
        _markers(row, e, mf, stalls_by_conn.get(e.connection, _NO_EVENTS), loss_by_conn.get(e.connection, _NO_EVENTS))
        rows.append(row)

    for r, e in zip(rows, exs):
        if e.pushed and e.push_parent is not None:
            r.push_parent_row = row_of.get((e.connection, e.push_parent))
    del colors_of, labels, hosts, facts_of

    # the page apart from background traffic: milestones count the page only
    page = page_of(an, by_start, {r.exchange: r.start for r in rows})
    for r in rows:
        why = page.background.get(r.exchange)
        if why is not None:
            r.background, r.background_reason = True, why
    milestones = []
    if len(an.index):
        milestones.append(Milestone("first_packet", "First packet", t0, 1))
        if page.start is not None and page.start > t0:
            milestones.append(Milestone("page_start", "Page start (first packet not background)", page.start, page.start_packet))
    doc = next((e for e in exs if e.id == page.document), None)
    html = None
    if doc is not None and doc.response_start is not None and _is_document(doc):
        html = doc
    else:
        html = next((e for r, e in sorted(zip(rows, exs), key=lambda x: x[0].start)
                     if r.content_class == "html" and e.response_start is not None and not r.background), None)
    if html is not None:
        milestones.append(Milestone("html_first_byte", "First byte of the HTML", html.response_start, html.response_start_packet))
    if page.end is not None:
        milestones.append(Milestone("page_load", "Last byte of the last response", page.end, page.end_packet))
    milestones += browser_milestones(an, t0, max([t_end, page.end or t_end] + [r.end for r in rows]))
    title = an.path.rsplit("/", 1)[-1]
    from .completeness import headline

    _chunks(an, rows, exs, frames_by_conn)
    rows_by_start = list(rows)
    rows = _order(rows, sort, group_by)
    conn_rows = _connection_rows(rows_by_start)
    return Waterfall(rows=rows, t0=t0, t_end=t_end, milestones=milestones, group_by=group_by, color_by=color_by,
                     connections={cid: (conns[cid].label if cid in conns else str(cid)) for cid in by_conn},
                     dns=lookups, title=title, page_info=page, completeness=headline(an), sort=sort,
                     connection_rows=conn_rows, throughput=throughput(an),
                     unused_connections=len(unused := [c for c in an.connections
                                                       if c.id not in by_conn and (c.transport == "tcp" or c.protocol in ("quic", "gquic"))]),
                     unused_undecrypted=sum(1 for c in unused if _not_decrypted(c)))


def _not_decrypted(c: Connection) -> bool:
    """Encrypted and not decrypted: what it carried (requests or none) is not known."""
    if c.tls is not None:
        return not c.tls.decrypted
    if c.quic is not None:
        return not c.quic.decrypted
    return c.protocol in ("quic", "gquic")


def _order(rows: list[Row], sort: str, group_by: str | None) -> list[Row]:
    """Rows (built in start order) in display order, re-indexed (push_parent_row follows)."""
    if sort == "start" and group_by is None:
        return rows
    keys = {
        "start": lambda r: (r.start, r.exchange),
        "duration": lambda r: (-(r.end - r.start), r.start, r.exchange),
        "size": lambda r: (-(r.sizes.get("response_body") or 0), r.start, r.exchange),
        "host": lambda r: (r.host, r.start, r.exchange),
    }
    key = keys[sort]
    if group_by is not None:
        gkey = (lambda r: r.connection) if group_by == "connection" else (lambda r: r.host)
        first: dict = {}
        for r in rows:  # start order: groups in order of first use
            first.setdefault(gkey(r), len(first))
        out = sorted(rows, key=lambda r: (first[gkey(r)], key(r)))
    else:
        out = sorted(rows, key=key)
    new_index = {r.index: i for i, r in enumerate(out)}
    for i, r in enumerate(out):
        r.index = i
        if r.push_parent_row is not None:
            r.push_parent_row = new_index.get(r.push_parent_row)
    return out


def _frame_header(protocol: str) -> int:
    """Bytes before a DATA frame's payload (the registry's ``frame_header``: HTTP/2 9, SPDY 8)."""
    d = find(protocol)
    return d.frame_header if d is not None and d.frame_header else 9


def _explicit_iv(tls) -> int:
    """Bytes between a TLS application-data record's header and its plaintext: TLS 1.2's
    explicit nonce of AES-GCM/CCM (8, RFC 5288 §3) and the IV of CBC suites from TLS 1.1 on
    (the block size, RFC 4346 §6.2.3.2); TLS 1.3, ChaCha20-Poly1305 and TLS 1.0 have none."""
    version = (tls.version or "") if tls is not None else ""
    suite = (tls.cipher_suite or "") if tls is not None else ""
    if not version or version == "TLS 1.3" or "CHACHA20" in suite:
        return 0
    if "GCM" in suite or "CCM" in suite:
        return 8
    if "CBC" in suite and version in ("TLS 1.1", "TLS 1.2"):
        return 8 if "3DES" in suite or "DES" in suite or "IDEA" in suite else 16
    return 0


class _Carriers:
    """The packets that carried bytes of one direction of a connection's application
    stream: the TCP carrier map (``analysis.maps[(conn, dir)]``: each stream byte's first
    copy), reached through the decrypted records (``analysis.tls_records``: where each
    record's plaintext sits in the TCP stream) when the stream is TLS."""

    def __init__(self, an: Analysis, maps: dict, conn: Connection | None, cid: int, d: int):
        self.tcp = maps.get((cid, d))
        recs = (an.tls_records if isinstance(getattr(an, "tls_records", None), dict) else {}).get((cid, d))
        self.tls = conn is not None and conn.tls is not None and recs is not None
        self.pt: list[int] = []  # per application-data record, in stream order: plaintext offset,
        self.n: list[int] = []  # plaintext length,
        self.at: list[int] = []  # TCP offset of its plaintext
        if self.tls and recs is not None:
            iv = _explicit_iv(conn.tls if conn is not None else None)
            k = len(recs)  # (the arrays are at least as long as .packet)
            for pt, n, off in zip(recs.pt_offset[:k], recs.pt_length[:k], recs.offset[:k]):
                if pt >= 0 and n and (not self.pt or pt >= self.pt[-1]):
                    self.pt.append(pt)
                    self.n.append(n)
                    self.at.append(off + 5 + iv)

    def packets(self, a: int, b: int) -> list[int]:
        """Packets that carried application bytes [a, b) (empty when the maps do not tell)."""
        if self.tcp is None or b <= a:
            return []
        if not self.tls:
            return self.tcp.packets_between(a, b)
        out: list[int] = []
        i = max(bisect_right(self.pt, a) - 1, 0)
        while i < len(self.pt) and self.pt[i] < b:
            lo, hi = max(a, self.pt[i]), min(b, self.pt[i] + self.n[i])
            if lo < hi:
                base = self.at[i] - self.pt[i]
                out += self.tcp.packets_between(base + lo, base + hi)
            i += 1
        return out


def _chunks(an: Analysis, rows: list[Row], exs: list[Exchange], frames_by_conn: dict) -> None:
    """``Row.chunks``: the bursts of packets that carried each response's body, from the
    per-byte packet maps.  HTTP/2 and SPDY DATA frames name their stream and their place in
    the (decrypted) stream: the packets that carried the bytes of each frame's payload — a
    DATA frame in a TLS record spread over several TCP segments counts each segment that
    holds some of its bytes, where the frame itself is shown at the packet that completed the
    record (``_Carriers``; without the maps, that packet).  HTTP/3: the packets of the
    stream's QUIC STREAM frames (one per QUIC packet).  HTTP/1 has one response at a time on
    the connection: its server-to-client TCP segments from the response's first to its last
    packet.  Linear in the frames and segments (one sort per connection)."""
    ts = an.index.ts
    n_pk = len(ts)
    conns = {c.id: c for c in an.connections}
    maps = maps_of(an)  # (once: while a live pass runs, they are gathered at each call)
    data: dict[tuple[int, int], list[int]] = {}
    for cid, fl in frames_by_conn.items():
        carriers: _Carriers | None = None
        for f in fl:
            if f.direction != 1 or f.stream_id is None or not 0 < f.packet <= n_pk:
                continue
            if f.type == "STREAM" and f.protocol == "quic":  # (an HTTP/3 DATA frame spans many)
                data.setdefault((cid, f.stream_id), []).append(f.packet)
            elif f.type == "DATA" and not f.protocol.startswith("h3"):  # (HTTP/3 of any draft: its STREAM frames, above)
                carried: list[int] = []
                if f.offset >= 0:
                    if carriers is None:
                        carriers = _Carriers(an, maps, conns.get(cid), cid, 1)
                    h = _frame_header(f.protocol)
                    # the payload's bytes; an empty frame (END_STREAM alone): its header's
                    a, b = (f.offset + h, f.offset + h + f.length) if f.length > 0 else (f.offset, f.offset + h)
                    carried = [p for p in carriers.packets(a, b) if 0 < p <= n_pk]
                data.setdefault((cid, f.stream_id), []).extend(carried or [f.packet])
    segs: dict[int, list[int]] = {}
    for r, e in zip(rows, exs):
        lo, hi = e.response_start_packet, e.response_end_packet
        pk: list[int] | None = None
        if e.stream_id is not None and (e.connection, e.stream_id) in data:
            pk = sorted(set(data[(e.connection, e.stream_id)]))
        elif e.stream_id is None and lo is not None and hi is not None:
            sl = segs.get(e.connection)
            if sl is None:
                m = maps.get((e.connection, 1))
                sl = segs[e.connection] = sorted(set(m.packets)) if m is not None else []
            pk = sl[bisect_left(sl, lo): bisect_right(sl, hi)]
        if not pk:
            continue
        if lo is not None:  # (no body byte comes before the response's first byte)
            pk = [p for p in pk if p >= lo] or pk
        out: list[tuple[float, float, int]] = []
        for p in pk:
            t = ts[p - 1]
            if out and t - out[-1][1] <= CHUNK_GAP:
                a, _b, k = out[-1]
                out[-1] = (a, max(t, _b), k + 1)
            else:
                out.append((t, t, 1))
        r.chunks = _fewest_gaps_merged(out) if len(out) > MAX_CHUNKS else out
        r.chunk_packets = pk


def _fewest_gaps_merged(bursts: list[tuple[float, float, int]]) -> list[tuple[float, float, int]]:
    """``MAX_CHUNKS`` bursts of ``bursts`` (start, end, packets), the smallest gaps between
    them closed: the idle a row shows is the longest.  (Before, every burst past the 64th was
    merged into the 64th: a steady download of one packet every 5 ms, amazon's challenge.js,
    read as striped for 0.3 s, then one solid 0.5 s burst of 102 packets.)"""
    order = sorted(range(1, len(bursts)), key=lambda i: (bursts[i][0] - bursts[i - 1][1], i))
    close = set(order[: len(bursts) - MAX_CHUNKS])  # burst i joins the one before it
    out: list[tuple[float, float, int]] = []
    for i, b in enumerate(bursts):
        if i in close:
            a, e, k = out[-1]
            out[-1] = (a, max(e, b[1]), k + b[2])
        else:
            out.append(b)
    return out


def _connection_rows(rows: list[Row]) -> list[ConnectionRow]:
    """The connection view: one row per connection with exchanges, in order of first use
    (``rows`` in start order; the segments name each request's display row)."""
    from .waterfall_model import ConnectionRow

    out: dict[int, ConnectionRow] = {}
    for r in rows:
        cr = out.get(r.connection)
        if cr is None:
            cr = out[r.connection] = ConnectionRow(r.connection, r.connection_label, r.badge, r.start, r.end, [], [],
                                                   background=True)
        if r.first_of_connection:
            cr.phases = [(n, a, b) for n, a, b in r.phases if n in ("dns", "connect", "tls")]
        seg = r.phase("send") or r.phase("wait") or r.phase("receive")
        a = seg[0] if seg else r.start
        cr.requests.append((r.index, a, r.end))
        cr.start, cr.end = min(cr.start, r.start), max(cr.end, r.end)
        cr.background = cr.background and r.background
    return list(out.values())


def maps_of(an: Analysis) -> dict:
    """``an.maps``; while a live pass reads the capture (its maps are set when it ends), the
    maps as they stand — the live web view's throughput strip stayed empty until Stop (review 24)."""
    m = an.maps if isinstance(an.maps, dict) else {}
    if not m:
        live = an.__dict__.get("live_maps")
        if live is not None:
            return live()
    return m


def throughput(an: Analysis, bin_s: float = THROUGHPUT_BIN) -> Throughput | None:
    """Wire bytes per ``bin_s`` each way (``Throughput``), the bin widened (×2, ×5, ×10…) so
    that a long capture has at most ``MAX_THROUGHPUT_BINS`` bins.  Direction comes from the
    TCP segment maps and the decrypted QUIC packets, and for the other TCP packets
    (retransmissions, ACKs) from tshark's TCP conversations; other packets are not counted."""
    from .waterfall_model import Throughput

    idx = an.index
    n = len(idx)
    if not n:
        return None
    way = bytearray(n)  # 0 unknown, 1 client→server, 2 server→client
    maps = maps_of(an)
    for key, m in maps.items():
        if len(key) == 2 and key[1] in (0, 1):
            d = key[1] + 1
            for p in m.packets:
                if 0 < p <= n:
                    way[p - 1] = d
    qp = an.quic_packets if isinstance(getattr(an, "quic_packets", None), dict) else {}
    for (_cid, d), q in qp.items():
        if d in (0, 1):
            for p in q.packet:
                if 0 < p <= n:
                    way[p - 1] = d + 1
    # a TCP segment the maps do not hold goes the way of its connection's others: a
    # retransmission (page-h2's 54 kB frame 66 at 125 ms was left out of its bin), a pure ACK.
    # tshark's conversations (``tcp_analysis``) say which side sent each packet, the analysis
    # the loss markers use (``tcp_flags_for_loss``: computed up to LOSS_ANALYSIS_MAX packets);
    # else the flow layer's lists of duplicates.  (It read only a finished one: the markers,
    # made after, computed it, so a capture's first waterfall lacked the handshakes' bytes its
    # second had — tls13_0rtt's first bin 140 bytes; review 29)
    ta = tcp_flags_for_loss(an)
    if ta is not None and len(ta.conv) >= n:
        conv, fwd = ta.conv, ta.fwd
        side: dict[int, int] = {}  # conversation -> the way of its "a" side (1 or 2), from its first mapped packet
        for i in range(n):
            w, c = way[i], conv[i]
            if w and c >= 0 and c not in side:
                side[c] = w if not fwd[i] else 3 - w
        for i in range(n):
            c = conv[i]
            if not way[i] and c in side:
                way[i] = side[c] if not fwd[i] else 3 - side[c]
    else:
        for c in an.connections:
            if c.transport == "tcp":
                for d in (0, 1):
                    for p in c.stats[d].retransmission_packets:
                        if 0 < p <= n and not way[p - 1]:
                            way[p - 1] = d + 1
    ts, orig = idx.ts, idx.origlen
    t0 = ts[0]
    span = max(max(ts) - t0, 0.0)
    b = bin_s
    for m in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 10000, 100000):
        b = bin_s * m
        if span / b < MAX_THROUGHPUT_BINS:
            break
    else:  # a span beyond them all (timestamps years apart): as wide as MAX_THROUGHPUT_BINS allows
        b = span / (MAX_THROUGHPUT_BINS - 1)
    nb = min(int(span / b) + 1, MAX_THROUGHPUT_BINS)
    down, up = [0] * nb, [0] * nb
    for i in range(n):
        w = way[i]
        if w:
            k = min(max(int((ts[i] - t0) / b), 0), nb - 1)
            if w == 2:
                down[k] += orig[i]
            else:
                up[k] += orig[i]
    return Throughput(t0, b, down, up)


MAX_SPAN_MARKERS = 64  # a connection's events (losses, connection-window stalls) drawn on one row, at most


class _SpanEvents:
    """A connection's events that mark every row whose span holds them (losses; flow-control
    stalls, of the connection's window or of a stream's), in time order, found by bisection:
    a loop over every event for every row, and a marker for each, made pipelined rows x losses
    markers (10,000 requests with one retransmission each: 50 M markers, an 8.5 GB JSON
    export, 15 GB of RSS from a 2.5 MB capture).  ``time_at``: the event's time in its tuple;
    ``sid_at``: its stream id (None: the connection's) where events can be a stream's."""

    __slots__ = ("conn", "times", "by_sid", "marks")

    def __init__(self, events, time_at: int, sid_at: int | None = None) -> None:
        evs = sorted(((ev[time_at], i, ev) for i, ev in enumerate(events)), key=lambda x: (x[0], x[1]))
        conn = [x for x in evs if sid_at is None or x[2][sid_at] is None]
        self.conn = conn
        self.times = [x[0] for x in conn]
        self.by_sid: dict = {}
        self.marks: dict[int, Marker] = {}  # (marker: by the event's id; the events are held above)
        if sid_at is not None:
            for x in evs:
                if x[2][sid_at] is not None:
                    self.by_sid.setdefault(x[2][sid_at], []).append(x)

    def within(self, lo: float, hi: float, sid) -> tuple[list, int]:
        """The events in [lo, hi] (the connection's, and stream ``sid``'s), in time order (then
        their order of finding), at most ``MAX_SPAN_MARKERS``; and how many more there are."""
        if not self.times and not self.by_sid:  # (most connections: no loss, no stall)
            return [], 0
        i, j = bisect_left(self.times, lo), bisect_right(self.times, hi)
        got = self.conn[i:j]
        mine = [x for x in self.by_sid.get(sid, ()) if lo <= x[0] <= hi] if sid is not None and self.by_sid else ()
        if mine:
            got = sorted([*got, *mine], key=lambda x: (x[0], x[1]))
        return [x[2] for x in got[:MAX_SPAN_MARKERS]], max(0, len(got) - MAX_SPAN_MARKERS)

    def marker(self, ev, make: Callable[[Any], Marker]) -> Marker:
        """The marker of event ``ev`` (one ``within`` returned), ``make(ev)`` made once and the
        same object in every row whose span holds the event: a QUIC connection's BLOCKED
        frames marked each of 126 rows of aioquic-h3-cut 64 times, each with its own marker
        and label (11 KB a row of 16).  Markers are not changed once made."""
        m = self.marks.get(id(ev))
        if m is None:
            m = self.marks[id(ev)] = make(ev)
        return m


_NO_EVENTS = _SpanEvents((), time_at=0)


def _marker_frames(frames) -> tuple[dict, dict]:
    """A connection's marker frames by stream id, and its PUSH_PROMISEs by the stream (or push
    id) they promise (the first in file order), made once per connection: scanning every frame,
    or every push, for every exchange was quadratic (10,000 pushes: 8.7 s)."""
    by_sid: dict = {}
    pushes: dict = {}
    push_types, marked = kind_types("push"), kind_types("priority") | kind_types("reset")
    for f in frames:
        if f.type in push_types:
            pushes.setdefault(_field(f, "promised_stream_id", "promised_stream", "push_id"), f)
        if f.type in marked:
            by_sid.setdefault(f.stream_id, []).append(f)
    return by_sid, pushes


def _markers(row: Row, e: Exchange, marker_frames: tuple[dict, dict], stalls: _SpanEvents, losses: _SpanEvents) -> None:
    from .waterfall_model import Marker

    by_sid, pushes = marker_frames
    priority_types, reset_types = kind_types("priority"), kind_types("reset")
    lo, hi = row.start, row.end
    sid = e.stream_id
    if e.pushed:
        t = e.response_start if e.response_start is not None else row.start
        pkt = e.response_start_packet
        f = pushes.get(sid)
        if f is not None:
            t, pkt = f.time, f.packet
        row.markers.append(Marker("push", t, f"pushed by stream {e.push_parent}" if e.push_parent is not None else "pushed", pkt))
    if e.priority:
        txt = priority_text(e.priority)
        send = row.phase("send")
        row.markers.append(Marker("priority", send[0] if send else row.start, f"priority {txt}",
                                  e.request_start_packet))
    if sid is not None:
        for f in by_sid.get(sid, ()):
            if f.stream_id != sid:
                continue
            if f.type in priority_types and lo <= f.time <= hi:
                row.markers.append(Marker("priority", f.time, f"{f.type} " + priority_text(f.fields or {}), f.packet))
            elif f.type in reset_types:
                code = _field(f, "error_code", "status", "code", default=e.reset)
                row.markers.append(Marker("reset", f.time, f"{f.type} {code or ''}".strip(), f.packet))
    if e.reset and not any(m.kind == "reset" for m in row.markers):
        row.markers.append(Marker("reset", row.end, f"reset {e.reset}", e.response_end_packet))
    evs, more = stalls.within(lo, hi, sid)
    for ev in evs:
        row.markers.append(stalls.marker(ev, _stall_marker))
    if more:
        row.markers.append(Marker("stall", evs[-1][2], f"{more} more flow-control stalls in this row's span, not drawn "
                                  f"(at most {MAX_SPAN_MARKERS} a row)"))
    evs, more = losses.within(lo, hi, None)
    for ev in evs:
        row.markers.append(losses.marker(ev, _loss_marker))
    if more:  # (said, with the last one drawn's kind and time: the row's span holds more of them)
        row.markers.append(Marker(evs[-1][0], evs[-1][1], f"{more} more TCP retransmissions, out-of-order segments or gaps "
                                  f"of the connection in this row's span, not drawn (at most {MAX_SPAN_MARKERS} a row)"))
    row.markers.sort(key=lambda m: m.time)


def _stall_marker(ev) -> Marker:
    """A flow-control stall's marker (``flow_control_stalls``' event)."""
    from .waterfall_model import Marker

    s_sid, d, t0, t1, pkt = ev
    who = "server" if d == 1 else "client"
    what = "connection" if s_sid is None else "stream"
    dur = f", {(t1 - t0) * 1000:.1f} ms" if t1 is not None else ""
    return Marker("stall", t0, f"flow control: {who} blocked by the {what} window{dur}", pkt)


def _loss_marker(ev) -> Marker:
    """A loss's marker (``connection_loss_events``' event)."""
    from .waterfall_model import Marker

    kind, t, pkt, text = ev
    return Marker(kind, t, text, pkt)


def hover_lines(r: Row) -> list[str]:
    """``Row.hover``: the row's hover lines, from the row and its ``hover_facts`` (the
    exchange's reset, whether a response started, its content coding, whether its body's size
    is a lower bound), made when asked for and not held."""
    f = r.hover_facts
    lines = [f"{r.method or ('PUSH' if r.pushed else '')} {r.url}".strip()]
    lines.append(f"{r.badge} · connection {r.connection} ({r.connection_label})" + (f" · stream {r.stream_id}" if r.stream_id is not None else ""))
    st = (f"status {r.status}" if r.status is not None else "reset " + f.reset if f.reset else
          f"status {UNKNOWN_VALUE}" if f.responded else "no response")
    lines.append(f"{st} · {r.content_type or r.content_class}" + (f" · {f.content_encoding}" if f.content_encoding else ""))
    s = r.sizes
    low = "≥" if f.body_lower_bound else ""
    body = low + _fmt_bytes(s["response_body"]) + (f" ({_fmt_bytes(s['response_body_decoded'])} decoded)" if s.get("response_body_decoded") is not None else "")
    lines.append(f"body {body} · headers req {s['request_headers_wire']}/{s['request_headers_decoded']} B, "
                 f"resp {s['response_headers_wire']}/{s['response_headers_decoded']} B (wire/decoded)")
    for n, a, b in r.phases:
        lines.append(f"{PHASE_LABELS[n]}: {(b - a) * 1000:.1f} ms")
    if r.start is not None and r.end is not None:
        lines.append(f"total {(r.end - r.start) * 1000:.1f} ms")
    for m in r.markers[:8]:
        lines.append(f"⚑ {m.label}" + (f" (packet {m.packet})" if m.packet else ""))
    if len(r.markers) > 8:
        lines.append(f"⚑ … {len(r.markers) - 8} more")
    if r.background:
        lines.append(f"background, not the page's: {r.background_reason}")
    return lines


def priority_text(fields) -> str:
    """A priority signal's fields as a person reads them: ``request_detail.priority_label``
    ("weight 110, depends on stream 0, exclusive; urgency 4, incremental"), the one wording of
    the detail, the markers and the hover (before review 31 the markers had their own: "exclusive,
    depends on 0, weight 110, urgency 4, incremental")."""
    from .request_detail import priority_label

    return priority_label(fields)
