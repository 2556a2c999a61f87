"""HTTP/1.x session: ``dissectors.http1.H1Connection`` events -> model ``Frame``s and ``Exchange``s.

Frames (protocol ``http/1.1`` or ``http/1.0``, from the connection's first message):

- ``REQUEST``: a request head; ``length`` = head bytes on the wire (request line, fields,
  CRLFs); ``headers`` in wire order; fields ``method``, ``target``, ``version``, ``exchange``;
- ``RESPONSE``: a response head (1xx interim ones too); fields ``status``, ``reason``,
  ``version``, ``exchange``, ``interim`` (1xx);
- ``BODY``: a whole message body (only when it has bytes), from its first to its last
  packet; ``length`` = body bytes on the wire (chunk framing included); fields ``payload``
  (after chunked decoding), ``framing`` ("length" | "chunked" | "close"), ``chunks``,
  ``trailers``, ``incomplete``, ``exchange``.

A head frame sits at the packet of its blank line; Wireshark shows a message at the packet
of its last body byte, which is the BODY frame's (or the head's when there is no body).

Exchanges: request_start = first byte of the request line, request_end = last byte of the
request (body included), response_start = first byte of the first response head (1xx
included), response_end = last byte of the final response's body (or head).  Header bytes
``*_wire`` are the head sizes as sent (all heads of the exchange, 1xx included), ``*_decoded``
the sum of name + value lengths of the fields and of the start line counted as the
pseudo-header fields HTTP/2 would carry for it (``:method``, ``:path``…, ``:status``:
``dissectors.http1.start_line_fields``), comparable with HPACK/QPACK decoded sizes.
Body bytes are the payload after transfer decoding; ``response_body_decoded_bytes`` after
Content-Encoding.  ``Upgrade: h2c`` answered by 101 hands the connection to ``H2Session``
(the exchange becomes stream 1, protocol ``h2c``); other upgrades (websocket) and CONNECT
tunnels end HTTP/1 parsing (a tunnel's bytes are sniffed again).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from wirefall.dissectors.http1 import H1Body, H1Connection, H1End, H1Head

from ..model import Connection, Exchange, Frame, Note, NoteKind
from . import RawSession, lower_bound
from .tls import wire_packet

if TYPE_CHECKING:
    from ..content import BodyDecoder


class Http1Session:
    def __init__(self, ctx, conn: Connection, cleartext: bool | None = None, **kw):
        self.ctx = ctx
        self.conn = conn
        if cleartext is None:
            cleartext = conn.tls is None
        self.scheme = "http" if cleartext else "https"
        self.p = H1Connection(max_head=ctx.limits.get("http1_header_bytes", 1 << 20),
                              max_fields=ctx.limits.get("http1_header_count", 1000),
                              max_chunk_line=ctx.limits.get("http1_chunk_line", 4096))
        self.p.want_body = self._want_body
        self.cap = ctx.limits.get("body_decoded_bytes", 64 << 20)
        self.listing = ctx.listing  # (False, for `requests`: no Frame listed, see sessions.Context.listing)
        self.proto: str | None = None
        self.ex: dict[int, Exchange] = {}  # id(request head) -> exchange
        self.orphans: dict[int, Exchange] = {}  # id(response head) -> exchange without a request
        # id(response head) -> its decoder; None: no content coding (the decoded size is the
        # payload the capture held, H1End.seen: no decoder, no body bytes copied)
        self.bodies: dict[int, BodyDecoder | None] = {}
        self.next = None  # session after an upgrade / CONNECT
        self.notes_seen = 0
        self.all: list[Exchange] = []

    # -- session interface -------------------------------------------------------------
    def data(self, direction, data, offset, packet):
        if self.next is not None:
            return self.next.data(direction, data, offset, packet)
        self._events(self.p.receive(direction, data, packet, offset))

    def gap(self, direction, offset, length, packet):
        if self.next is not None:
            return self.next.gap(direction, offset, length, packet)
        self._events(self.p.gap(direction, length, packet))

    def close(self, direction, packet):
        """The direction's stream closed (``flows.AppSession``): a close-delimited body ends."""
        if self.next is not None:
            close = getattr(self.next, "close", None)
            return close(direction, packet) if close is not None else None
        self._events(self.p.close(direction, packet))

    def end(self):
        if self.next is not None:
            self._limits()
            self._notes()
            return self.next.end()
        self._events(self.p.end())
        self._limits()
        for ex in self.all:
            if ex.status is None and ex.error is None and ex.method is not None:
                ex.error = "no response in the capture"
        self._notes()

    # -- internals ---------------------------------------------------------------------
    def _limits(self):
        """Once, at the end: what the dissector could not decode, as typed facts for the
        completeness summary (limits in ``analysis.budgets_hit``, heads cut by the capture's end)."""
        for name, n in self.p.limits_hit.items():
            self.ctx.limit_hit(name, self.conn, n)
        for d, packet, n in self.p.cut_heads:
            self.conn.notes.append(Note(NoteKind.ENDS_IN_FRAME, packet, d, length=n,
                                        detail=f"HTTP/1: the capture ends inside a message head ({n} bytes seen); not decoded"))

    def _want_body(self, h: H1Head) -> bool:
        """The dissector's question as a body starts: are its bytes read (H1Body events)?  By a
        content decoder (a response with a content coding) or the objects export's sink."""
        return self.ctx.body_sink is not None or (h.direction == 1 and _coded(h.header("content-encoding")))

    def _notes(self):
        n = self.p.notes
        if len(n) > self.notes_seen:
            self.conn.notes.extend(n[self.notes_seen:])
            self.notes_seen = len(n)

    def _frame(self, packet, first_packet, direction, type_, length, offset, headers=None, fields=None, error=None):
        if not self.listing:  # (the packet is still HTTP's)
            self.ctx.set_proto(packet, "HTTP")
            return None
        # positional: packet, first_packet, time, connection, direction, protocol, stream_id, type,
        # flags, length, headers, fields, offset, error
        fr = Frame(packet, first_packet, self.ctx.time(packet), self.conn.id, direction, self.proto or "http/1.1", None,
                   type_, 0, length, headers, fields, offset, error)
        self.ctx.add_frame(fr, "HTTP")
        return fr

    def _events(self, events):
        for ev in events:
            if type(ev) is H1Head:
                if self.proto is None:
                    self.proto = "http/1.0" if ev.version == "HTTP/1.0" else "http/1.1"
                    self.conn.protocol = self.proto
                if ev.is_request:
                    self._request(ev)
                else:
                    self._response(ev)
            elif type(ev) is H1Body:
                if ev.direction == 1:
                    dec = self.bodies.get(id(ev.head))
                    if dec is not None:
                        dec.feed(ev.data)
                if self.ctx.body_sink is not None:  # (analyzer/objects.py)
                    h = ev.head
                    ex = self.ex.get(id(h)) if ev.direction == 0 else (
                        self.ex.get(id(h.request)) if h.request is not None else None) or self.orphans.get(id(h))
                    if ex is not None:
                        self.ctx.body_sink(self.conn, ex, ev.direction, ev.data)
            elif type(ev) is H1End:
                self._end(ev)
        self._notes()
        sw = self.p.switched
        if sw is not None and self.next is None:
            self._switch(sw)

    def _exchange_for_response(self, h: H1Head) -> Exchange:
        if h.request is not None and id(h.request) in self.ex:
            return self.ex[id(h.request)]
        ex = self.orphans.get(id(h))
        if ex is None:
            ex = self.ctx.new_exchange(self.conn, self.proto)
            ex.scheme = self.scheme
            why = self.p.dirs[0].why
            # a request the parser gave up on (a budget, a bad head) is in the capture: say why it was not read
            ex.error = f"request not read: {why}" if why else "response without a request in the capture"
            self.orphans[id(h)] = ex
            self.all.append(ex)
        return ex

    def _request(self, h: H1Head):
        ctx = self.ctx
        ex = ctx.new_exchange(self.conn, self.proto)
        self.ex[id(h)] = ex
        self.all.append(ex)
        ex.method = h.method
        ex.scheme = self.scheme
        ex.request_headers = h.headers
        ex.request_header_bytes_wire = h.wire
        ex.request_header_bytes_decoded = h.decoded
        p = wire_packet(ctx, self.conn, 0, h.offset, h.first_packet)
        ex.request_start, ex.request_start_packet = ctx.time(p), p
        ex.request_end = ctx.time(h.packet)
        ex.request_end_packet = h.packet
        host = h.header("host")
        t = h.target or ""
        if "://" in t[:12]:
            scheme, _, rest = t.partition("://")
            auth, slash, path = rest.partition("/")
            ex.scheme, ex.authority, ex.path, ex.url = scheme.lower(), auth, slash + path, t
        elif h.method == "CONNECT":
            ex.authority, ex.url = t, t
        else:
            ex.authority, ex.path = host, t
            ex.url = f"{self.scheme}://{host}{t}" if host is not None else t
        if h.error:
            ex.error = h.error
        ex.frames += 1
        self._frame(h.packet, h.first_packet, 0, "REQUEST", h.wire, h.offset, h.headers,
                    {"method": h.method, "target": h.target, "version": h.version, "exchange": ex.id}, h.error)

    def _response(self, h: H1Head):
        ctx = self.ctx
        ex = self._exchange_for_response(h)
        ex.frames += 1
        if ex.response_start is None:
            p = wire_packet(ctx, self.conn, 1, h.offset, h.first_packet)
            ex.response_start, ex.response_start_packet = ctx.time(p), p
        ex.response_header_bytes_wire += h.wire
        ex.response_header_bytes_decoded += h.decoded
        upgrade_h2c = h.status == 101 and (h.header("upgrade") or "").strip().lower() == "h2c"
        # 1xx are interim, except a 101 that ends HTTP (websocket...); an h2c 101 is interim:
        # the final response comes on HTTP/2 stream 1
        st = h.status
        assert st is not None  # the dissector sets the status of every response (once per message)
        interim = 100 <= st < 200 and (st != 101 or upgrade_h2c)
        fields = {"status": h.status, "reason": h.reason, "version": h.version, "exchange": ex.id}
        if interim:
            fields["interim"] = True
        self._frame(h.packet, h.first_packet, 1, "RESPONSE", h.wire, h.offset, h.headers, fields, h.error)
        if h.error and ex.error is None:
            ex.error = h.error
        if interim:
            return
        ex.status = h.status
        ex.response_headers = h.headers
        ex.response_headers_end, ex.response_headers_end_packet = ctx.time(h.packet), h.packet
        ex.content_type = h.header("content-type")
        ex.content_encoding = h.header("content-encoding")
        if h.body in ("none", "tunnel") or h.status == 101 or (h.body == "length" and h.content_length == 0):
            if h.body != "length":  # length 0 ends through H1End
                ex.response_end = ctx.time(h.packet)
                ex.response_end_packet = h.packet
                ex.response_body_decoded_bytes = 0
        elif _coded(ex.content_encoding):
            from ..content import BodyDecoder  # (imported by the first coded body, not by every HTTP/1 capture)

            self.bodies[id(h)] = BodyDecoder(ex.content_encoding, self.cap, ctx=ctx, conn=self.conn)
        else:
            self.bodies[id(h)] = None

    def _end(self, e: H1End):
        ctx = self.ctx
        h = e.head
        if e.direction == 0:
            ex = self.ex.get(id(h))
            if ex is None:
                return
            ex.request_body_bytes = e.payload
        else:
            ex = self._exchange_for_response(h)
            ex.response_body_bytes = e.payload
            key = id(h)
            if key not in self.bodies:  # (a body _response did not set up)
                ex.response_body_decoded_bytes = e.payload
            elif (dec := self.bodies.pop(key)) is None:  # no content coding: what a BodyDecoder would have counted
                ex.response_body_decoded_bytes = e.seen
            else:
                ex.response_body_decoded_bytes = dec.finish()
                if dec.budget or dec.capped:
                    lower_bound(ex, "response_body_decoded_bytes")
                if dec.budget:  # said once per connection by Context.report_budgets
                    ex.error = ex.error or dec.error
                elif dec.capped:
                    self.conn.notes.append(f"packet {e.packet}: decoded body reached the {dec.cap}-byte limit; size counted up to it")
                    ex.error = ex.error or "decoded body size capped"
                elif dec.error:
                    self.conn.notes.append(f"packet {e.packet}: body: {dec.error}")
                    if dec.unknown:  # not decoded (unsupported, too many codings): the exchange says so
                        ex.error = ex.error or dec.error
            self.orphans.pop(id(h), None)
        packet = e.packet
        if e.wire:
            ex.frames += 1
            fields = {"payload": e.payload, "framing": h.body, "exchange": ex.id}
            if h.body == "chunked":
                fields["chunks"] = e.chunks
                if e.trailers:
                    fields["trailers"] = e.trailers
            if not e.complete:
                fields["incomplete"] = True
            self._frame(packet, e.first_packet, e.direction, "BODY", e.wire, e.offset, None, fields, e.error)
        if not e.complete:  # cut (capture's end, a limit): the size counted is a lower bound
            lower_bound(ex, "request_body_bytes" if e.direction == 0 else "response_body_bytes")
        if e.direction == 0:
            ex.request_end = ctx.time(packet)
            ex.request_end_packet = packet
        else:
            ex.response_end = ctx.time(packet)
            ex.response_end_packet = packet
            if not e.complete:
                ex.error = ex.error or e.error
            if e.direction == 1:
                self.ex.pop(id(h.request), None) if h.request is not None else None

    def _switch(self, sw):
        ctx = self.ctx
        ex = self.ex.get(id(sw.request))
        if sw.protocol == "h2c" and ex is not None:
            from .http2 import H2Session

            self.conn.notes.append(Note(NoteKind.PROTOCOL_SWITCH, sw.response.packet, detail="HTTP/1.1 upgraded to h2c"))
            nxt = H2Session(ctx, self.conn, cleartext=True, upgrade=ex, settings=sw.request.header("http2-settings"))
            ex.status = None  # the response comes on HTTP/2 stream 1
            ex.response_headers = []
            ex.content_type = ex.content_encoding = None
            ex.response_end = ex.response_end_packet = None
            ex.response_body_decoded_bytes = None
        elif sw.protocol == "tunnel":
            self.conn.notes.append(Note(NoteKind.PROTOCOL_SWITCH, sw.response.packet, detail="CONNECT tunnel established"))
            nxt = ctx.sniffer(self.conn)
        else:
            self.conn.notes.append(Note(NoteKind.PROTOCOL_SWITCH, sw.response.packet, detail=f"HTTP/1.1 switched to {sw.protocol}; its bytes are not decoded"))
            nxt = RawSession(ctx, self.conn)
        self.next = nxt
        for direction in (0, 1):
            for data, offset, packet in sw.pending[direction]:
                nxt.data(direction, data, offset, packet)


def _coded(content_encoding: str | None) -> bool:
    """Whether a body has a content coding to undo (``BodyDecoder``'s codings: any but
    "identity"); without one its decoded size is its payload."""
    if not content_encoding:
        return False
    for c in content_encoding.split(","):
        c = c.strip()
        if c and c.lower() != "identity":
            return True
    return False
