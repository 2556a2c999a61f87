"""The waterfall's view model — ``Waterfall``, its ``Row``s, ``Marker``s, ``Milestone``s,
``ConnectionRow``s and ``Throughput`` — which only ``analyzer.waterfall.build()`` makes.

They live apart from ``analyzer.waterfall`` so that the commands that only need the page and
the phases (``requests``, ``summary``, ``frames``: ``page_of``, ``phases_by_exchange``) do not
pay for generating these dataclasses' methods at every start (~15 M instructions); they stay
importable as ``wirefall.analyzer.waterfall.Row`` etc. (that module's ``__getattr__``).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from .waterfall import DnsLookup, Page


@dataclass(slots=True)
class Marker:
    kind: str  # one of MARKER_KINDS
    time: float
    label: str
    packet: int | None = None


@dataclass(slots=True)
class Milestone:
    name: str  # first_packet | page_start | html_first_byte | page_load | dom_content_loaded | load_event | start_render
    label: str
    time: float
    packet: int | None = None


# the keys of ``Row.packets`` and ``Row.sizes``, in the order their dicts list them (``to_dict``'s JSON)
PACKET_KEYS = ("request_start", "request_end", "response_start", "response_end")
SIZE_KEYS = ("request_headers_wire", "request_headers_decoded", "response_headers_wire", "response_headers_decoded",
             "request_body", "response_body", "response_body_decoded")
_NO_BROWSER_PHASES: tuple = ()  # (the default of a row without a browser log: one shared empty sequence, not a list a row)


class HoverFacts(NamedTuple):
    """What a row's hover says that the row's own fields do not (the exchange's, at build
    time); one tuple shared by the rows with the same facts (most rows: the same one)."""

    reset: str | None = None  # Exchange.reset
    responded: bool = True  # a response started (Exchange.response_start is not None)
    content_encoding: str | None = None
    body_lower_bound: bool = False  # the response body's size is a lower bound (Exchange.sources)


@dataclass(slots=True)
class Row:
    index: int
    exchange: int
    connection: int
    connection_label: str
    protocol: str
    badge: str
    method: str | None
    url: str
    status: int | None
    content_class: str
    content_type: str | None
    start: float
    end: float
    phases: list[tuple[str, float, float]]
    colors: dict[str, str]
    markers: list[Marker] = field(default_factory=list)
    first_of_connection: bool = False
    pushed: bool = False
    push_parent_row: int | None = None
    stream_id: int | None = None
    # ``packets`` and ``sizes`` (properties: dicts made when read) as tuples of values in
    # PACKET_KEYS' and SIZE_KEYS' order: two dicts a row were 456 bytes of its ~3 KB (review 29)
    packet_numbers: tuple[int | None, ...] = (None,) * len(PACKET_KEYS)
    size_values: tuple[int | None, ...] = (None,) * len(SIZE_KEYS)
    hover_facts: HoverFacts = HoverFacts()
    background: bool = False  # not the page's (page_of): drawn, but outside the page's milestones
    background_reason: str | None = None
    browser: dict | None = None  # the browser log's record of the request (Exchange.browser), for a browser bar
    # the browser's own view of the request (browser_phases: its log's times), drawn as a thin bar under the row;
    # on the capture's clock when its log's page events are (a HAR: moved by browser_clock_offset, the same
    # offset as its Load event milestone), else on the log's own clock (browser_clock_offset None)
    browser_phases: Sequence[tuple[str, float, float]] = _NO_BROWSER_PHASES
    browser_clock_offset: float | None = None  # browser minus capture, seconds, taken off browser_phases' times
    # bursts of the packets that carried the response's bytes: (first packet's time, last
    # packet's time, packets); from the stream's DATA frames (HTTP/2, SPDY, HTTP/3) or the
    # connection's server-to-client TCP segments between the response's first and last packet
    chunks: list[tuple[float, float, int]] = field(default_factory=list)
    chunk_packets: list[int] = field(default_factory=list)  # those packets' numbers, in order
    host: str = ""  # the request's host (grouping, sorting, the label)

    @property
    def duration(self) -> float:
        return self.end - self.start

    @property
    def packets(self) -> dict[str, int | None]:
        """The packets of the request's and the response's first and last bytes (PACKET_KEYS)."""
        return dict(zip(PACKET_KEYS, self.packet_numbers))

    @property
    def sizes(self) -> dict[str, int | None]:
        """Header (wire, decoded) and body bytes of the request and the response (SIZE_KEYS)."""
        return dict(zip(SIZE_KEYS, self.size_values))

    @property
    def hover(self) -> list[str]:
        """The row's hover lines, made when a figure asks for them (``analyzer.waterfall.hover_lines``):
        held by every row they were ~0.9 KB of its ~3 KB (63 k requests: 55 MB)."""
        from .waterfall import hover_lines

        return hover_lines(self)

    def phase(self, name: str) -> tuple[float, float] | None:
        for n, a, b in self.phases:
            if n == name:
                return a, b
        return None


@dataclass(slots=True)
class ConnectionRow:
    """One row of the connection view: the connection's handshake phases (dns, connect, tls)
    and its requests as segments (row index, start, end) coloured as their download."""

    connection: int
    label: str
    protocol: str
    start: float
    end: float
    phases: list[tuple[str, float, float]]
    requests: list[tuple[int, float, float]]
    background: bool = False


@dataclass(slots=True)
class Throughput:
    """Bytes on the wire per ``bin`` seconds from ``t0``, each way (``down``: server to
    client), from the packet index (frame lengths of the packets of TCP payload and
    decrypted QUIC packets whose direction the analysis knows)."""

    t0: float
    bin: float
    down: list[int]
    up: list[int]


@dataclass
class Waterfall:
    rows: list[Row]
    t0: float  # first packet of the capture
    t_end: float  # last packet of the capture
    milestones: list[Milestone]
    group_by: str | None = None
    color_by: str = "content"
    connections: dict[int, str] = field(default_factory=dict)  # id -> label
    dns: list[DnsLookup] = field(default_factory=list)
    title: str = ""
    page_info: Page | None = None  # the page apart from background traffic (page_of)
    completeness: str | None = None  # analyzer.completeness.headline: the images' subtitle
    sort: str = "start"
    connection_rows: list[ConnectionRow] = field(default_factory=list)
    throughput: Throughput | None = None
    # TCP and QUIC connections of the capture that carried no request (a browser's spare
    # socket, a connection the capture holds only the end of): not rows of the connection
    # view, which says how many there are
    unused_connections: int = 0
    unused_undecrypted: int = 0  # of those, the ones not decrypted: whether they carried a request is not known

    def milestone(self, name: str) -> Milestone | None:
        return next((m for m in self.milestones if m.name == name), None)

    @property
    def page_start(self) -> float:
        """Where the page's load starts: the first packet, or — when background traffic comes
        first — the first packet that is not background's (``Page.start``)."""
        p = self.page_info
        return p.start if p is not None and p.start is not None else self.t0

    @property
    def page_load_time(self) -> float | None:
        m = self.milestone("page_load")
        return None if m is None else m.time - self.page_start

    def page(self, start: int, count: int) -> list[Row]:
        """Rows ``start``..``start+count`` (for views that page through thousands of rows)."""
        return self.rows[max(start, 0) : max(start, 0) + max(count, 0)]

    def to_dict(self) -> dict[str, Any]:
        return {
            "t0": self.t0,
            "t_end": self.t_end,
            "group_by": self.group_by,
            "sort": self.sort,
            "color_by": self.color_by,
            "milestones": [{"name": m.name, "label": m.label, "time": m.time, "packet": m.packet} for m in self.milestones],
            "page": self.page_info.to_dict() if self.page_info is not None else None,
            "completeness": self.completeness,
            "dns": [{"name": d.name, "qtype": d.qtype, "query_time": d.query_time, "query_packet": d.query_packet, "response_time": d.response_time,
                     "response_packet": d.response_packet, "addresses": d.addresses, "names": d.names, "rcode": d.rcode,
                     "used_by": d.used_by} for d in self.dns],
            "rows": [
                {
                    "index": r.index, "exchange": r.exchange, "connection": r.connection, "protocol": r.protocol,
                    "badge": r.badge, "method": r.method, "url": r.url, "status": r.status,
                    "content_class": r.content_class, "content_type": r.content_type, "start": r.start, "end": r.end,
                    "phases": [{"name": n, "start": a, "end": b} for n, a, b in r.phases],
                    "markers": [{"kind": m.kind, "time": m.time, "label": m.label, "packet": m.packet} for m in r.markers],
                    "first_of_connection": r.first_of_connection, "pushed": r.pushed, "push_parent_row": r.push_parent_row,
                    "stream_id": r.stream_id, "packets": r.packets, "sizes": r.sizes,
                    "background": r.background, "background_reason": r.background_reason,
                    "chunks": [{"start": a, "end": b, "packets": k} for a, b, k in r.chunks], "host": r.host,
                }
                for r in self.rows
            ],
        }
