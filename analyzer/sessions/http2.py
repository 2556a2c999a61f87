"""HTTP/2 session: ``dissectors.http2.H2Connection`` output -> model ``Frame``s and ``Exchange``s.

One ``Frame`` per HTTP/2 frame (protocol ``h2`` over TLS, ``h2c`` in cleartext), at the
packet that carried its last byte.  A header block split over HEADERS + CONTINUATION has its
decoded headers on the frame that ends it (END_HEADERS), as Wireshark shows them.

Frame.fields by type: DATA ``pad_length``, ``window_connection``/``window_stream`` (the
sender's remaining flow-control windows after it), ``stalled`` ("connection" | "stream"
when the frame exhausted a window); HEADERS ``exclusive``/``depends_on``/``weight``
(weight 1..256), PUSH_PROMISE ``promised_stream_id``; frames that end a header block
``header_bytes_wire`` / ``header_bytes_decoded`` / ``header_bytes_hpack`` and
``hpack_state = "unknown"`` when the HPACK state was not seen from the start; RST_STREAM and
GOAWAY ``error_code``/``error`` (name), GOAWAY ``last_stream_id``/``debug_data`` (at most
1024 bytes; ``debug_data_length``, and ``debug_data_truncated`` / ``debug_data_escaped`` when
cut / when bytes not UTF-8 are written ``\\xNN``); SETTINGS ``settings`` {name: value} (the last
of a repeated identifier) and ``settings_list`` ([id, value] in wire order, repeats kept) or ``ack``; PING ``opaque``/``ack``; WINDOW_UPDATE ``increment``,
``window``; ALTSVC ``origin``/``alt_svc``; ORIGIN ``origins``; PRIORITY_UPDATE
``prioritized_stream_id``/``priority_field_value``.  A frame whose only fields are its header
bytes, or its windows, holds them in a ``model.HeaderBytes`` / ``model.Windows`` (a read-only
``FrameFields``: a third of a dict's memory), any other a dict.

Exchange per stream (client streams, and promised streams with ``pushed``):
- request_start / request_end: first byte of the request HEADERS, last byte of the frame
  with END_STREAM (client); for a pushed stream both are the PUSH_PROMISE frame's packets;
- response_start: first byte of the first server HEADERS on the stream (an 1xx counts);
  response_end: last byte of the server frame with END_STREAM, or of the last server frame
  of a stream that was reset (then ``reset`` holds the error name);
- header bytes: sum over all the stream's header blocks (1xx, trailers included) of the
  HPACK block bytes (``*_wire``) and of name + value lengths (``*_decoded``);
- response_headers: the final (non-1xx) response header block, in wire order;
- priority: ``{"exclusive", "depends_on", "weight"}`` from HEADERS / PRIORITY frames and
  ``{"urgency", "incremental"}`` from the RFC 9218 ``priority`` header or PRIORITY_UPDATE.
"""
from __future__ import annotations

from wirefall.dissectors.http2 import (
    CONTINUATION,
    DATA,
    GOAWAY,
    HEADERS,
    PRIORITY,
    PRIORITY_UPDATE,
    PUSH_PROMISE,
    RST_STREAM,
    FRAME_NAMES,
    H2Connection,
    H2Frame,
)

from ..content import BodyDecoder
from . import IdentityBody, bound_gapped, end_response, end_unfinished, finish_body, lower_bound, needs_decoder, note_gap
from .tls import wire_packet
from ..model import PROTO_CODE, Connection, Exchange, Frame, FrameFields, HeaderBytes, Note, NoteKind, Windows

P_HTTP2 = PROTO_CODE["HTTP2"]
_new = object.__new__
# the fields H2Session._frame sets on each Frame it makes (a field added to Frame must be set there)
_FRAME_SLOTS = ("packet", "first_packet", "time", "connection", "direction", "protocol", "stream_id", "type", "flags",
                "length", "headers", "fields", "offset", "error")
assert Frame.__slots__ == _FRAME_SLOTS


def parse_priority_header(value: str) -> dict:
    """RFC 9218 Priority field value (``u=3, i``) -> {"urgency", "incremental"}."""
    out: dict = {}
    for item in value.split(","):
        k, _, v = item.strip().partition("=")
        k = k.strip()
        if k == "u":
            try:
                u = int(v)
                if 0 <= u <= 7:
                    out["urgency"] = u
            except ValueError:
                pass
        elif k == "i":
            out["incremental"] = v.strip() in ("", "?1")
    return out


FACTS_MEMO_ENTRIES = 4096  # header lists whose facts an HTTP/2 session remembers (then forgets all)


class _Stream:
    __slots__ = ("ex", "body", "req_done", "resp_done", "last_s2c", "pending_end")

    def __init__(self, ex: Exchange):
        self.ex = ex
        self.body: BodyDecoder | IdentityBody | None = None
        self.req_done = False
        self.resp_done = False
        self.last_s2c: int | None = None  # packet of the last server frame
        self.pending_end = [False, False]  # END_STREAM on a HEADERS whose block is not finished


class H2Session:
    """Byte-stream session for HTTP/2 (see analyzer.sessions for the interface).

    ``cleartext``: h2c (True) or h2 inside TLS (False).  ``upgrade``: the HTTP/1.1 exchange
    that upgraded to h2c (it becomes stream 1) and ``settings`` the client's decoded
    HTTP2-Settings payload.  ``mid_stream``: the capture starts inside the connection.
    """

    def __init__(self, ctx, conn: Connection, cleartext: bool = True, upgrade: Exchange | None = None,
                 settings: bytes | str | None = None, mid_stream: bool = False, **kw):
        self.ctx = ctx
        self.conn = conn
        self.proto = "h2c" if cleartext else "h2"
        self.scheme = "http" if cleartext else "https"
        conn.protocol = self.proto
        self.h2 = H2Connection(mid_stream=mid_stream, max_header_list=ctx.limits.get("hpack_header_list", 1 << 20),
                               max_continuation=ctx.limits.get("continuation_frames", 1000),
                               header_budget=ctx.budget("header_decoded_bytes", conn))
        self.cap = ctx.limits.get("body_decoded_bytes", 64 << 20)
        self.frames_append = ctx.analysis.frames.append
        self.listing = ctx.listing
        self.conn_id = conn.id
        self.exchanges = ctx.analysis.exchanges
        self.pkt_proto = ctx.proto
        self.ts = ctx.ts
        # per kind (response, request): id(header list) -> (the list, _facts of it)
        self.facts_memo: tuple[dict[int, tuple], dict[int, tuple]] = ({}, {})
        self.wire_maps: list = [None, None]  # per direction, the OffsetMap ``wire_packet`` reads, once it exists
        self.streams: dict[int, _Stream] = {}
        self.gapped: dict = {}  # streams open across a hole of the capture (sessions.note_gap)
        self.priorities: dict[int, dict] = {}  # priority info seen before the stream's request
        self.notes_seen = 0
        self.goaway: int | None = None
        if upgrade is not None:
            upgrade.protocol = self.proto
            upgrade.stream_id = 1
            st = _Stream(upgrade)
            st.req_done = True
            self.streams[1] = st
            if settings:
                if isinstance(settings, str):
                    settings = settings.strip()
                    # (imported here: only an h2c upgrade's HTTP2-Settings needs base64 and
                    # binascii, ~0.4 ms of every HTTP/2 run's start)
                    import base64

                    try:
                        settings = base64.urlsafe_b64decode(settings + "=" * (-len(settings) % 4))
                    except ValueError:
                        settings = b""
                self.h2.apply_upgrade_settings(settings)

    # -- session interface ----------------------------------------------------------------
    def data(self, direction, data, offset, packet):
        for f in self.h2.receive(direction, data, packet, offset):
            self._frame(f)
            f.data = None  # consumed (a frame the dissector keeps, an overrun's, must not pin it)
            if f.block_parts is not None:  # a block's last frame lists itself: break the cycle so
                f.block_parts = f.block_start = None  # refcounting frees it (no cyclic GC work)
        self._notes()

    def gap(self, direction, offset, length, packet):
        self.h2.gap(direction, length, packet)
        if length:
            note_gap(self.gapped, self.streams, direction)
        self._notes()

    def end(self):
        for d, (size, held) in enumerate(self.h2.incomplete()):
            if size:
                self.conn.notes.append(Note(NoteKind.ENDS_IN_FRAME, direction=d, length=size,
                                            detail=f"HTTP/2: the capture ends inside a frame of {size} bytes in direction {d} ({held} of them seen)"))
        for f, msg in self.h2.take_overruns():
            if f.model is not None:
                f.model.error = f.model.error or msg
            self.conn.notes.append(Note(NoteKind.FLOW_CONTROL, f.packet, f.direction, detail=msg))
        for _sid, st in self.streams.items():
            ex = st.ex
            if st.body is not None:
                self._finish_body(st)
            end_unfinished(self.ctx, ex, st.resp_done, st.last_s2c)
        bound_gapped(self.gapped)
        self._notes()

    # -- internals ------------------------------------------------------------------------
    def _notes(self):
        notes = self.h2.notes
        if len(notes) > self.notes_seen:
            self.conn.notes.extend(notes[self.notes_seen:])
            self.notes_seen = len(notes)

    def _stream(self, sid: int) -> _Stream:
        """Stream ``sid``, made (with its exchange) on first sight."""
        st = self.streams.get(sid)
        if st is None:
            # self.ctx.new_exchange(self.conn, self.proto, sid), inlined (one per request)
            exs = self.exchanges
            ex = Exchange(len(exs) + 1, self.conn.id, self.proto, sid)
            exs.append(ex)
            ex.scheme = self.scheme
            st = self.streams[sid] = _Stream(ex)
            pr = self.priorities.pop(sid, None)
            if pr:
                ex.priority = pr
        return st

    def _set_priority(self, sid: int, info: dict):
        st = self.streams.get(sid)
        if st is not None:
            st.ex.priority = dict(st.ex.priority or {}, **info)
        else:
            self.priorities[sid] = dict(self.priorities.get(sid) or {}, **info)

    def _wire(self, direction: int, offset: int, packet: int) -> int:
        """``sessions.tls.wire_packet``, with the map it reads looked up once per direction."""
        m = self.wire_maps[direction]
        if m is None:
            sh = self.ctx.shared
            maps = sh.get("tls_wire_maps")
            m = maps.get((self.conn.id, direction)) if maps is not None else None
            if m is None:
                tcp = sh.get("tcp_maps", {}).get(self.conn.id)
                m = tcp[direction].map if tcp is not None else None
            if m is None:
                return wire_packet(self.ctx, self.conn, direction, offset, packet)
            self.wire_maps[direction] = m  # (the same object for the connection's life)
        if offset < 0 or not m.packets:
            return packet
        return m.packet_at(offset)

    def _frame(self, f: H2Frame):
        ctx = self.ctx
        # the dissector is done with f.fields (nothing else reads them): the model takes the dict,
        # or, for the two shapes most frames have, the values in a FrameFields (model.py: a
        # third of a dict's bytes; made here, its slots set, as Frame below)
        fields = f.fields
        pk = f.packet
        if pk == ctx._tp:  # ctx.time(pk), inlined: frames of one packet share one float
            now = ctx._tv
        else:
            now = ctx._tv = self.ts[pk - 1]
            ctx._tp = pk
        self.pkt_proto[pk - 1] = P_HTTP2
        if self.listing:  # (False, for `requests`: no Frame listed, see sessions.Context.listing)
            fl: dict | FrameFields | None
            if f.block_headers is not None or f.block_start is not None:
                if fields:
                    fields["header_bytes_wire"] = f.block_wire
                    fields["header_bytes_decoded"] = f.block_decoded
                    fields["header_bytes_hpack"] = f.block_hpack_size
                    fl = fields
                else:
                    fl = hb = _new(HeaderBytes)
                    hb.header_bytes_wire = f.block_wire
                    hb.header_bytes_decoded = f.block_decoded
                    hb.header_bytes_hpack = f.block_hpack_size
            elif len(fields) == 2 and "window_stream" in fields and "window_connection" in fields:  # (dissector._flow's order)
                fl = w = _new(Windows)
                w.window_connection = fields["window_connection"]
                w.window_stream = fields["window_stream"]
            else:
                fl = fields or None
            # Frame(packet, first_packet, time, connection, direction, protocol, stream_id, type,
            # flags, length, headers, fields, offset, error), its fields set here (all of them:
            # _FRAME_SLOTS): calling the class runs its __init__ in a nested run of the interpreter
            # (type.__call__), ~1.3 k instructions a frame
            fr = _new(Frame)
            fr.packet = pk
            fr.first_packet = f.first_packet
            fr.time = now
            fr.connection = self.conn_id
            fr.direction = f.direction
            fr.protocol = self.proto
            fr.stream_id = f.stream_id
            fr.type = FRAME_NAMES.get(f.type) or f.name
            fr.flags = f.flags
            fr.length = f.length
            fr.headers = f.headers
            fr.fields = fl
            fr.offset = f.offset
            fr.error = f.error
            self.frames_append(fr)  # ctx.add_frame(fr, "HTTP2"), inlined
            f.model = fr
            parts = f.block_parts
            if parts is not None and len(parts) > 1:  # (a block in one frame lists only itself)
                for part in parts:
                    if part is not f and part.model is not None:
                        part.model.headers = part.headers
                        part.model = None
        if f.unread:
            return  # a header of impossible length (FRAME_SIZE_ERROR): its type and stream may be damage too
        t = f.type
        sid = f.stream_id
        st: _Stream | None  # (an annotation only: no run-time cost)
        if t == DATA:
            st = self.streams.get(sid) or self._stream(sid)
            ex = st.ex
            ex.frames += 1
            if self.ctx.body_sink is not None and f.data:  # (analyzer/objects.py)
                self.ctx.body_sink(self.conn, ex, f.direction, f.data)
            if f.direction == 0:
                if ex.request_start is None and self.conn.connect_start is None:
                    lower_bound(ex, "request_body_bytes")
                ex.request_body_bytes += f.data_length
                if f.flags & 1:
                    self._request_end(st, f)
            else:
                if ex.response_start is None:
                    p = self._wire(1, f.offset, f.first_packet)
                    ex.response_start, ex.response_start_packet = ctx.time(p), p
                    if self.conn.connect_start is None:
                        lower_bound(ex, "response_body_bytes")
                ex.response_body_bytes += f.data_length
                st.last_s2c = pk
                data = f.data  # (set with data_length: non-empty iff data_length)
                if data:
                    body = st.body
                    if body is None:
                        ce = ex.content_encoding
                        body = st.body = BodyDecoder(ce, self.cap, ctx=self.ctx, conn=self.conn) if needs_decoder(ce) else IdentityBody()
                    body.feed(data)
                if f.flags & 1:
                    body = st.body
                    if type(body) is IdentityBody:
                        # end_response(self.conn, st, now, pk), inlined for a body without a
                        # content coding (most): finish_body has nothing to note for it
                        st.body = None
                        st.resp_done = True
                        ex.response_end = now
                        ex.response_end_packet = pk
                        ex.response_body_decoded_bytes = body.decoded
                    else:
                        end_response(self.conn, st, now, pk)  # self._response_end(st, f), inlined
        elif t in (HEADERS, PUSH_PROMISE, CONTINUATION):
            first = f.block_start or (f if t != CONTINUATION else None)
            if t == HEADERS:
                st = self.streams.get(sid) or self._stream(sid)
                ex = st.ex
                ex.frames += 1
                d = f.direction
                if ex.request_start is None if d == 0 else ex.response_start is None:
                    # self._wire(d, f.offset, f.first_packet) and ctx.time(p), inlined (twice a request)
                    m = self.wire_maps[d]
                    off = f.offset
                    p = m.packet_at(off) if m is not None and off >= 0 and m.packets else self._wire(d, off, f.first_packet)
                    if p == ctx._tp:
                        tp = ctx._tv
                    else:
                        tp = ctx._tv = self.ts[p - 1]
                        ctx._tp = p
                    if d == 0:
                        ex.request_start, ex.request_start_packet = tp, p
                    else:
                        ex.response_start, ex.response_start_packet = tp, p
                if d == 1:
                    st.last_s2c = pk
                if "weight" in f.fields:
                    self._set_priority(sid, {k: f.fields[k] for k in ("exclusive", "depends_on", "weight")})
                if f.flags & 1:
                    st.pending_end[f.direction] = True
            elif t == PUSH_PROMISE:
                st = self._stream(sid)
                st.ex.frames += 1
            else:
                st = self.streams.get(sid)
                if st is not None:
                    st.ex.frames += 1
                    if f.direction == 1:
                        st.last_s2c = f.packet
            if f.block_headers is not None and first is not None:
                self._block(first, f, st if t == HEADERS else None)
        elif t == RST_STREAM:
            st = self.streams.get(sid)  # (a reset opens no stream)
            if st is not None:
                ex = st.ex
                ex.frames += 1
                if ex.reset is None:
                    ex.reset = f.fields.get("error")
                    who = "client" if f.direction == 0 else "server"
                    ex.error = ex.error or f"stream reset by the {who}: {ex.reset}"
                if not st.resp_done:
                    if st.last_s2c is not None and ex.response_end is None:
                        ex.response_end_packet = st.last_s2c
                        ex.response_end = ctx.time(st.last_s2c)
                    st.resp_done = True
                    if st.body is not None:
                        self._finish_body(st)
        elif t == PRIORITY:
            self._set_priority(sid, {k: f.fields[k] for k in ("exclusive", "depends_on", "weight") if k in f.fields})
        elif t == PRIORITY_UPDATE:
            v = f.fields.get("priority_field_value")
            psid = f.fields.get("prioritized_stream_id")
            if v is not None and psid:
                self._set_priority(psid, dict(parse_priority_header(v), priority_update=v))
        elif t == GOAWAY:
            last = f.fields.get("last_stream_id")
            if last is not None and f.direction == 1:
                self.goaway = last
                for s, st in self.streams.items():
                    if s > last and s % 2 == 1 and not st.resp_done and st.ex.error is None:
                        st.ex.error = f"not processed: GOAWAY last stream {last} ({f.fields.get('error')})"

    def _block(self, first: H2Frame, f: H2Frame, st: _Stream | None = None):
        """A complete header block: ``first`` is its HEADERS / PUSH_PROMISE, ``f`` its last
        frame; ``st`` its stream when the caller has it (a HEADERS that ends its block)."""
        ctx = self.ctx
        hdrs = f.block_headers or []
        not_decoded = "not_decoded" in f.fields
        if first.type == PUSH_PROMISE:
            prom = first.fields.get("promised_stream_id")
            if not prom:
                return
            st = self._stream(prom)
            ex = st.ex
            ex.pushed = True
            ex.push_parent = first.stream_id
            p = self._wire(1, first.offset, first.first_packet)
            ex.request_start, ex.request_start_packet = ctx.time(p), p
            ex.request_end = ctx.time(f.packet)
            ex.request_end_packet = f.packet
            st.req_done = True
            self._request_headers(ex, hdrs, f)
            if not_decoded:
                ex.error = ex.error or f.error
            return
        if st is None:
            st = self._stream(first.stream_id)
        ex = st.ex
        if not_decoded:
            ex.error = ex.error or f.error
        if f.direction == 0:
            if ex.request_headers and not ex.pushed:
                # trailers
                ex.request_header_bytes_wire += f.block_wire
                ex.request_header_bytes_decoded += f.block_decoded
            else:
                self._request_headers(ex, hdrs, f)
        else:
            ex.response_header_bytes_wire += f.block_wire
            ex.response_header_bytes_decoded += f.block_decoded
            hit = self.facts_memo[False].get(id(hdrs))  # self._facts(hdrs, False), its memo read here
            status, ctype, cenc = hit[1] if hit is not None and hit[0] is hdrs else self._facts(hdrs, False)
            if status is not None and not (100 <= status < 200 and status != 101) and ex.status is None:
                ex.status = status
                ex.response_headers = hdrs if type(hdrs) is list else list(hdrs)  # shared, as above
                ex.response_headers_end, ex.response_headers_end_packet = ctx.time(f.packet), f.packet
                if ctype is not None and ex.content_type is None:
                    ex.content_type = ctype
                if cenc is not None and ex.content_encoding is None:
                    ex.content_encoding = cenc
            elif status is not None and 100 <= status < 200 and ex.status is None:
                pass  # informational
        if st.pending_end[f.direction]:
            st.pending_end[f.direction] = False
            if f.direction == 0:
                self._request_end(st, f)
            else:
                self._response_end(st, f)

    def _facts(self, hdrs, request: bool) -> tuple:
        """What ``_request_headers`` / ``_block`` read from a header list, found once per list:
        the dissector hands identical blocks one shared list (its HPACK cache), and a
        request-heavy capture repeats a few blocks tens of thousands of times."""
        memo = self.facts_memo[request]
        hit = memo.get(id(hdrs))
        if hit is not None and hit[0] is hdrs:  # (the list is held here: its id is not reused)
            return hit[1]
        if request:
            method = scheme = authority = path = host = None
            prio: dict = {}
            for k, v in hdrs:
                if k == ":method":
                    method = v
                elif k == ":scheme":
                    scheme = v
                elif k == ":authority":
                    authority = v
                elif k == ":path":
                    path = v
                elif k == "host":
                    host = v
                elif k == "priority":
                    prio.update(parse_priority_header(v))
            # the URL of a request whose exchange held nothing before (see _request_headers)
            auth = authority if authority is not None else host
            if method == "CONNECT" and path is None:
                url = auth
            elif auth is not None:
                url = f"{scheme or self.scheme}://{auth}{path or ''}"
            else:
                url = path
            out: tuple = (method, scheme, authority, path, host, prio, url)
        else:
            status = ctype = cenc = None
            for k, v in hdrs:
                if k == ":status":
                    try:
                        status = int(v)
                    except ValueError:
                        pass
                    break
            for k, v in hdrs:
                if k == "content-type" and ctype is None:
                    ctype = v
                elif k == "content-encoding" and cenc is None:
                    cenc = v
            out = (status, ctype, cenc)
        if len(memo) >= FACTS_MEMO_ENTRIES:
            memo.clear()
        memo[id(hdrs)] = (hdrs, out)
        return out

    def _response_facts(self, hdrs) -> tuple:
        """(:status as a number or None, the first content-type, the first content-encoding)."""
        return self._facts(hdrs, False)

    def _request_headers(self, ex: Exchange, hdrs, f: H2Frame):
        # the decoded list is shared with the frame (and with identical blocks: HPACK cache);
        # nothing mutates header lists once decoded
        ex.request_headers = hdrs if type(hdrs) is list else list(hdrs)
        ex.request_header_bytes_wire += f.block_wire
        ex.request_header_bytes_decoded += f.block_decoded
        fresh = ex.method is None and ex.authority is None and ex.path is None and ex.scheme == self.scheme
        hit = self.facts_memo[True].get(id(hdrs))  # self._facts(hdrs, True), its memo read here
        method, scheme, authority, path, host, prio, url = hit[1] if hit is not None and hit[0] is hdrs else self._facts(hdrs, True)
        if fresh:
            # what the general case below makes of a new exchange, with the URL built once per
            # header list (shared, as the list is), not once per request
            if method is not None:
                ex.method = method
            if scheme is not None:
                ex.scheme = scheme
            ex.authority = authority if authority is not None else host
            if path is not None:
                ex.path = path
            if prio:
                ex.priority = dict(ex.priority or {}, **prio)
            if url is not None:
                ex.url = url
            return
        if method is not None:
            ex.method = method
        if scheme is not None:
            ex.scheme = scheme
        if authority is not None:
            ex.authority = authority
        if path is not None:
            ex.path = path
        if prio:
            ex.priority = dict(ex.priority or {}, **prio)
        if ex.authority is None:
            ex.authority = host
        if ex.method == "CONNECT" and ex.path is None:
            ex.url = ex.authority
        elif ex.authority is not None:
            ex.url = f"{ex.scheme or self.scheme}://{ex.authority}{ex.path or ''}"
        elif ex.path is not None:
            ex.url = ex.path  # no :authority seen (a capture that starts inside the connection): as HTTP/1 and SPDY do

    def _request_end(self, st: _Stream, f: H2Frame):
        ex = st.ex
        st.req_done = True
        pk = f.packet
        ctx = self.ctx
        if pk == ctx._tp:  # ctx.time(pk), inlined
            ex.request_end = ctx._tv
        else:
            ex.request_end = ctx._tv = self.ts[pk - 1]
            ctx._tp = pk
        ex.request_end_packet = pk

    def _response_end(self, st: _Stream, f):
        end_response(self.conn, st, self.ctx.time(f.packet), f.packet)

    def _finish_body(self, st: _Stream):
        body, st.body = st.body, None
        finish_body(self.conn, st.ex, body)
