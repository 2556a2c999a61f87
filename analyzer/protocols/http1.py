"""HTTP/1.x in the packet list: a message is shown on the packet where it ends (tshark
reassembles the body before it dissects the message), as ``GET /x HTTP/1.1 `` (the trailing
space is tshark's) or ``HTTP/1.1 200 OK `` followed by `` (text/css)`` — the media type, or the
image dissector's name (``PNG``, ``JPEG JFIF image``) — when it has a body; the segments before
its end say ``[TCP segment of a reassembled PDU]`` (over TLS: ``[TLS segment of a reassembled
PDU]``)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from wirefall.analyzer.info import TLS_SEGMENT, exchange_by_id, header, media_text
from wirefall.analyzer.model import Analysis, Frame

if TYPE_CHECKING:
    from wirefall.analyzer.info import InfoContext


def summary(fr: Frame) -> str:
    f = fr.fields or {}
    if f.get("start_line"):
        return str(f["start_line"])
    if f.get("method"):
        return f"{f['method']} {f.get('target') or f.get('path') or ''} {fr.protocol.upper()}".strip()
    if f.get("status") is not None:
        return f"{fr.protocol.upper()} {f['status']} {f.get('reason', '')}".strip()
    return fr.type


def start_line(fr: Frame) -> str | None:
    f = fr.fields or {}
    if fr.type == "REQUEST" and f.get("method"):
        return f"{f['method']} {f.get('target') or ''} {f.get('version') or fr.protocol.upper()}"
    if fr.type == "RESPONSE" and f.get("status") is not None:
        return f"{f.get('version') or fr.protocol.upper()} {f['status']} {f.get('reason', '')}".rstrip()
    return None


def end_packet(analysis: Analysis, fr: Frame) -> int | None:
    """The packet where the message whose head is ``fr`` ends (its body's last byte)."""
    f = fr.fields or {}
    if fr.type == "RESPONSE" and isinstance(f.get("status"), int) and 100 <= f["status"] < 200:
        return fr.packet  # an interim response has no body (the exchange's end is the final response's)
    e = exchange_by_id(analysis, f.get("exchange"))
    if e is None:
        return None
    return e.request_end_packet if fr.type == "REQUEST" else e.response_end_packet


# Media types whose tshark 4.0 dissector checks the body's first bytes: it names the image
# (``PNG``, ``JPEG JFIF image``, ``GIF89a``/``GIF87a``) only when they are there, and refuses it
# otherwise, so that the media dissector writes the type (``(image/png)``)
_MAGIC_TYPES = frozenset(("image/png", "image/jpeg", "image/jpg", "image/gif"))
# the XML dissector's media types (the protocol column says ``HTTP/XML``; it writes no Info)
_XML_TYPES = frozenset(("text/xml", "application/xml", "image/svg+xml", "application/rss+xml", "application/atom+xml"))
# types another tshark 4.0 dissector takes that writes nothing to the Info column
_SILENT_TYPES = _XML_TYPES | {"multipart/form-data", "multipart/mixed", "multipart/related", "multipart/alternative"}
_PREFIX = 4096  # body bytes read to see the magic (more than the magic: a content-coded body is decoded from them)


def image_name(ct: str, body: bytes) -> str | None:
    """The name tshark 4.0's image dissector for ``ct`` writes for ``body``, or None when it
    refuses the body (not the format its type says)."""
    if ct == "image/png":
        return "PNG" if body.startswith(b"\x89PNG\r\n\x1a\n") else None
    if ct == "image/gif":
        return body[:6].decode() if len(body) >= 20 and body[:6] in (b"GIF87a", b"GIF89a") else None
    if ct in ("image/jpeg", "image/jpg"):
        ok = (len(body) >= 20 and body[:2] == b"\xff\xd8" and body[2:4] in (b"\xff\xe0", b"\xff\xe1")
              and body[6:11] in (b"JFIF\0", b"Exif\0"))
        return "JPEG JFIF image" if ok else None
    return None


def _body_prefixes(analysis: Analysis) -> dict:
    """(exchange id, direction) -> the first bytes of each HTTP/1 body of a ``_MAGIC_TYPES`` type,
    content coding undone (None: not read), read again from the capture in one pass over their
    connections when first asked (analysis.objects.exchange_bodies), kept on the analysis."""
    memo = analysis.__dict__.get("_wf_h1_magic")
    if memo is not None and memo[0] == len(analysis.exchanges):
        return memo[1]
    from wirefall.analyzer.objects import decode_body, exchange_bodies

    old = memo[1] if memo is not None else {}
    wanted = []
    for e in analysis.exchanges:
        if not (e.protocol or "").lower().startswith("http/"):
            continue
        for d in (0, 1):
            key = (e.id, d)
            if key in old or not (e.request_body_bytes if d == 0 else e.response_body_bytes):
                continue
            if _media_type(_ctype(e, d)) in _MAGIC_TYPES:
                wanted.append((e, d))
    got = dict(old)
    if wanted:
        for (eid, d), raw in exchange_bodies(analysis, wanted, max_bytes=_PREFIX).items():
            if raw.error or not raw.data:
                got[(eid, d)] = None
                continue
            e = next(x for x, dd in wanted if x.id == eid and dd == d)
            coding = e.content_encoding if d == 1 else header(getattr(e, "request_headers", None), "content-encoding")
            out = bytearray()
            decode_body(coding, [raw.data], out.extend, cap=64)
            got[(eid, d)] = bytes(out[:64])
    analysis.__dict__["_wf_h1_magic"] = (len(analysis.exchanges), got)
    return got


def _ctype(e, d: int) -> str | None:
    if d == 1:
        return e.content_type or header(getattr(e, "response_headers", None), "content-type")
    return header(getattr(e, "request_headers", None), "content-type")


def _media_type(ct: str | None) -> str:
    return (ct or "").split(";", 1)[0].strip().lower()


def _body_media(analysis: Analysis, head: Frame) -> str | None:
    """What tshark 4.0 appends to an HTTP/1 message's line for its body: the body dissector's
    name when it takes the body (``(PNG)`` only for a PNG), else the media type."""
    e = exchange_by_id(analysis, (head.fields or {}).get("exchange"))
    if e is None:
        return None
    d = 1 if head.type == "RESPONSE" else 0
    ct = _ctype(e, d)
    mt = _media_type(ct)
    if mt in _SILENT_TYPES:
        return None
    if mt in ("image/x-icon", "image/vnd.microsoft.icon"):
        return f" ({mt})"  # (the media dissector's, in HTTP/1 as tshark 4.0 writes it)
    if mt.endswith("+json") and mt != "application/json":
        return f" ({mt})"  # (tshark 4.0's JSON dissector is not registered for the +json types)
    if mt in _MAGIC_TYPES:
        body = _body_prefixes(analysis).get((e.id, d))
        if body is not None:  # (None: the body was not read again: the type's dissector named)
            return f" ({image_name(mt, body) or mt})"
    return media_text(ct)


def messages_info(analysis: Analysis, n: int, frames: list[Frame], over_tls: bool = False,
                  next_head: Frame | None = None) -> tuple[str, bool]:
    """(Info of the HTTP/1 messages ending on packet ``n``, whether the packet's first message
    ends later: tshark's TCP marker follows).  ``frames``: the HTTP/1 frames completing on
    ``n``; ``next_head``: the head of a message that begins on ``n`` and is read on a later
    packet (``_next_head``).

    What follows the messages that end here, as tshark 4.0 writes it: HTTP writes a message's
    first line as soon as it has read the line, before it asks TCP (or TLS) for the rest of the
    message, so the message read last — its head begun here and ended later, or its head read
    here and its body ending later — adds ``LINE `` when its first line is whole on the packet,
    with no marker after a message that ended (TCP writes ``[TCP segment of a reassembled
    PDU]`` only where it could dissect nothing of the segment).  Over TLS the same, except when
    the one message ending in the record is a body whose head was read in an earlier record and
    whose length its head gave (Content-Length): TLS reassembled exactly that body, hands the
    rest of the record to HTTP on its own, and writes ``[TLS segment of a reassembled PDU]`` over
    the line when HTTP asks for more of it.  (A head read across records, or a chunked body, is
    reassembled a whole record at a time: HTTP reads the next message in the same pass and TLS
    writes nothing.)  tshark 4.0.17 on captures made with python's http.server and ssl
    (tests/test_info_h1_29.py)."""

    parts: list[str] = []
    # (exchange, direction) of the packet's bodies and heads, made in one pass and looked up
    # per message: an any() over the packet's frames per message was quadratic (50,000
    # pipelined requests in one segment run: 158 s of `packets`)
    bodies: set = set()
    heads: set = set()
    for x in frames:
        if x.type == "BODY":
            bodies.add(((x.fields or {}).get("exchange"), x.direction))
        elif x.type in ("REQUEST", "RESPONSE"):
            heads.add(((x.fields or {}).get("exchange"), x.direction))
    ended = 0  # messages ending on the packet
    reassembled = False  # the first of them is a body of known length whose head was read on an earlier packet
    late: Frame | None = None  # a head read here whose body ends later
    for fr in frames:
        if fr.type in ("REQUEST", "RESPONSE"):
            end = end_packet(analysis, fr)
            if end is not None and end > n:
                late = fr  # its body ends later: shown there, in full
                continue
            line = start_line(fr)
            if line is None:
                continue
            ended += 1
            has_body = ((fr.fields or {}).get("exchange"), fr.direction) in bodies
            parts.append(line + " " + (_body_media(analysis, fr) or "" if has_body else ""))
        elif fr.type == "BODY":
            ex = (fr.fields or {}).get("exchange")
            if (ex, fr.direction) in heads:
                continue  # (shown with its head, above)
            head = _head_of(analysis, fr, ex)
            line = start_line(head) if head is not None else None
            if head is not None and line is not None:
                if not ended:  # (its head was read on an earlier packet, its body's length known there)
                    reassembled = not _chunked(analysis, ex, fr.direction)
                ended += 1
                parts.append(line + " " + (_body_media(analysis, head) or ""))
    nxt = late or next_head
    if nxt is None:
        return "".join(parts), False
    line = start_line(nxt)
    if not ended:  # the packet's first message ends later: TCP's marker (over TLS, TLS's alone)
        if late is not None and line is not None and not over_tls:
            parts.append(line + " ")  # (tshark's HTTP writes the head it read before asking TCP for more)
        return "".join(parts), True
    if over_tls and ended == 1 and reassembled:
        parts.append(TLS_SEGMENT)  # (TLS's column text after the record's reassembled message, no space)
    elif line is not None and (late is not None or _line_on(analysis, nxt, n, over_tls, line)):
        parts.append(line + " ")
    return "".join(parts), False


def _chunked(analysis: Analysis, ex, direction: int) -> bool:
    """Whether the body of exchange ``ex`` in ``direction`` is chunked (tshark asks TCP or TLS
    for one more segment at a time for it, not for a length)."""
    e = exchange_by_id(analysis, ex)
    if e is None:
        return False
    te = header(e.response_headers if direction == 1 else getattr(e, "request_headers", None), "transfer-encoding")
    return te is not None and "chunked" in te.lower()


def _next_head(frames: list[Frame], n: int) -> Frame | None:
    """The head of the HTTP/1 message that begins on packet ``n`` and is read on a later one
    (its first byte here, its end later), among ``frames`` (the packet's frames of its
    direction); one pass."""
    found = None
    for fr in frames:
        if fr.type in ("REQUEST", "RESPONSE") and fr.first_packet == n and fr.packet > n and fr.protocol.startswith("http/"):
            found = fr
    return found


def _line_on(analysis: Analysis, head: Frame, n: int, over_tls: bool, line: str) -> bool:
    """Whether the first line of ``head`` (begun on packet ``n``), its line end included, is on
    ``n``: the packet that carried the line's last byte, from the connection's stream-offset
    map (TCP's; over TLS the plaintext's, to the packet completing each record).  The line's
    length is its text's (``start_line``) and a CRLF: a line with a bare LF, or with spaces
    the fields do not keep, moves its end by a byte or two.  Without a map (a live pass not
    finished): not written."""
    if head.offset < 0:
        return False
    key = (head.connection, head.direction, "tls") if over_tls else (head.connection, head.direction)
    m = (analysis.maps or {}).get(key)
    if m is None or not len(m.packets):
        return False
    return m.packet_at(head.offset + len(line.encode("utf-8", "surrogateescape")) + 1) == n


def _head_of(analysis: Analysis, body: Frame, ex) -> Frame | None:
    """The head (request or final response) of a body frame's message: on the packet where the
    body begins, as most are, or where its message began (an upload sent after 100 Continue
    begins after the head's packet, and after the interim response)."""
    from wirefall.analyzer.detail import frames_on_packet

    e = exchange_by_id(analysis, ex)
    where = [body.first_packet]
    if e is not None:
        where.append(e.request_start_packet if body.direction == 0 else e.response_headers_end_packet)
    for p in where:
        if p is None:
            continue
        for h in frames_on_packet(analysis, p):
            f = h.fields or {}
            if h.type in ("REQUEST", "RESPONSE") and h.direction == body.direction and f.get("exchange") == ex and not f.get("interim"):
                return h
    return None


def info(ctx: InfoContext, fr: Frame) -> str:
    """Every HTTP/1 message ending on the packet, written at the first of them (tshark's HTTP
    dissector writes the column once per reassembled PDU); "" at the others."""
    if "http1" in ctx.memo:
        return ""
    mine = [f for f in ctx.done if f.protocol.startswith("http/")]
    text, pending = messages_info(ctx.analysis, ctx.n, mine, ctx.over_tls, _next_head(ctx.frames, ctx.n))
    ctx.memo["http1"] = True
    ctx.pending = ctx.pending or pending
    return text


def continues(ctx: InfoContext) -> bool:
    """A body of a message on this packet ends on a later one, and no HTTP/1 message ends on it
    (where one does, ``info`` has said whether TCP's marker follows: only when the packet's
    first message goes on)."""
    if "http1" in ctx.memo:
        return False
    return any(fr.packet > ctx.n and fr.protocol.startswith("http/") and fr.type == "BODY" for fr in ctx.frames)


# ---------------------------------------------------------------- the detail tree (Wireshark's)

def _conn_exchanges(analysis: Analysis, conn: int) -> list:
    """The connection's HTTP/1 exchanges in order (one map per analysis, rebuilt as they grow)."""
    memo = analysis.__dict__.get("_wf_h1_conn_ex")
    exs = analysis.exchanges
    if memo is None or memo[0] != len(exs):
        by: dict[int, list] = {}
        for e in exs:
            if str(e.protocol or "").startswith("http/1"):
                by.setdefault(e.connection, []).append(e)
        memo = (len(exs), by)
        analysis.__dict__["_wf_h1_conn_ex"] = memo
    return memo[1].get(conn, [])


def message_node(analysis: Analysis, fr: Frame, number: int):
    """[node] of an HTTP/1 message as Wireshark's tree shows it, on the packet where it ends (tshark
    reassembles the body first): its start line with its parts, each header line, the blank
    line, the full URI, its place on the connection (``[HTTP request 2/5]``) and the frames of
    the requests and responses around it.  A head whose message ends later says where; a
    body's node is its message's ([]: its head on the same packet writes it).  None: the generic
    node serves (no head to read)."""
    from wirefall.analyzer.detail import Node, expert_node, wirefall_node

    head = fr
    if fr.type == "BODY":
        found = _head_of(analysis, fr, (fr.fields or {}).get("exchange"))
        if found is None:
            return None
        head = found
        if head.packet == number:
            return []  # (the head on this packet writes the message)
    elif fr.type not in ("REQUEST", "RESPONSE"):
        return None
    end = end_packet(analysis, head)
    node = Node("Hypertext Transfer Protocol")
    if fr.type != "BODY" and end is not None and end > number:
        node.add(f"[The message goes on: it ends in packet {end}]")
        node.children.append(wirefall_node(fr))
        return [node]
    f = head.fields or {}
    line = start_line(head) or summary(head)
    sl = node.add(f"{line}\\r\\n")
    expert_node(sl, "Chat", f"{line}\\r\\n")
    version = f.get("version") or head.protocol.upper()
    if head.type == "REQUEST":
        sl.add(f"Request Method: {f.get('method')}", abbrev="http.request.method", value=f.get("method"))
        sl.add(f"Request URI: {f.get('target')}", abbrev="http.request.uri", value=f.get("target"))
        sl.add(f"Request Version: {version}", abbrev="http.request.version", value=version)
    else:
        st = f.get("status")
        sl.add(f"Response Version: {version}", abbrev="http.response.version", value=version)
        sl.add(f"Status Code: {st}", abbrev="http.response.code", value=str(st))
        from wirefall.analyzer.info import status_text

        words = status_text(st).split(" ", 1)
        if len(words) == 2:
            sl.add(f"[Status Code Description: {words[1]}]", abbrev="http.response.code.desc", value=words[1])
        sl.add(f"Response Phrase: {f.get('reason', '')}", abbrev="http.response.phrase", value=f.get("reason", ""))
    for k, v in head.headers or ():
        h = node.add(f"{k}: {v}\\r\\n")
        if str(k).lower() == "content-length" and str(v).strip().isdigit():
            h.add(f"[Content length: {int(v)}]", abbrev="http.content_length", value=str(int(v)))
    node.add("\\r\\n")
    exs = _conn_exchanges(analysis, head.connection)
    ex = exchange_by_id(analysis, f.get("exchange"))
    i = next((k for k, x in enumerate(exs) if x is ex), None)
    uri = ex.url if ex is not None and "://" in (ex.url or "") else None  # (the full URI: scheme, Host, target)
    if head.type == "REQUEST":
        if uri:
            node.add(f"[Full request URI: {uri}]", abbrev="http.request.full_uri", value=uri)
        if i is not None:
            node.add(f"[HTTP request {i + 1}/{len(exs)}]")
            _link(node, "Prev request in frame", exs[i - 1].request_end_packet if i else None, "http.prev_request_in")
            _link(node, "Response in frame", ex.response_end_packet, "http.response_in")
            _link(node, "Next request in frame", exs[i + 1].request_end_packet if i + 1 < len(exs) else None, "http.next_request_in")
    elif i is not None:
        node.add(f"[HTTP response {i + 1}/{len(exs)}]")
        if ex.request_end is not None and ex.response_end is not None:
            from wirefall.analyzer.packet_record import seconds_text

            t = seconds_text(round(ex.response_end - ex.request_end, 6), 6) + "000"
            node.add(f"[Time since request: {t} seconds]", abbrev="http.time", value=t)
        _link(node, "Prev request in frame", exs[i - 1].request_end_packet if i else None, "http.prev_request_in")
        _link(node, "Prev response in frame", exs[i - 1].response_end_packet if i else None, "http.prev_response_in")
        _link(node, "Request in frame", ex.request_end_packet, "http.request_in")
        _link(node, "Next request in frame", exs[i + 1].request_end_packet if i + 1 < len(exs) else None, "http.next_request_in")
        _link(node, "Next response in frame", exs[i + 1].response_end_packet if i + 1 < len(exs) else None, "http.next_response_in")
        if uri:
            node.add(f"[Request URI: {uri}]", abbrev="http.response_for.uri", value=uri)
    node.children.append(wirefall_node(fr))
    return [node]


def _link(node, word: str, packet: int | None, abbrev: str) -> None:
    if packet:
        node.add(f"[{word}: {packet}]", abbrev=abbrev, value=str(packet))
