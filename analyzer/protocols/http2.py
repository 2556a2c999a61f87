"""HTTP/2 in the packet list and the detail tree: ``HEADERS[1]: 200 OK`` (the status with its
reason phrase), ``Magic`` before the client's first frames, `` (text/css)`` after the DATA frame
that ends a response body, ``[TCP Window Full] , HEADERS…`` (tshark's separator after a
TCP-analysis prefix); the frame node with Wireshark's field names (``http2.*``) and the byte
ranges of the 9-byte frame header."""
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from wirefall.analyzer.info import exchange_by_id, frame_text, header, media_text, status_text
from wirefall.analyzer.model import Analysis, Frame
from wirefall.dissectors.registry import descriptor

if TYPE_CHECKING:
    from wirefall.analyzer.detail import Node
    from wirefall.analyzer.info import InfoContext

TYPES = {n: c for c, n in descriptor("http2").type_names.items()}  # Frame.type -> wire number


def first_client_packets(analysis: Analysis) -> set[int]:
    """Packets carrying the client's first HTTP/2 frame of each connection (its connection
    preface, ``Magic``, is in front of it)."""
    frames = analysis.frames
    memo = analysis.__dict__.get("_wf_h2_first")
    if memo is not None and memo[0] == len(frames):
        return memo[1]
    seen: dict[int, int] = {}
    # (read only until every HTTP/2 connection's first client frame is found, near its start:
    # a reopened analysis unpacks its frames a chunk at a time, analyzer.cache)
    h2 = {c.id for c in analysis.connections if c.protocol in ("h2", "h2c")}
    for fr in frames:
        if fr.direction == 0 and fr.protocol in ("h2", "h2c") and fr.connection not in seen:
            seen[fr.connection] = fr.first_packet
            if h2.issubset(seen):
                break
    out = set(seen.values())
    analysis.__dict__["_wf_h2_first"] = (len(frames), out)
    return out


def _exchange_of_stream(analysis: Analysis, fr: Frame):
    memo = analysis.__dict__.get("_wf_ex_by_stream")
    exs = analysis.exchanges
    if memo is None or memo[0] != len(exs):
        memo = (len(exs), {(e.connection, e.stream_id): e for e in exs})
        analysis.__dict__["_wf_ex_by_stream"] = memo
    return memo[1].get((fr.connection, fr.stream_id))


def type_code(fr: Frame) -> int | None:
    """The frame's type number: a known type's, or an unknown one's (``UNKNOWN_0xNN``)."""
    t = TYPES.get(fr.type)
    if t is None:
        u = (fr.fields or {}).get("unknown_type")
        if isinstance(u, int):
            return u
        if fr.type.startswith("UNKNOWN_0x"):
            try:
                return int(fr.type[10:], 16)
            except ValueError:
                return None
    return t


def type_text(fr: Frame) -> str:
    """The frame's type as tshark's Info names it: ``Unknown type (250)`` for a type it does not know."""
    if fr.type in TYPES:
        return fr.type
    t = type_code(fr)
    return f"Unknown type ({t})" if t is not None else fr.type


def summary(fr: Frame) -> str:
    """One frame in frame lists and the tree's frame line: ``analyzer.detail``'s generic form
    (``HEADERS[1]: GET /``, ``DATA[3]``), a type tshark does not know named as it names it
    (``Unknown type (250)[0]``)."""
    return frame_text(fr, type_text(fr))


def frame_info(analysis: Analysis, fr: Frame) -> str:
    """tshark's Info of one HTTP/2 frame."""
    name = type_text(fr)
    s = f"{name}[{fr.stream_id}]" if fr.stream_id is not None else name
    if fr.headers:
        m, p, st = header(fr.headers, ":method"), header(fr.headers, ":path"), header(fr.headers, ":status")
        if m:
            s += f": {m} {p or ''}".rstrip()
        elif st:
            s += f": {status_text(st)}"
    trailers = fr.type == "HEADERS" and fr.headers and not any(str(k).startswith(":") for k, _ in fr.headers)
    if fr.flags & 0x1 and (fr.type == "DATA" or trailers):  # END_STREAM: tshark dissects the body and names its type
        e = exchange_by_id(analysis, (fr.fields or {}).get("exchange"))
        if e is None:
            e = _exchange_of_stream(analysis, fr)
        if e is not None:
            ct = e.content_type if fr.direction == 1 else header(getattr(e, "request_headers", None), "content-type")
            s += media_text(ct) or ""
    if fr.error:
        s += " [error]"
    return s


def info(ctx: InfoContext, fr: Frame) -> str:
    s = frame_info(ctx.analysis, fr)
    if "h2" not in ctx.memo:
        ctx.memo["h2"] = True
        ctx.comma_after_prefix = True  # tshark: "[TCP Window Full] , HEADERS[1]"
        if fr.direction == 0 and ctx.n in first_client_packets(ctx.analysis):
            return "Magic, " + s
    return s


# tshark's flag bits of each frame type (packet-http2.c), high to low; the other bits are "Unused"
_FLAG_BITS = {"DATA": ((0x08, "Padded", "padded"), (0x01, "End Stream", "end_stream")),
              "HEADERS": ((0x20, "Priority", "priority"), (0x08, "Padded", "padded"), (0x04, "End Headers", "eh"),
                          (0x01, "End Stream", "end_stream")),
              "SETTINGS": ((0x01, "ACK", "ack"),), "PING": ((0x01, "ACK", "ack"),),
              "PUSH_PROMISE": ((0x08, "Padded", "padded"), (0x04, "End Headers", "eh")),
              "CONTINUATION": ((0x08, "Padded", "padded"), (0x04, "End Headers", "eh"))}  # (tshark reads Padded on CONTINUATION too)
# SETTINGS identifiers as tshark words them: (the entry's and the identifier's word, the value's)
_SETTING_WORDS = {1: ("Header table size", "Header table size"), 2: ("Enable PUSH", "Enable PUSH"),
                  3: ("Max concurrent streams", "Max concurrent streams"), 4: ("Initial Windows size", "Initial Windows Size"),
                  5: ("Max frame size", "Max frame size"), 6: ("Max header list size", "Max header list size"),
                  8: ("Extended CONNECT", "Extended CONNECT")}  # (tshark 4.0 knows no other: "Unknown (9)", "Unknown Settings")


_LABEL_MAX = 239  # characters of a tree line tshark writes (ITEM_LABEL_LENGTH, 240 with its NUL)


def _field_label(word: str, v: str) -> str:
    """A string field's line as Wireshark writes it, "[truncated]" after its name when cut."""
    s = f"{word}: {v}"
    return s if len(s) <= _LABEL_MAX else f"{word} [truncated]: {v}"[: _LABEL_MAX - 1]  # (one shorter, as tshark's)


def frame_group(analysis: Analysis, fr: Frame, done: set) -> list[Node]:
    """Each HTTP/2 frame is a "HyperText Transfer Protocol 2" node of its own, as Wireshark's;
    before the client's first frame of a connection, the connection preface's (``Stream:
    Magic``): the nodes to put before the frame's (``done``: the connections whose preface this
    packet's tree has)."""
    from wirefall.analyzer.detail import Node, frames_on_packet

    if fr.direction != 0 or fr.connection in done or fr.first_packet not in first_client_packets(analysis):
        return []

    # (the connection's first client frame begins on that packet: the first of them there)
    first = next((x for x in frames_on_packet(analysis, fr.first_packet) if x.connection == fr.connection and x.direction == 0
                  and x.protocol in ("h2", "h2c")), None)
    if first is not fr:
        return []
    done.add(fr.connection)
    g = Node("HyperText Transfer Protocol 2")
    m = g.add("Stream: Magic")
    m.add("Magic: PRI * HTTP/2.0\\r\\n\\r\\nSM\\r\\n\\r\\n", abbrev="http2.magic", value="PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
    return [g]


def frame_node(node: Node, fr: Frame) -> Node:
    """An HTTP/2 frame as Wireshark's tree shows it (``http2.*``): ``Stream: HEADERS, Stream ID:
    1, Length 437, GET /``, the frame header with its flag bits, the type's fields, each
    header; wirefall's own facts (direction, window, header bytes) in a node of their own."""
    from wirefall.analyzer.detail import bit_node, frame_facts_node

    t = type_code(fr)
    name = type_text(fr)
    what = ""
    if fr.headers:  # (the request's method and path, the response's status and phrase: tshark's Info words)
        m, p, st = header(fr.headers, ":method"), header(fr.headers, ":path"), header(fr.headers, ":status")
        what = f"{m} {p or ''}".rstrip() if m else status_text(st) if st else ""
    title = f"Stream: {name if fr.type in TYPES else 'Unknown'}, Stream ID: {fr.stream_id}, Length {fr.length}"
    if what:
        title += f", {what}"
    elif fr.type == "DATA" and not fr.flags & 0x1:
        title += " (partial entity body)"
    node.label = title
    fields = fr.fields or {}

    node.add(f"Length: {fr.length}", abbrev="http2.length", value=str(fr.length))
    node.add(f"Type: {fr.type if fr.type in TYPES else 'Unknown'} ({t if t is not None else '?'})", abbrev="http2.type",
             value=str(t) if t is not None else fr.type)
    defs = _FLAG_BITS.get(fr.type, ())
    set_words = "".join(f", {w}" for b, w, _ in defs if fr.flags & b)
    fl = node.add(f"Flags: 0x{fr.flags:02x}{set_words}", abbrev="http2.flags", value=f"0x{fr.flags:02x}")
    unused = 0xFB if fr.type == "CONTINUATION" else 0xFF & ~sum(b for b, _, _ in defs)  # (tshark's CONTINUATION: Padded inside its unused bits)
    bit_node(fl, fr.flags, unused, 8, "Unused", f"0x{fr.flags & unused:02x}", abbrev="http2.flags.unused")
    for b, w, ab in defs:
        bit_node(fl, fr.flags, b, 8, w, "True" if fr.flags & b else "False", abbrev=f"http2.flags.{ab}")
    _reserved_and(node, fr.stream_id or 0, "Stream Identifier", "http2.r", "http2.streamid")
    skip: set[str] = set()
    if fr.type in ("DATA", "HEADERS", "PUSH_PROMISE", "CONTINUATION") and not fr.flags & 0x08:
        node.add("[Pad Length: 0]", abbrev="http2.pad_length", value="0")
    if fr.type == "PRIORITY" or fr.type == "HEADERS" and fr.flags & 0x20:
        _priority_nodes(node, fields, skip)
    if fr.type == "PUSH_PROMISE" and isinstance(fields.get("promised_stream_id"), int):
        _reserved_and(node, fields["promised_stream_id"], "Promised-Stream-ID", "http2.push_promise.r", "http2.push_promise.promised_stream_id")
        skip.add("promised_stream_id")
    if fr.type == "SETTINGS":
        _settings_nodes(node, fields, skip)
    if fr.type == "WINDOW_UPDATE" and isinstance(fields.get("increment"), int):
        _reserved_and(node, fields["increment"], "Window Size Increment", "http2.window_update.r", "http2.window_update.window_size_increment")
        skip.add("increment")
    if fr.type == "GOAWAY" and isinstance(fields.get("last_stream_id"), int):
        _reserved_and(node, fields["last_stream_id"], "Last-Stream-ID", "http2.goaway.r", "http2.goaway.last_stream_id")
        skip.add("last_stream_id")
    if fr.type in ("RST_STREAM", "GOAWAY") and isinstance(fields.get("error_code"), int):
        code = fields["error_code"]
        node.add(f"Error: {fields.get('error') or 'Unknown'} ({code})",
                 abbrev="http2.rst_stream.error" if fr.type == "RST_STREAM" else "http2.goaway.error", value=str(code))
        skip.update(("error_code", "error"))
    if fr.type == "GOAWAY" and "debug_data" in fields:
        _debug_data_node(node, fields, skip)
    if fr.headers:
        # (the block's bytes, each header's representation and index, [Header Length] and
        # [Header Count] — which count a table size update too — come with the frame's bytes:
        # frame_bytes_node)
        for k, v in fr.headers:
            _header_node(node, k, v)
        uri = _full_uri(fr.headers)
        if uri is not None:
            node.add("[" + _field_label("Full request URI", uri) + "]", abbrev="http2.request.full_uri", value=uri)
    if fr.type not in TYPES and "unknown_type" in fields:
        skip.add("unknown_type")  # (the Type line says it)
    if fr.error:
        node.add(f"[Error: {fr.error}]")
    node.children.append(frame_facts_node(fr, name, fields, skip))
    return node


# the header names Wireshark gives a field of their own (packet-http2.c register_static_headers:
# RFC 7541 Appendix A's), each ``http2.headers.<name>``; the numeric ones read as numbers (bits)
_NAMED_HEADERS = frozenset((
    ":authority", ":status", ":path", ":method", ":scheme", "accept", "accept-charset", "accept-encoding",
    "accept-language", "accept-ranges", "access-control-allow-origin", "age", "allow", "authorization",
    "cache-control", "content-disposition", "content-encoding", "content-language", "content-length",
    "content-location", "content-range", "content-type", "cookie", "date", "etag", "expect", "expires", "from",
    "if-match", "if-modified-since", "if-none-match", "if-range", "if-unmodified-since", "last-modified", "link",
    "location", "max-forwards", "proxy-authenticate", "proxy-authorization", "range", "referer", "refresh",
    "retry-after", "server", "set-cookie", "strict-transport-security", "user-agent", "vary", "via",
    "www-authenticate"))
_NUMERIC_HEADERS = {":status": 32, "age": 64, "content-length": 64, "max-forwards": 64}  # (ws_strtou32 / ws_strtou64)


def _header_node(node: Node, k: str, v: str) -> Node:
    """A header as Wireshark's tree shows it: ``Header: name: value`` with its name and value
    and their lengths (bytes), its own field when the name is one of the static table's, and
    the value with its %-escapes undone (``[Unescaped: …]``, as glib's g_uri_unescape_string:
    none when an escape is bad)."""
    # (a line is cut at Wireshark's label length, ITEM_LABEL_LENGTH; the field's value is whole)
    h = node.add(f"Header: {k}: {status_text(v) if k == ':status' else v}"[:_LABEL_MAX], abbrev="http2.header")
    h.add(f"Name Length: {len(k.encode('utf-8', 'surrogateescape'))}", abbrev="http2.header.name.length")
    h.add(_field_label("Name", k), abbrev="http2.header.name", value=k)
    h.add(f"Value Length: {len(v.encode('utf-8', 'surrogateescape'))}", abbrev="http2.header.value.length")
    h.add(_field_label("Value", v), abbrev="http2.header.value", value=v)
    if k in _NAMED_HEADERS:
        ab = "http2.headers." + k.lstrip(":").replace("-", "_")
        bits = _NUMERIC_HEADERS.get(k)
        if bits is None:
            h.add(_field_label(k, v), abbrev=ab, value=v)
        elif v.isascii() and v.isdigit() and int(v) < 1 << bits:
            h.add(f"{k}: {int(v)}", abbrev=ab, value=str(int(v)))
    u = _unescaped(v)
    if u is not None:
        h.add("[" + _field_label("Unescaped", u) + "]", abbrev="http2.header.unescaped", value=u)
    return h


def _unescaped(v: str) -> str | None:
    """``v`` with its %XX escapes decoded, as glib's g_uri_unescape_string (what tshark calls):
    None for a '%' not followed by two hex digits or an escaped NUL."""
    if "%" not in v:
        return v
    b = v.encode("utf-8", "surrogateescape")
    out = bytearray()
    i, n = 0, len(b)
    while i < n:
        c = b[i]
        if c == 0x25:
            h = b[i + 1 : i + 3]
            if len(h) < 2 or not all(x in b"0123456789abcdefABCDEF" for x in h) or h == b"00":
                return None
            out.append(int(h, 16))
            i += 3
            continue
        out.append(c)
        i += 1
    return out.decode("utf-8", "replace")


def _full_uri(headers) -> str | None:
    """tshark's ``[Full request URI]`` of a header list that names an authority: the
    authority of a CONNECT, else scheme://authority path ("(null)" for one missing, as C's
    printf writes it)."""
    auth = header(headers, ":authority")
    if auth is None:
        return None
    m = header(headers, ":method")
    if m == "CONNECT":
        return auth
    sch, path = header(headers, ":scheme"), header(headers, ":path")
    return f"{sch if sch is not None else '(null)'}://{auth}{path if path is not None else '(null)'}"


# (a CONTINUATION's fragment, which tshark shows as text, and its representations, which read on
# from the fragments before it — bytes of other packets — are left out)
_BLOCK_FRAMES = {"HEADERS": "Header Block Fragment", "PUSH_PROMISE": "Header Block Fragment"}


def frame_bytes_node(node: Node, fr: Frame, raw: bytes) -> None:
    """What only the frame's bytes (``raw``: its 9-byte header and payload) tell, written into
    its node: the header block fragment (the first 36 bytes in hex, as Wireshark's bytes
    fields), ``[Header Length]`` and ``[Header Count]``, a table size update where it stands
    and each header's ``Representation`` and ``Index`` (RFC 7541 s6).  Only for a block's first
    fragment (HEADERS, PUSH_PROMISE): a CONTINUATION's headers keep their other lines."""
    from wirefall.analyzer.detail import Node as _Node
    from wirefall.dissectors.http2 import HPACK_REPR_WORDS, HpackRepr, hpack_representations

    word = _BLOCK_FRAMES.get(fr.type)
    if word is None or len(raw) != 9 + fr.length:
        return
    p = raw[9:]
    a, b = 0, len(p)
    if fr.flags & 0x08:  # padded: the pad length, and the padding at the end
        if not p:
            return
        a, b = 1, len(p) - p[0]
    if fr.type == "HEADERS" and fr.flags & 0x20:
        a += 5
    elif fr.type == "PUSH_PROMISE":
        a += 4
    if b < a:
        return
    block = p[a:b]
    kids = node.children
    at = next((i for i, c in enumerate(kids) if c.abbrev == "http2.header"), None)
    if at is None:  # (no header decoded: after the frame's own fields, before wirefall's node and the URI)
        at = next((i for i, c in enumerate(kids) if c.label.startswith(("[wirefall: ", "[Full request URI", "[Error: "))), len(kids))
    hexed = block[:36].hex() + ("…" if len(block) > 36 else "")
    lines = [_Node(f"{word}: {hexed}" if block else f"{word}: <MISSING>", [], -1, -1, "http2.headers")]
    # (a block's first fragment: the representations whole in it are the headers that ended in
    # this frame, as the dissector gives them; one continued reads on from an earlier frame's)
    reps = hpack_representations(block)
    heads = [i for i, c in enumerate(kids) if c.abbrev == "http2.header"]
    fields = [r for r in reps if r[0] != HpackRepr.TABLE_SIZE_UPDATE]
    if reps and len(fields) == len(heads) == len(fr.headers or ()):
        size = sum(8 + len(k.encode("utf-8", "surrogateescape")) + len(v.encode("utf-8", "surrogateescape"))
                   for k, v in fr.headers or ())
        lines.append(_Node(f"[Header Length: {size}]", [], -1, -1, "http2.header.length"))
        lines.append(_Node(f"[Header Count: {len(reps)}]", [], -1, -1, "http2.header.count"))
        for (kind, v, _s, _e), i in zip(fields, heads):
            h = kids[i]
            h.add(f"Representation: {HPACK_REPR_WORDS[kind]}", abbrev="http2.header.repr")
            if kind in (HpackRepr.INDEXED, HpackRepr.INCREMENTAL_INDEXED_NAME, HpackRepr.WITHOUT_INDEXED_NAME,
                        HpackRepr.NEVER_INDEXED_NAME):
                h.add(f"Index: {v}", abbrev="http2.header.index")
        # a table size update stands where it is in the block, among the headers
        out, j = [], 0
        for kind, v, _s, _e in reps:
            if kind == HpackRepr.TABLE_SIZE_UPDATE:
                u = _Node("Header table size update", [], -1, -1, "http2.header.table_size_update")
                u.add(f"Header table size: {v}", abbrev="http2.header.table_size")
                out.append(u)
            else:
                out.append(kids[heads[j]])
                j += 1
        if heads:
            kids[heads[0] : heads[-1] + 1] = out
        else:
            lines += out
    kids[at:at] = lines


def _reserved_and(node: Node, word: int, name: str, abbrev_r: str, abbrev: str) -> None:
    """A 32-bit word as tshark draws it: its reserved top bit, then the 31-bit field ``name``."""
    from wirefall.analyzer.detail import bit_node

    bit_node(node, word, 0x80000000, 32, "Reserved", "0x0", abbrev=abbrev_r)
    bit_node(node, word, 0x7FFFFFFF, 32, name, str(word & 0x7FFFFFFF), abbrev=abbrev)


def _priority_nodes(node: Node, fields: Mapping[str, Any], skip: set[str]) -> None:
    """Exclusive, stream dependency and weight, with tshark's names: ``http2.headers.weight`` is
    the byte sent, ``weight_real`` one more (the dissector keeps the latter as ``weight``)."""
    ex, dep, w = fields.get("exclusive"), fields.get("depends_on"), fields.get("weight")
    if ex is None or not isinstance(dep, int) or not isinstance(w, int):
        return
    from wirefall.analyzer.detail import bit_node

    word = (0x80000000 if ex else 0) | dep
    bit_node(node, word, 0x80000000, 32, "Exclusive", "True" if ex else "False", abbrev="http2.exclusive")
    bit_node(node, word, 0x7FFFFFFF, 32, "Stream Dependency", str(dep), abbrev="http2.stream_dependency")
    node.add(f"Weight: {w - 1}", abbrev="http2.headers.weight", value=str(w - 1))
    node.add(f"[Weight real: {w}]", abbrev="http2.headers.weight_real", value=str(w))
    skip.update(("exclusive", "depends_on", "weight"))


_SETTING_FIELDS = {1: "header_table_size", 2: "enable_push", 3: "max_concurrent_streams", 4: "initial_window_size",
                   5: "max_frame_size", 6: "max_header_list_size", 8: "extended_connect"}  # tshark 4.0's http2.settings.*


def _settings_nodes(node: Node, fields: Mapping[str, Any], skip: set[str]) -> None:
    """Each setting in wire order (a repeated identifier each time), as tshark lists them."""
    items = fields.get("settings_list")
    if not isinstance(items, list):
        return
    for ident, value in items:
        name, vname = _SETTING_WORDS.get(ident, ("Unknown", "Unknown Settings"))
        entry = name if ident in _SETTING_WORDS else f"Unknown ({ident})"
        sn = node.add(f"Settings - {entry} : {value}", abbrev="http2.settings")
        sn.add(f"Settings Identifier: {name} ({ident})", abbrev="http2.settings.id", value=str(ident))
        sn.add(f"{vname}: {value}", abbrev=f"http2.settings.{_SETTING_FIELDS.get(ident, 'unknown')}", value=str(value))
    skip.update(("settings", "settings_list"))


def _debug_data_node(node: Node, fields: Mapping[str, Any], skip: set[str]) -> None:
    """GOAWAY debug data: its text (bytes that are not UTF-8 as ``\\xNN``), with its length and,
    when the dissector kept only its start, how much of it is shown."""
    text = fields.get("debug_data")
    total = fields.get("debug_data_length")
    shown = text if isinstance(text, str) and len(text) <= 400 else f"{str(text)[:400]}…"
    cut = " (truncated)" if fields.get("debug_data_truncated") else ""
    size = f" [{total} bytes{cut}]" if isinstance(total, int) else ""
    node.add(f"Additional Debug Data: {shown}{size}", abbrev="http2.goaway.addata")
    skip.update(("debug_data", "debug_data_length", "debug_data_truncated", "debug_data_escaped"))


_HEADER_SPANS = {"http2.length": (0, 3), "http2.type": (3, 4), "http2.flags": (4, 5), "http2.r": (5, 9), "http2.streamid": (5, 9)}


def header_ranges(fn: Node, source: int, start: int, end: int) -> None:
    """Byte ranges of the HTTP/2 frame header fields (and the flag bits'), the frame starting at ``start``."""
    if end - start < 9:
        return
    for c in fn.children:
        if c.abbrev in _HEADER_SPANS:
            a, b = _HEADER_SPANS[c.abbrev]
            c.source, c.start, c.end = source, start + a, start + b
            if c.abbrev == "http2.flags":
                for x in c.children:
                    x.source, x.start, x.end = source, start + 4, start + 5
