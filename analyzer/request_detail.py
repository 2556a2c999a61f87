"""One request's detail as typed values, made once for every frontend: the TUI's request
view (``ui.tui.app.request_text``), the web app's request detail
(``ui.web.views.request_detail``) and ``wirefall requests FILE --detail N`` format the same
``RequestDetail``; none of them derives a fact of its own.  Text is made only there.

**The frames of an exchange** (``exchange_frames``), one rule for every frontend: the frames
that the protocols themselves tie to the exchange —

- on a multiplexed connection (HTTP/2, SPDY, HTTP/3) every frame, of any protocol, whose
  stream id is the exchange's: the HTTP/2 / SPDY / HTTP/3 frames of stream N and, on QUIC,
  the transport frames of the same stream (STREAM, RESET_STREAM, STOP_SENDING,
  MAX_STREAM_DATA…).  This is what ``tshark -Y "http2.streamid == N"`` (``spdy.streamid``,
  ``quic.stream.stream_id``) shows, frame for frame;
- on HTTP/1 (no stream ids) the exchange's own messages: the request, the response (and its
  interim 1xx) and their bodies — the HTTP/1 frames whose ``fields["exchange"]`` is the
  exchange's id, so a pipelined neighbour on the same connection is never counted (the old
  web rule, "HTTP frames between the first request and last response packet", counted it;
  the old TUI rule added every TLS record in that window as well).  An h2c upgrade's stream 1
  has both: its HTTP/1 request and its HTTP/2 frames.

TLS records are not frames of an exchange: a record of an HTTP/2 or SPDY connection carries
frames of several streams and names none (tshark has no TLS field for the stream either).
The packets that carried the exchange (``RequestDetail.packets``, where its frames complete,
as tshark shows them) lead to the records in the packet detail.  A pushed response's
PUSH_PROMISE travels on the parent stream; it is the ``push`` marker, not one of the pushed
stream's frames (tshark: the promise matches ``http2.streamid == parent``).

Frames are listed in packet order; within a packet in the order they were decoded (a QUIC
STREAM frame before the HTTP/3 frames it completes).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .model import Analysis, Connection, Exchange, Frame, not_sent_of

UNKNOWN = "<unknown>"  # what the capture does not give (analyzer.completeness.UNKNOWN)

if TYPE_CHECKING:  # (imported lazily at run time: the body and waterfall modules cost start-up)
    from .body import BodyView
    from .browserlog.comparison import FieldRow, PhaseRow
    from .browserlog.records import NotSent
    from .waterfall import Marker, Row, Waterfall

PACKET_SEARCH = 65536  # packets of a connection searched for the one at a phase boundary


def _is_http1(f: Frame) -> bool:
    return f.stream_id is None and f.protocol.startswith("http/")


def exchange_frames(an: Analysis, e: Exchange) -> list[Frame]:
    """The frames of ``e`` (the rule in the module doc), in packet order."""
    cid, sid, xid = e.connection, e.stream_id, e.id
    out = []
    for f in an.frames:
        if f.connection != cid:
            continue
        if sid is not None and f.stream_id == sid:
            out.append(f)
        elif f.stream_id is None and f.fields is not None and _is_http1(f) and f.fields.get("exchange") == xid:
            out.append(f)
    out.sort(key=lambda f: f.packet)  # stable: decode order within a packet
    return out


# ----------------------------------------------------------------------- the record


@dataclass(frozen=True, slots=True)
class Moment:
    """One of the exchange's byte events on the wire."""
    name: str  # request_start | request_end | response_start | response_headers_end | response_end
    message: str  # "request" | "response"
    byte: str  # "first" | "last" | "headers" (the response headers' last byte)
    time: float | None  # epoch seconds (None: the capture does not show it)
    packet: int | None


@dataclass(frozen=True, slots=True)
class Phase:
    """One phase of the exchange's waterfall row (``analyzer.waterfall.exchange_phases``)."""
    name: str  # waterfall.PHASES: blocked | dns | connect | tls | send | wait | receive
    label: str  # waterfall.PHASE_LABELS
    start: float  # epoch seconds
    end: float
    start_packet: int | None  # the packet at the boundary (None: no packet of the connection is at that time)
    end_packet: int | None
    color: str | None = None  # the waterfall's colour of the phase

    @property
    def duration(self) -> float:
        """Seconds, from its ends rounded to the microsecond (as ``waterfall.phase_totals``): the
        phases shown to the µs add up to the total shown exactly."""
        return (round(self.end * 1e6) - round(self.start * 1e6)) / 1e6


@dataclass(frozen=True, slots=True)
class ConnectionFacts:
    id: int
    label: str  # "client → server"
    transport: str  # tcp | udp
    protocol: str | None
    tls_version: str | None = None  # TLS, or the QUIC version for QUIC
    cipher_suite: str | None = None
    sni: str | None = None
    alpn: str | None = None
    encrypted: bool = False
    decrypted: bool | None = None  # None: not encrypted
    not_decrypted_reason: str | None = None
    rtt: float | None = None  # seconds
    joined_midway: str | None = None  # why the capture did not see the connection open (None: it did)


@dataclass(frozen=True, slots=True)
class Sizes:
    request_headers_wire: int
    request_headers_decoded: int
    response_headers_wire: int
    response_headers_decoded: int
    request_body: int | None  # (None: a browser log's request body it gives no size of)
    response_body: int  # on the wire (after transfer framing, before content decoding)
    response_body_decoded: int | None
    content_type: str | None
    content_encoding: str | None
    # a body size that is only a lower bound (exchange.sources "lower_bound": the capture joined
    # the stream mid-stream): the views show it as "≥ N"
    request_body_lower_bound: bool = False
    response_body_lower_bound: bool = False


@dataclass(frozen=True, slots=True)
class Body:
    direction: int  # 0 request, 1 response
    view: BodyView | None  # analyzer.body's typed, escaped, bounded view (None: not read, see error)
    error: str | None = None  # why the bodies could not be read at all


@dataclass(frozen=True, slots=True)
class BrowserLog:
    """What a browser log laid over the capture (or opened alone) says of the exchange: the
    rows of ``analyzer.browserlog.comparison``."""
    label: str  # comparison.log_label
    alone: bool  # a log opened alone: no packets, every time is the log's
    source: str  # har | netlog | qlog
    phases: list[PhaseRow]
    fields: list[FieldRow]
    # the request never reached the network (``not_sent_record``): the log's side is all there
    # is, over a capture too — no wire times to lay it beside, whatever is opened
    not_sent: NotSent | None = None
    # browser minus capture (seconds) by which ``phases``' browser moments were put on the
    # capture's clock, as the waterfall moves the log's bars (``comparison.clock_note`` says
    # so); None: the log's own clock
    clock_offset: float | None = None


@dataclass(slots=True)
class RequestDetail:
    exchange: int  # Exchange.id
    connection: int
    protocol: str
    method: str | None
    url: str | None  # the URL, else the path
    status: int | None
    stream_id: int | None
    pushed: bool
    push_parent: int | None
    priority: dict | None
    reset: str | None
    error: str | None
    conn: ConnectionFacts | None
    t0: float  # the capture's first packet (for a browser log opened alone, its start)
    t0_is_first_packet: bool  # False: a browser log opened alone (t0 is the log's start)
    moments: list[Moment]
    phases: list[Phase]
    start: float | None  # the row's start and end (None: the exchange has no time)
    end: float | None
    request_headers: list[tuple[str, str]]
    response_headers: list[tuple[str, str]]
    sizes: Sizes
    markers: list[Marker]
    frames: list[Frame]  # exchange_frames
    packets: list[int]  # where the frames complete, ascending, once each
    bodies: list[Body] = field(default_factory=list)  # request (if it has one) then response; empty when not asked for
    browser: BrowserLog | None = None
    unknown: list[str] = field(default_factory=list)  # completeness.unknown_fields: url, method, status, headers
    responded: bool = False  # a response was seen (its status may still be unknown: a QPACK entry the capture lacks)
    not_sent: str | None = None  # a browser log's request that never reached the network: why ("disk cache", "failed", …)
    # the same request as its log says it (``not_sent_record``: why, which cache, the net error);
    # the views say it never reached the network — no packets because no network, not because of
    # the capture (a browser log laid over one: the capture is there)
    unsent: NotSent | None = None

    @property
    def status_text(self) -> str:
        """The status as the views print it (``status_cell``), "no response" where none came."""
        return status_cell(self.status, self.reset, self.responded, self.not_sent) or "no response"

    @property
    def unsent_text(self) -> str | None:
        """What the views say of a request that never reached the network (None: it did)."""
        return not_sent_text(self.unsent, self.sizes) if self.unsent is not None else None

    @property
    def priority_text(self) -> str:
        """The request's priority signal as DevTools and Wireshark say it (``priority_label``)."""
        return priority_label(self.priority)

    def marker_text(self, m: Marker) -> str:
        """A marker's text in the request view: the waterfall's own (``Marker.label``), which words a
        priority signal as the priority line does (``waterfall.priority_text`` is ``priority_label``;
        a PRIORITY frame's marker keeps its frame's type and fields, not the request's signal)."""
        return m.label

    @property
    def title_method(self) -> str:
        """The method, or PUSH for a pushed response."""
        return self.method or ("PUSH" if self.pushed else "")

    @property
    def duration(self) -> float | None:
        """The row's total (seconds, from its ends rounded to the microsecond, as each phase's)."""
        return None if self.start is None or self.end is None else (round(self.end * 1e6) - round(self.start * 1e6)) / 1e6


_H2_DEPENDENCY = ("weight", "depends_on", "exclusive")  # RFC 7540 §5.3: HEADERS' or a PRIORITY frame's fields
_RFC9218 = ("urgency", "incremental", "urgency_incremental")  # the ``priority`` header / PRIORITY_UPDATE, parsed and raw
_SPDY = ("priority", "lowest", "slot")


def priority_label(fields: dict | None) -> str:
    """A request's priority signal (``Exchange.priority``) as DevTools and Wireshark say it,
    not as Python writes a dict ("exclusive=True, depends_on=0, weight=256",
    "urgency_incremental=u=1, i, urgency=1, incremental=True" read before review 31):

    - HTTP/2's dependency (RFC 7540 §5.3; Wireshark's Weight real, Stream Dependency,
      Exclusive): "weight 256, depends on stream 0, exclusive";
    - Extensible Priorities (RFC 9218: the ``priority`` header — which stays as sent among the
      request's headers — or PRIORITY_UPDATE; HTTP/3, and HTTP/2 beside its dependency):
      "urgency 1, incremental", an urgency the signal leaves out "urgency 3 (default)";
    - SPDY: "priority 0 (0 highest, 7 lowest)";

    "; " between two schemes a request sent both of; any other field as "name value"."""
    if not fields:
        return ""
    f = dict(fields)
    parts: list[str] = []
    if any(k in f for k in _H2_DEPENDENCY):
        h2 = []
        if f.get("weight") is not None:
            h2.append(f"weight {f['weight']}")
        if f.get("depends_on") is not None:
            h2.append(f"depends on stream {f['depends_on']}")
        if f.get("exclusive") is True:
            h2.append("exclusive")
        parts.append(", ".join(h2))
    if any(k in f for k in _RFC9218):
        u = f.get("urgency")
        ext = f"urgency {u}" if isinstance(u, int) and not isinstance(u, bool) else "urgency 3 (default)"
        parts.append(ext + (", incremental" if f.get("incremental") is True else ""))
    if any(k in f for k in _SPDY):
        lowest = f.get("lowest")
        parts.append(f"priority {f.get('priority')}" + (f" (0 highest, {lowest} lowest)" if lowest is not None else "")
                     + (f", slot {f['slot']}" if f.get("slot") else ""))
    known = set(_H2_DEPENDENCY + _RFC9218 + _SPDY)
    rest = [str(k).replace("_", " ") if v is True else f"{str(k).replace('_', ' ')} {v}"
            for k, v in f.items() if k not in known and v is not False and v is not None]
    return "; ".join(p for p in [*parts, ", ".join(rest)] if p)


def _connection_facts(an: Analysis, c: Connection) -> ConnectionFacts:
    from .completeness import _joined_midway  # (the completeness summary's own rule)

    t, q = c.tls, c.quic
    sec = q if q is not None else t  # QUIC first: its TLS handshake has no decryption state of its own
    return ConnectionFacts(
        id=c.id, label=c.label, transport=c.transport, protocol=c.protocol,
        tls_version=(q.version if q is not None else None) or (t.version if t is not None else None),
        cipher_suite=t.cipher_suite if t is not None else None,
        sni=(t.sni if t is not None else None) or (q.sni if q is not None else None),
        alpn=(t.alpn if t is not None else None) or (q.alpn if q is not None else None),
        encrypted=sec is not None, decrypted=None if sec is None else bool(sec.decrypted),
        not_decrypted_reason=None if sec is None or sec.decrypted else sec.reason,
        rtt=c.rtt, joined_midway=_joined_midway(c) if an.source == "capture" else None)


def _packet_at(an: Analysis, cid: int, t: float, start: int) -> int | None:
    """The first packet of connection ``cid`` from packet ``start`` on whose time is ``t``
    (at most ``PACKET_SEARCH`` packets looked at; None if none)."""
    ts, conn = an.index.ts, an.index.conn
    n = len(ts)
    i = max(start - 1, 0)
    stop = min(n, i + PACKET_SEARCH)
    while i < stop:
        if conn[i] == cid and ts[i] == t:
            return i + 1
        i += 1
    return None


def _any_packet_at(an: Analysis, t: float) -> int | None:
    """The first packet of the capture whose time is ``t`` (by bisection: captures are in time
    order, mostly; a few packets either side are looked at), None if none."""
    from bisect import bisect_left

    ts = an.index.ts
    i = bisect_left(ts, t)
    for k in range(max(i - 8, 0), min(i + 8, len(ts))):
        if ts[k] == t:
            return k + 1
    return None


def _phases(an: Analysis, e: Exchange, c: Connection | None, row: Row, wf: Waterfall | None) -> list[Phase]:
    from .waterfall import PHASE_LABELS

    known: dict[float, int] = {}  # time -> packet of the events this exchange knows the packet of
    for tm, pk in ((e.request_start, e.request_start_packet), (e.request_end, e.request_end_packet),
                   (e.response_start, e.response_start_packet), (e.response_headers_end, e.response_headers_end_packet),
                   (e.response_end, e.response_end_packet)):
        if tm is not None and pk:
            known.setdefault(tm, pk)
    if wf is not None:
        for d in wf.dns:
            if d.used_by == e.connection:
                known.setdefault(d.query_time, d.query_packet)
                if d.response_time is not None and d.response_packet:
                    known.setdefault(d.response_time, d.response_packet)
    def at(t: float) -> int | None:
        p = known.get(t)
        if p is None and c is not None and an.packets:
            # from the latest packet known to be before t (captures are in time order, mostly)
            start = max((k for tk, k in known.items() if tk <= t), default=c.first_packet or 1)
            p = _packet_at(an, c.id, t, start)
            if p is None:  # (a phase edge on another flow's packet: the DNS lookup's query or answer)
                p = _any_packet_at(an, t)
            if p is not None:
                known[t] = p
        return p

    out = []
    for name, a, b in row.phases:
        out.append(Phase(name, PHASE_LABELS.get(name, name), a, b, at(a), at(b), row.colors.get(name)))
    return out


def _moments(e: Exchange) -> list[Moment]:
    return [Moment("request_start", "request", "first", e.request_start, e.request_start_packet),
            Moment("request_end", "request", "last", e.request_end, e.request_end_packet),
            Moment("response_start", "response", "first", e.response_start, e.response_start_packet),
            Moment("response_headers_end", "response", "headers", e.response_headers_end, e.response_headers_end_packet),
            Moment("response_end", "response", "last", e.response_end, e.response_end_packet)]


def bodies_of(an: Analysis, e: Exchange) -> list[Body]:
    """The request body (if it has one) and the response body of ``e``, read again."""
    try:
        from .body import body_views

        views = body_views(an, [(e, 0), (e, 1)])
    except Exception as err:  # noqa: BLE001 - the rest of the detail stays shown whatever the bodies do
        return [Body(1, None, f"{type(err).__name__}: {err}")]
    out = []
    for d in (0, 1):
        v = views[(e.id, d)]
        if d == 0 and v.kind == "empty":
            continue  # no request body: not a section of its own
        out.append(Body(d, v))
    return out


def browser_log(e: Exchange, c: Connection | None, unsent: NotSent | None = None,
                clock_offset: float | None = None, wire_phases=None) -> BrowserLog | None:
    """What a browser log says of ``e`` (``c``: its connection; ``unsent``: ``not_sent_record``
    of it; ``clock_offset``: the one its waterfall row's browser bars were moved by,
    ``Row.browser_clock_offset``; ``wire_phases``: its row's phases, whose blocked and dns the
    table sets beside the log's); None when no log speaks of it."""
    from .browserlog import comparison as cmp

    if not cmp.has_browser(e):
        return None
    b: dict[str, Any] = e.browser or {}
    phases = cmp.phase_comparison(e, c, clock_offset, wire_phases)
    moved = clock_offset if clock_offset and isinstance(b.get("offsets"), dict) else None  # (as phase_comparison moves them)
    return BrowserLog(cmp.log_label(e), cmp.from_log_alone(e), str(b.get("source") or "har"),
                      phases, cmp.field_sources(e), unsent, moved)


def not_sent_record(an: Analysis, e: Exchange) -> NotSent | None:
    """Why ``e``, a browser log's request, never reached the network, as its log says
    (``records.NotSent``: reason, which cache, the net error's code and name); None for a
    request that did (``model.not_sent_of``).  The log's own record of it — its summary's
    ``not_sent_requests`` entry whose ``row`` is ``e`` (alone or laid over a capture:
    ``build.not_sent_fields``) —, else (past the first ``build.MAX_NOT_SENT`` listed) the row's
    own label and error."""
    from .browserlog.records import NOT_SENT_REASONS, NotSent

    label = not_sent_of(e.browser)
    if label is None:
        return None
    b: dict[str, Any] = e.browser or {}
    logs = an.browser.get("logs") if isinstance(an.browser, dict) else None
    for s in logs or ():
        if not isinstance(s, dict) or s.get("file") != b.get("file"):
            continue
        for d in s.get("not_sent_requests") or ():
            if isinstance(d, dict) and d.get("row") == e.id and str(d.get("id")) == str(b.get("id")):
                ns = NotSent.from_json(d)
                if ns is not None:
                    return ns
    # (``NotSent.label``: "<which> cache" for a cache hit, else the reason itself)
    reason = "cache" if label.endswith("cache") else label if label in NOT_SENT_REASONS else "unfinished"
    cache = label[: -len("cache")].strip() or None if reason == "cache" else None
    return NotSent(str(b.get("id")), e.url, e.method, reason, cache, None, e.error if reason != "cache" else None)


def cache_bytes(sizes: Sizes) -> int | None:
    """The body bytes a browser log says a request served from a cache read (its content size,
    else its body size)."""
    return sizes.response_body_decoded if sizes.response_body_decoded is not None else sizes.response_body


def no_response_text(ns: NotSent) -> str:
    """The response of a request that never reached the network and was not served from a cache."""
    how = f", the request {ns.reason} before sending" if ns.reason in ("failed", "cancelled") else ""
    return f"none: no response{how}"


def _not_sent_why(ns: NotSent, sizes: Sizes | None = None) -> str:
    err = f" ({ns.net_error_name})" if ns.net_error_name else ""
    if ns.reason == "cache":
        n = cache_bytes(sizes) if sizes is not None else None
        return f"served from the browser's {ns.label}" + (f", {n} body bytes read (the log's count)" if n else "")
    if ns.reason in ("failed", "cancelled"):
        return f"{ns.reason} before sending{err}"
    if ns.reason == "redirected":
        return "redirected by the browser itself, no request sent"
    return "not sent yet when the log stopped"


def not_sent_text(ns: NotSent, sizes: Sizes | None = None) -> str:
    """How the views say that a request never reached the network, and why: served from a
    cache (with the body bytes the log says it read: ``sizes``), failed or cancelled before
    sending (the net error's name), … — no packets because there was no network, whatever
    capture is open."""
    return f"never reached the network: {_not_sent_why(ns, sizes)}; no packets, frames or bytes on the wire"


def not_sent_body(ns: NotSent, direction: int) -> str:
    """Why a body of a request that never reached the network is not shown (``direction`` 1:
    the response), for ``analyzer.body``: not the capture's doing."""
    if direction == 0:
        return "never sent: the request never reached the network"
    if ns.reason == "cache":
        # (a NetLog logged with its bytes holds them; wirefall reads no body from a browser log)
        return f"served from the browser's {ns.label}, never on the network: no capture holds it"
    return f"no response — the request never reached the network: {_not_sent_why(ns)}"


def body_lower_bound(e: Exchange, direction: int) -> bool:
    """The request (0) or response (1) body size of ``e`` is only a lower bound."""
    src = e.sources or {}
    return src.get("request_body_bytes" if direction == 0 else "response_body_bytes") == "lower_bound"


def ttfb_start(e: Exchange) -> float | None:
    """Where a request's TTFB starts: the request's last byte (DevTools' and WebPageTest's
    TTFB — a HAR's ``timings.wait``, the detail's "Waiting (TTFB)"), or its first where the
    response began before the request ended (a server answering an upload early); None — no
    ttfb — where the request's start is not in the capture (a stream seen mid-way: its client
    bytes after the response are retransmissions, not the request's end); a push's, its
    promise.  The one rule of `wirefall requests`' "ttfb ms" and `wirefall compare`'s ttfb; a
    browser log's exchange has its own send and response times (a HAR's send end and first
    byte), so the same rule gives its log's wait."""
    if e.request_start is None or e.response_start is None:
        return None
    if e.pushed:
        return e.request_start
    if e.request_end is not None and e.request_end <= e.response_start:
        return e.request_end
    return e.request_start if e.request_start <= e.response_start else None


def ttfb(e: Exchange) -> float | None:
    """A request's TTFB in seconds (``ttfb_start`` to the response's first byte), None where
    it has none."""
    s = ttfb_start(e)
    return None if s is None or e.response_start is None else e.response_start - s


def status_cell(status: int | None, reset: str | None, responded: bool, not_sent: str | None = None) -> str:
    """A response status as the tables print it: the code; "RST" for a stream reset before
    one; ``(disk cache)``, ``(failed)``… for a browser log's request that never reached the
    network (``browser.not_sent``, as DevTools writes it); ``<unknown>`` where a response came
    but its status is not in the capture (a QPACK or HPACK entry inserted before it: never a
    blank, which reads as "no response"); "" where no response came."""
    if status is not None:
        return str(status)
    if reset:
        return "RST"
    if not_sent:
        return f"({not_sent})"
    return UNKNOWN if responded else ""


def size_text(n: int | None, lower_bound: bool) -> str:
    """A body size as the views print it: "≥ N" when only a lower bound; "unknown" for None (a
    browser log's request body it gives no size of)."""
    if n is None:
        return "unknown"
    return f"≥{n}" if lower_bound else str(n)


def request_detail(an: Analysis, e: Exchange, row: Row | None = None, waterfall: Waterfall | None = None,
                   bodies: bool = True) -> RequestDetail:
    """Everything the request views show of exchange ``e``.  ``row``: ``e``'s waterfall row
    (phases, colours, markers) if the caller has it, else ``waterfall``'s, else a waterfall is
    built (``analyzer.waterfall.build``: pass one when asking for many).  ``bodies``: read
    the request and response bodies again from the capture (``analyzer.body``)."""
    from .completeness import unknown_fields

    if row is None:
        if waterfall is None:
            from .waterfall import build

            waterfall = build(an)
        row = next((r for r in waterfall.rows if r.exchange == e.id), None)
    c = an.connections[e.connection] if 0 <= e.connection < len(an.connections) else None
    if c is not None and c.id != e.connection:  # (ids are list positions; never trust it blindly)
        c = next((x for x in an.connections if x.id == e.connection), None)
    frames = exchange_frames(an, e)
    unsent = not_sent_record(an, e)
    return RequestDetail(
        exchange=e.id, connection=e.connection, protocol=e.protocol, method=e.method, url=e.url or e.path,
        status=e.status, stream_id=e.stream_id, pushed=e.pushed, push_parent=e.push_parent,
        # (a response lost to a record that did not decrypt says so in e.error: pipeline._undecrypted_errors)
        priority=dict(e.priority) if e.priority else None, reset=e.reset, error=e.error,
        conn=_connection_facts(an, c) if c is not None else None, t0=an.start_time, t0_is_first_packet=an.packets > 0,
        moments=_moments(e), phases=_phases(an, e, c, row, waterfall) if row is not None else [],
        start=row.start if row is not None else None, end=row.end if row is not None else None,
        request_headers=list(e.request_headers), response_headers=list(e.response_headers),
        sizes=Sizes(e.request_header_bytes_wire, e.request_header_bytes_decoded, e.response_header_bytes_wire,
                    e.response_header_bytes_decoded,
                    None if (e.sources or {}).get("request_body_bytes") == "unknown" else e.request_body_bytes, e.response_body_bytes,
                    e.response_body_decoded_bytes, e.content_type, e.content_encoding,
                    body_lower_bound(e, 0), body_lower_bound(e, 1)),
        markers=list(row.markers) if row is not None else [],
        frames=frames, packets=sorted({f.packet for f in frames}),
        bodies=bodies_of(an, e) if bodies else [],
        # (its times on the capture's clock where the waterfall moved the log's bars: Row.browser_clock_offset)
        browser=browser_log(e, c, unsent, row.browser_clock_offset if row is not None else None,
                            row.phases if row is not None else None), unknown=unknown_fields(e),
        responded=e.response_start is not None, not_sent=not_sent_of(e.browser), unsent=unsent)
