"""SPDY session: ``dissectors.spdy.SpdyConnection`` output -> model ``Frame``s and ``Exchange``s.

Version: over TLS from the negotiated ALPN/NPN protocol (``conn.tls.alpn`` / ``.npn``);
in cleartext from the first control frame's version field.  SPDY/3 and 3.1 share version 3
on the wire: a cleartext session is reported ``spdy/3`` until a session-level WINDOW_UPDATE
(stream 0) shows it is ``spdy/3.1``; then the connection, and the frames and exchanges
already made for it, are relabelled ``spdy/3.1``.

One ``Frame`` per SPDY frame at the packet of its last byte (``first_packet``: first byte).
Frame.fields by type: SYN_STREAM ``associated_stream_id``, ``priority`` (0 = highest; 2 bits
in v2, 3 bits in v3), ``slot`` (v3), ``unidirectional``; frames with a header block
``header_bytes_wire`` (compressed block, as in the frame), ``header_bytes_raw`` (inflated
name/value block, length fields included), ``header_bytes_decoded`` (sum of name + value
lengths), ``first_block`` (the block that started its direction's zlib stream: the one the
dictionary helps most); SYN_REPLY/HEADERS from the server may carry ``associated_content``
(parsed ``X-Associated-Content``: [{"url", "priority"}]) and ``subresources`` (``X-Subresources``
hints); RST_STREAM ``status``/``status_name``; SETTINGS ``clear_settings``, ``settings``
[{id, name, flags, persist_value, persisted, value}]; PING ``ping_id``; GOAWAY
``last_good_stream_id`` (+ v3 ``status``/``status_name``); WINDOW_UPDATE
``window_size_increment``, ``window`` (the window it reopened), ``stall_duration`` (seconds the
sender had been blocked on it, if it had); CREDENTIAL ``slot``, ``proof_length``,
``certificate_lengths``; DATA ``window_stream`` / ``window_connection`` (the sender's windows
left after it; connection = SPDY/3.1 session window) and ``stalled`` ("stream" |
"connection") when it exhausted one, ``compressed`` (v2 COMPRESS flag).

Exchange per stream (client SYN_STREAMs, and server SYN_STREAMs = pushes with ``pushed`` and
``push_parent`` = Associated-To stream id, or, lacking one, the stream whose
``X-Associated-Content`` listed the URL):
- method/url/scheme/authority/path/status from v3 ``:method :path :host :scheme :status`` or
  v2 ``method url scheme host status`` (a v2 ``url`` may be absolute);
- request_start/end: first byte of the SYN_STREAM, last byte of the client frame with FIN;
  for a push both are the server's SYN_STREAM;
- response_start: first byte of the SYN_REPLY (push: of the SYN_STREAM if it carries a status,
  else of the first HEADERS/DATA); response_end: last byte of the server frame with FIN (or
  the RST_STREAM, whose status name goes to ``reset``);
- header bytes by the direction they travelled: ``request_header_bytes_*`` = client blocks,
  ``response_header_bytes_*`` = server blocks (a pushed SYN_STREAM counts as response);
  ``*_wire`` = compressed block bytes, ``*_decoded`` = sum of name + value lengths;
- priority ``{"priority": p, "lowest": 3 (v2) | 7 (v3)}`` (+ ``slot`` v3);
- flow control (v3): each sender's stream windows (initial 64 KiB, SETTINGS
  INITIAL_WINDOW_SIZE from the receiver resizes them) and, in 3.1, session windows (64 KiB)
  are followed; a DATA frame that exhausts one is flagged and noted, an overrun is an error.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

from wirefall.dissectors.spdy import (
    FLAG_FIN,
    GOAWAY,
    HEADERS,
    RST_STREAM,
    SETTINGS,
    SETTINGS_INITIAL_WINDOW_SIZE,
    SYN_REPLY,
    SYN_STREAM,
    WINDOW_UPDATE,
    SpdyConnection,
    SpdyFrame,
)

from . import IdentityBody, bound_gapped, end_response, end_unfinished, finish_body, needs_decoder, note_gap
from .tls import wire_packet
from ..model import Connection, Exchange, Frame, Note, NoteKind, OffsetMap

if TYPE_CHECKING:
    from ..content import BodyDecoder

DEFAULT_WINDOW = 64 * 1024
DIR_NAMES = ("client→server", "server→client")
_BLOCK_TYPES = frozenset({int(SYN_STREAM), int(SYN_REPLY), int(HEADERS)})  # frames with a header block
REQUEST_NAMES = {":method", ":path", ":host", ":scheme", "method", "url", "host", "scheme"}


def parse_associated_content(value: str) -> list[dict]:
    """``X-Associated-Content`` (mod_spdy / App Engine form): comma-separated, optionally
    double-quoted URLs, each optionally followed by ``:priority``."""
    out = []
    for m in re.finditer(r'\s*(?:"([^"]*)"|([^,\s]+))\s*(?::\s*(\d+))?\s*(?:,|$)', value):
        url = m.group(1) if m.group(1) is not None else m.group(2)
        if url:
            item = {"url": url}
            if m.group(3) is not None:
                item["priority"] = int(m.group(3))
            out.append(item)
    return out


# what _apply_headers does with a header (by its lower-case name)
_METHOD, _PATH, _HOST, _SCHEME, _STATUS, _CTYPE, _CENC, _HINT = range(8)
_APPLY = {":method": _METHOD, "method": _METHOD, ":path": _PATH, "url": _PATH, ":host": _HOST, "host": _HOST,
          ":scheme": _SCHEME, "scheme": _SCHEME, ":status": _STATUS, "status": _STATUS,
          "content-type": _CTYPE, "content-encoding": _CENC, "x-associated-content": _HINT, "x-subresources": _HINT}


def _url_path(url: str) -> str:
    if "://" not in url:  # (the pattern needs it: a path as SPDY/3 sends it)
        return url
    m = re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*://[^/]*(/.*)?$", url)
    if m:
        return m.group(1) or "/"
    return url


class _Stream:
    __slots__ = ("ex", "req_done", "resp_done", "window", "stall_since", "body", "last_s2c")

    def __init__(self, ex: Exchange):
        self.ex = ex
        self.req_done = False
        self.resp_done = False
        self.window = [DEFAULT_WINDOW, DEFAULT_WINDOW]  # send windows of client, server
        self.stall_since: list[float | None] = [None, None]
        self.body: BodyDecoder | IdentityBody | None = None
        self.last_s2c = 0


class SpdySession:
    def __init__(self, ctx, conn: Connection, cleartext: bool = True, **kw):
        self.ctx = ctx
        self.conn = conn
        self.cleartext = cleartext
        self.dis = SpdyConnection(header_limit=ctx.limits.get("spdy_header_block", 1 << 20),
                                  header_budget=ctx.budget("header_decoded_bytes", conn),
                                  decompress_budget=ctx.budget("decompress_bytes", conn))
        self.stop_noted = [False, False]  # header decompression stopped by its budget: said once per direction
        self.maps = [OffsetMap(), OffsetMap()]
        self.started = [False, False]
        self.proto: str | None = None
        self.version_known = False  # from ALPN/NPN, or 3.1 seen
        self.proto_guessed = False  # set from no version field (DATA frames first)
        self.unknown_noted: set[int] = set()  # streams noted as having no SYN_STREAM in the capture
        if not cleartext and conn.tls is not None:
            p = conn.tls.alpn or conn.tls.npn
            if p and p.startswith("spdy/"):
                self.proto = p
                self.version_known = True
        self.streams: dict[int, _Stream] = {}
        self.gapped: dict = {}  # streams open across a hole of the capture (sessions.note_gap)
        self.frames: list[Frame] = []
        self.exchanges: list[Exchange] = []
        self.initial_window = [DEFAULT_WINDOW, DEFAULT_WINDOW]  # for streams sent by client, server
        self.session_window = [DEFAULT_WINDOW, DEFAULT_WINDOW]
        self.session_stall_since: list[float | None] = [None, None]
        self.promised: dict[str, int] = {}  # X-Associated-Content URL/path -> parent stream
        self.body_cap = ctx.limits.get("body_decoded_bytes", 64 << 20)
        if self.proto:
            conn.protocol = self.proto

    # -- byte-stream interface
    def data(self, direction, data, offset, packet):
        if not self.started[direction]:
            self.started[direction] = True
            self.dis.set_offset(direction, offset)
        m = self.maps[direction]
        m.add(offset, packet)
        frames = self.dis.receive(direction, data)
        if frames:
            # a frame whose first byte is at or after the map's last start lies wholly in
            # ``packet`` (what packet_at would answer twice, without the two look-ups)
            lo = m.starts[-1]
            for f in frames:
                self._frame(direction, f, packet, f.offset >= lo)

    def gap(self, direction, offset, length, packet):
        if not self.started[direction]:
            self.started[direction] = True
            self.dis.set_offset(direction, offset)
        self.maps[direction].add(offset, packet)
        self.conn.notes.append(f"packet {packet}: {length} bytes lost by the capture ({DIR_NAMES[direction]}), SPDY framing resynchronised")
        if length:  # (before the frame the hole cut, which the dissector hands on: its stream lost bytes too)
            note_gap(self.gapped, self.streams, direction)
        for f in self.dis.gap(direction, length):
            self._frame(direction, f, packet)

    def end(self):
        for d in (0, 1):
            dd = self.dis.dirs[d]
            if dd.data_frame is not None or dd.buf:
                self.conn.notes.append(Note(NoteKind.ENDS_IN_FRAME, direction=d, detail=f"SPDY: capture ends inside a frame ({DIR_NAMES[d]})"))
        for st in self.streams.values():
            if st.body is not None:
                self._finish_body(st)
            end_unfinished(self.ctx, st.ex, st.resp_done, st.last_s2c)  # (as HTTP/2's)
        bound_gapped(self.gapped)

    # -- helpers
    def _set_proto(self, proto: str):
        if proto == self.proto:
            return
        self.proto = proto
        self.conn.protocol = proto
        for fr in self.frames:
            fr.protocol = proto
        for ex in self.exchanges:
            ex.protocol = proto

    def _pkt(self, direction: int, offset: int) -> int:
        return self.maps[direction].packet_at(offset)

    def _new_stream(self, sid: int) -> _Stream:
        ex = self.ctx.new_exchange(self.conn, self.proto or "spdy/3", sid)
        self.exchanges.append(ex)
        st = _Stream(ex)
        st.window = [self.initial_window[0], self.initial_window[1]]
        self.streams[sid] = st
        return st

    # -- frames
    def _frame(self, direction: int, f: SpdyFrame, packet: int, here: bool = False):
        """``here``: the frame lies wholly in ``packet``."""
        ctx = self.ctx
        proto = self.proto
        if proto is None or self.proto_guessed and f.version:
            # the first control frame's version names the session; a capture that starts
            # inside one may show DATA frames (no version) first: guessed, and put right later
            v = f.version or self.dis.version
            proto = "spdy/2" if v == 2 else "spdy/3"
            self._set_proto(proto)
            self.proto_guessed = v is None
        if here:
            first = last = packet
        else:
            first = self._pkt(direction, f.offset)
            last = self._pkt(direction, f.end - 1) if f.end > f.offset else first
            if last > packet or last == 0:
                last = packet
        # the dissector's fields dict is this frame's alone: the Frame takes it over (no copy)
        fields = f.fields
        t = f.type_code
        if t in _BLOCK_TYPES:
            assert fields is not None  # (every control frame has its dict)
            fields["header_bytes_wire"] = f.block_wire
            fields["header_bytes_raw"] = f.block_raw
            fields["header_bytes_decoded"] = f.block_decoded
        # positional: packet, first_packet, time, connection, direction, protocol, stream_id,
        # type, flags, length, headers, fields, offset, error
        fr = Frame(last, first, ctx.time(last), self.conn.id, direction, proto, f.stream_id, f.type, f.flags, f.length,
                   f.headers, fields or None, f.offset, f.error)
        if f.error:  # (the dissector sets fields["not_decoded"] with an error only)
            self._note_error(direction, f, last)
        ctx.add_frame(fr, "SPDY")
        self.frames.append(fr)
        if t is None:
            self._data(direction, f, fr)
        elif t == SYN_STREAM:
            self._syn_stream(direction, f, fr)
        elif t in (SYN_REPLY, HEADERS):
            self._headers(direction, f, fr)
        elif t == RST_STREAM:
            # (no stream id: a truncated frame, whose error is noted above)
            st = self.streams.get(f.stream_id) if f.stream_id is not None else None
            if st is not None:
                ex = st.ex
                ex.frames += 1
                name = (f.fields or {}).get("status_name")
                if st.req_done and st.resp_done:  # a late reset (e.g. answering a WINDOW_UPDATE): not the outcome
                    self.conn.notes.append(Note(NoteKind.STREAM_MISUSE, fr.packet, detail=f"RST_STREAM {name} on stream {f.stream_id} after it completed"))
                else:
                    ex.reset = name
                if not st.resp_done:
                    st.resp_done = True
                    if ex.response_end is None or direction == 1:
                        ex.response_end = fr.time
                        ex.response_end_packet = fr.packet
                if st.body is not None:
                    self._finish_body(st)
        elif t == SETTINGS:
            self._settings(direction, f)
        elif t == WINDOW_UPDATE:
            self._window_update(direction, f, fr)
        elif t == GOAWAY:
            pass

    def _note_error(self, direction: int, f: SpdyFrame, last: int) -> None:
        budget = f.fields.get("not_decoded") if f.fields else None
        if budget in ("decompress_bytes", "spdy_header_block") and not self.stop_noted[direction]:
            self.stop_noted[direction] = True  # the zlib stream of this direction stopped: said once
            why = f"budget {budget} ran out" if budget == "decompress_bytes" else f"{f.error}"
            self.conn.notes.append(f"packet {last}: SPDY header decompression stopped ({DIR_NAMES[direction]}): {why}; "
                                   "this and later header blocks of this direction are not decoded, framing and DATA go on")
        elif budget is None:  # (a budget says so once, at the end)
            self.conn.notes.append(f"packet {last}: SPDY {f.type}" + (f" stream {f.stream_id}" if f.stream_id is not None else "") + f": {f.error}")

    def _apply_headers(self, ex: Exchange, headers, request: bool) -> bool:
        """Whether a response's headers hold a push hint (X-Associated-Content, X-Subresources)."""
        hint = False
        if request:
            ex.request_headers.extend(headers)
        else:
            ex.response_headers.extend(headers)
        for k, v in headers:
            a = _APPLY.get(k)  # (SPDY names are lower case: the look-up of k.lower() is the rare one)
            if a is None:
                a = _APPLY.get(k.lower())
                if a is None:
                    continue
            if a == _METHOD:
                ex.method = v
            elif a == _PATH:
                if "://" in v:
                    m = re.match(r"^([a-zA-Z][a-zA-Z0-9+.-]*)://([^/]*)", v)
                    if m:
                        ex.scheme = ex.scheme or m.group(1)
                        ex.authority = ex.authority or m.group(2)
                ex.path = _url_path(v)
            elif a == _HOST:
                ex.authority = v
            elif a == _SCHEME:
                ex.scheme = v
            elif a == _STATUS:
                try:
                    ex.status = int(v.split(" ", 1)[0])
                except ValueError:
                    pass
            elif request:
                pass
            elif a == _CTYPE:
                ex.content_type = v
            elif a == _CENC:
                ex.content_encoding = v
            else:  # _HINT
                hint = True
        if ex.path is not None and ex.url is None or (ex.path is not None and ex.authority and ex.url and "://" not in ex.url):
            ex.url = f"{ex.scheme or ('http' if self.cleartext else 'https')}://{ex.authority}{ex.path}" if ex.authority else ex.path
        return hint

    def _syn_stream(self, direction: int, f: SpdyFrame, fr: Frame):
        sid = f.stream_id
        if sid is None:  # truncated before its stream id: no exchange (the frame's error is noted)
            return
        fl = f.fields or {}
        if sid in self.streams:
            self.conn.notes.append(Note(NoteKind.STREAM_MISUSE, fr.packet, detail=f"SYN_STREAM reuses stream id {sid}"))
        st = self._new_stream(sid)
        ex = st.ex
        ex.frames += 1
        v = f.version or 3
        ex.priority = {"priority": fl.get("priority"), "lowest": 3 if v == 2 else 7}
        if v >= 3:
            ex.priority["slot"] = fl.get("slot", 0)
        headers = f.headers or []
        if f.error and ex.error is None:
            ex.error = f.error
        if direction == 0:
            self._apply_headers(ex, headers, True)
            ex.request_header_bytes_wire += f.block_wire
            ex.request_header_bytes_decoded += f.block_decoded
            p = wire_packet(self.ctx, self.conn, 0, fr.offset, fr.first_packet)
            ex.request_start, ex.request_start_packet = self.ctx.time(p), p
            if f.flags & FLAG_FIN or fl.get("unidirectional"):
                st.req_done = True
                ex.request_end = fr.time
                ex.request_end_packet = fr.packet
            return
        # server-initiated stream: a push
        ex.pushed = True
        assoc = fl.get("associated_stream_id") or 0
        req = [(k, val) for k, val in headers if k.lower() in REQUEST_NAMES]
        resp = [(k, val) for k, val in headers if k.lower() not in REQUEST_NAMES]
        self._apply_headers(ex, req, True)
        self._apply_headers(ex, resp, False)
        if not assoc:
            for key in (ex.url, ex.path):
                if key in self.promised:
                    assoc = self.promised[key]
                    break
        ex.push_parent = assoc or None
        ex.response_header_bytes_wire += f.block_wire
        ex.response_header_bytes_decoded += f.block_decoded
        st.req_done = True
        p = wire_packet(self.ctx, self.conn, 1, fr.offset, fr.first_packet)
        ex.request_start, ex.request_start_packet = self.ctx.time(p), p
        ex.request_end = fr.time
        ex.request_end_packet = fr.packet
        if ex.status is not None:
            ex.response_start = ex.request_start
            ex.response_start_packet = p
            ex.response_headers_end, ex.response_headers_end_packet = fr.time, fr.packet
        st.last_s2c = fr.packet
        if f.flags & FLAG_FIN:
            self._response_end(st, fr)

    def _headers(self, direction: int, f: SpdyFrame, fr: Frame):
        sid = f.stream_id
        if sid is None:  # truncated before its stream id (the frame's error is noted)
            return
        st = self.streams.get(sid)
        if st is None:
            self._unknown_stream(fr, f, sid)
            return
        ex = st.ex
        ex.frames += 1
        if f.error and ex.error is None:
            ex.error = f.error
        headers = f.headers or []
        if direction == 0:
            self._apply_headers(ex, headers, True)
            ex.request_header_bytes_wire += f.block_wire
            ex.request_header_bytes_decoded += f.block_decoded
            if f.flags & FLAG_FIN:
                st.req_done = True
                ex.request_end = fr.time
                ex.request_end_packet = fr.packet
            return
        hint = self._apply_headers(ex, headers, False)
        ex.response_header_bytes_wire += f.block_wire
        ex.response_header_bytes_decoded += f.block_decoded
        if ex.response_start is None:
            p = wire_packet(self.ctx, self.conn, 1, fr.offset, fr.first_packet)
            ex.response_start, ex.response_start_packet = self.ctx.time(p), p
        if ex.response_headers_end is None and ex.status is not None:
            ex.response_headers_end, ex.response_headers_end_packet = fr.time, fr.packet
        st.last_s2c = fr.packet
        for k, v in headers if hint else ():
            kl = k.lower()
            if kl == "x-associated-content":
                items = parse_associated_content(v)
                fr.fields = dict(fr.fields or {}, associated_content=items)
                for it in items:
                    self.promised[it["url"]] = sid
                    self.promised.setdefault(_url_path(it["url"]), sid)
            elif kl == "x-subresources":
                hints = [h.strip().strip('"') for h in v.split(",") if h.strip()]
                fr.fields = dict(fr.fields or {}, subresources=hints)
        if f.flags & FLAG_FIN:
            self._response_end(st, fr)

    def _unknown_stream(self, fr: Frame, f: SpdyFrame, sid: int) -> None:
        """A frame of stream ``sid`` whose SYN_STREAM is not in the capture: noted once per stream
        (a capture that starts inside a download would otherwise note every DATA frame)."""
        if sid not in self.unknown_noted and len(self.unknown_noted) < 1000:
            self.unknown_noted.add(sid)
            self.conn.notes.append(Note(NoteKind.STREAM_UNSEEN, fr.packet, detail=f"{f.type} for stream {sid}, whose SYN_STREAM is not in the capture"))

    def _data(self, direction: int, f: SpdyFrame, fr: Frame):
        sid = f.stream_id  # (set on every DATA frame; the test costs what _stream's call did)
        st = self.streams.get(sid) if sid is not None else None
        n = f.length
        self._flow(direction, f, fr, st)
        if st is None:
            if sid is not None:
                self._unknown_stream(fr, f, sid)
            return
        ex = st.ex
        ex.frames += 1
        compressed = f.fields is not None and bool(f.fields.get("compressed"))  # (v2 COMPRESS flag)
        if self.ctx.body_sink is not None and f.data:  # (analyzer/objects.py)
            self.ctx.body_sink(self.conn, ex, direction, f.data, compressed)
        if direction == 0:
            ex.request_body_bytes += n
            if f.flags & FLAG_FIN:
                st.req_done = True
                ex.request_end = fr.time
                ex.request_end_packet = fr.packet
            return
        if ex.response_start is None:
            p = wire_packet(self.ctx, self.conn, 1, fr.offset, fr.first_packet)
            ex.response_start, ex.response_start_packet = self.ctx.time(p), p
        ex.response_body_bytes += n
        st.last_s2c = fr.packet
        if n and not compressed:
            body = st.body
            if body is None:
                ce = ex.content_encoding
                if needs_decoder(ce):
                    # decoded body sizes, as the HTTP sessions count them (analyzer.content is
                    # imported by the first coded body: a capture without one does not load it)
                    from ..content import BodyDecoder

                    body = st.body = BodyDecoder(ce, self.body_cap, ctx=self.ctx, conn=self.conn)
                else:
                    body = st.body = IdentityBody()
            if f.data is not None:
                body.feed(f.data)
        if f.flags & FLAG_FIN:
            self._response_end(st, fr)

    def _response_end(self, st: _Stream, fr):
        end_response(self.conn, st, fr.time, fr.packet)

    def _finish_body(self, st: _Stream):
        body, st.body = st.body, None
        finish_body(self.conn, st.ex, body)

    # -- flow control (SPDY/3, 3.1)
    def _v3(self) -> bool:
        return self.proto != "spdy/2" and (self.dis.version or 3) >= 3

    def _session_fc(self) -> bool:
        return self.proto == "spdy/3.1"

    def _flow(self, direction: int, f: SpdyFrame, fr: Frame, st: _Stream | None):
        proto = self.proto
        if proto == "spdy/2" or (self.dis.version or 3) < 3:  # (_v3)
            return
        session_fc = proto == "spdy/3.1"  # (_session_fc)
        n = f.length
        fields = fr.fields  # (the frame's own dict: see _frame)
        if fields is None:
            fields = {}
        assert isinstance(fields, dict)  # (SPDY frames hold no FrameFields)
        stalled = None
        new_stall = None
        if st is not None:
            w = st.window[direction] - n
            st.window[direction] = w
            fields["window_stream"] = w
            if w < 0:
                fr.error = (fr.error + "; " if fr.error else "") + f"stream flow-control window overrun by {-w} bytes"
                self.conn.notes.append(Note(NoteKind.FLOW_CONTROL, fr.packet, direction, length=-w,
                                            detail=f"stream {f.stream_id}: {DIR_NAMES[direction]} DATA overruns the stream window by {-w} bytes"))
            if w <= 0 and n:
                stalled = "stream"
                if st.stall_since[direction] is None:
                    st.stall_since[direction] = fr.time
                    new_stall = "stream"
        sw = self.session_window[direction] - n
        self.session_window[direction] = sw
        if session_fc:
            fields["window_connection"] = sw
        if sw <= 0 and n and session_fc:
            stalled = stalled or "connection"
            if self.session_stall_since[direction] is None:
                self.session_stall_since[direction] = fr.time
                new_stall = new_stall or "session"
            if sw < 0:
                fr.error = (fr.error + "; " if fr.error else "") + f"session flow-control window overrun by {-sw} bytes"
                self.conn.notes.append(Note(NoteKind.FLOW_CONTROL, fr.packet, direction, length=-sw,
                                            detail=f"stream {f.stream_id}: {DIR_NAMES[direction]} DATA overruns the session window by {-sw} bytes"))
        if stalled:
            fields["stalled"] = stalled
        if new_stall:
            self.conn.notes.append(Note(
                NoteKind.FLOW_CONTROL, fr.packet, direction, length=0,
                detail=f"stream {f.stream_id}: {DIR_NAMES[direction]} {new_stall} flow-control window exhausted (sender blocked until WINDOW_UPDATE)"))
        fr.fields = fields or None

    def _settings(self, direction: int, f: SpdyFrame):
        for e in (f.fields or {}).get("settings", ()):
            if e["id"] == SETTINGS_INITIAL_WINDOW_SIZE and not e["persisted"]:
                # the receiver (sender of SETTINGS) sets the window of the other side's streams
                other = 1 - direction
                delta = e["value"] - self.initial_window[other]
                self.initial_window[other] = e["value"]
                if self._v3():
                    for st in self.streams.values():
                        st.window[other] += delta

    def _window_update(self, direction: int, f: SpdyFrame, fr: Frame):
        inc = (f.fields or {}).get("window_size_increment", 0)
        other = 1 - direction  # the window reopened is the peer's send window
        fields = dict(fr.fields or {})
        if f.stream_id == 0:
            if self.proto != "spdy/3.1" and self.proto != "spdy/2":
                if self.cleartext or not self.version_known:
                    self._set_proto("spdy/3.1")
                    fr.protocol = "spdy/3.1"
            self.session_window[other] += inc
            fields["window"] = self.session_window[other]
            since = self.session_stall_since[other]
            if since is not None and self.session_window[other] > 0:
                fields["stall_duration"] = fr.time - since
                self.session_stall_since[other] = None
        elif f.stream_id is not None:  # (None: truncated, its error noted)
            st = self.streams.get(f.stream_id)
            if st is not None:
                st.ex.frames += 1
                st.window[other] += inc
                fields["window"] = st.window[other]
                since = st.stall_since[other]
                if since is not None and st.window[other] > 0:
                    fields["stall_duration"] = fr.time - since
                    st.stall_since[other] = None
        fr.fields = fields or None
