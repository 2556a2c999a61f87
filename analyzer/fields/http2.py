"""``http2``: HTTP/2 frames (over TLS, or cleartext h2c), one per frame on the packet where
the frame completes, as tshark shows them; decoded header fields on the HEADERS,
PUSH_PROMISE or CONTINUATION frame where their encoding ended."""
from __future__ import annotations

import re
from bisect import bisect_right
from functools import lru_cache

from wirefall.dissectors.http2 import FRAME_NAMES, SETTINGS, SETTINGS_NAMES, H2Connection

from ._util import fields_value, frame_field as F, frames_present, header_family, header_values, label
from .http import messages_ending_at
from .types import BOOL, BYTES, NONE, STRING, UINT, Field, Protocol

TYPE_CODES = {v: k for k, v in FRAME_NAMES.items()}


def _is_h2(fr) -> bool:
    return fr.protocol in ("h2", "h2c")


def _type(fr, ctx):
    c = TYPE_CODES.get(fr.type)
    if c is None:
        m = re.fullmatch(r"UNKNOWN_0x([0-9a-fA-F]+)", fr.type)
        c = int(m.group(1), 16) if m else None
    return [c] if c is not None else []


def _has_priority(fr) -> bool:
    """A frame with RFC 7540 priority fields (exclusive, stream dependency, weight), where tshark
    shows them: a PRIORITY frame, a HEADERS frame with the PRIORITY flag."""
    return fr.type == "PRIORITY" or fr.type == "HEADERS" and bool(fr.flags & 0x20)


def _priority(key: str, adjust: int = 0):
    """``fields[key]`` (+ ``adjust``) of a frame with priority fields."""
    def fn(fr, ctx):
        v = (fr.fields or {}).get(key) if _has_priority(fr) else None
        return [int(v) + adjust] if isinstance(v, (int, bool)) else []
    return fn


def _weight(real: bool):
    """The weight as sent (0..255, ``http2.headers.weight``) or plus one (``weight_real``): the
    dissector keeps the latter."""
    return _priority("weight", 0 if real else -1)


def _flag(name: str, bit: int, types: frozenset[str], desc: str) -> Field:
    """``http2.flags.<name>``: one flag bit (0/1) on the frame types that define it, as tshark
    shows it there only (``http2.flags.end_stream == 0``: a DATA or HEADERS frame without it)."""
    return F(f"http2.flags.{name}", BOOL, _is_h2, lambda fr, ctx: [1 if fr.flags & bit else 0] if fr.type in types else [], desc)


def _of_type(ftype: str):
    """HTTP/2 frames of one type (the frames a type's own fields are read from)."""
    return lambda fr: _is_h2(fr) and fr.type == ftype


_SETTING_IDS = {v: k for k, v in SETTINGS_NAMES.items()}


def _setting_id(name: str) -> int | None:
    i = _SETTING_IDS.get(name)
    if i is None and name.startswith("0x"):
        try:
            i = int(name, 16)
        except ValueError:
            return None
    return i


def _settings(fr, ctx) -> list[tuple[int, int]]:
    """A SETTINGS frame's (identifier, value) pairs in wire order, a repeated identifier each
    time (``fields["settings_list"]``; from the dict of last values in an analysis made before
    the dissector kept the list)."""
    fl = (fr.fields or {}) if fr.type == "SETTINGS" else {}
    items = fl.get("settings_list")
    if isinstance(items, list):
        return [(int(i), int(v)) for i, v in items]
    st = fl.get("settings")
    if not isinstance(st, dict):
        return []
    return [(i, v) for k, v in st.items() if (i := _setting_id(k)) is not None]


MAX_UPGRADE_SETTINGS = 4096  # characters of an HTTP2-Settings header decoded (682 settings); a longer one gives none


@lru_cache(maxsize=64)
def _decode_upgrade_settings(text: str) -> tuple[tuple[int, int], ...]:
    """The (identifier, value) pairs of an HTTP2-Settings header value (RFC 7540 section 3.2.1:
    a SETTINGS payload, base64url without padding), parsed by the HTTP/2 dissector itself: the
    payload goes to a fresh connection as one SETTINGS frame (a trailing partial setting is
    left out, as it leaves one out of a frame).  Malformed base64: none."""
    import base64  # (only an h2c upgrade needs it)

    text = text.strip()
    if len(text) > MAX_UPGRADE_SETTINGS:
        return ()
    try:
        payload = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except ValueError:  # (binascii.Error, and non-ASCII text)
        return ()
    head = len(payload).to_bytes(3, "big") + bytes((SETTINGS, 0)) + bytes(4)
    frames = H2Connection().receive(1, head + payload, 0)  # (direction 1: no preface expected)
    items = (frames[0].fields or {}).get("settings_list") if frames else None
    return tuple((int(i), int(v)) for i, v in items or ())


def _upgrade_settings(fr) -> tuple[tuple[int, int], ...]:
    """The settings an HTTP/1 message's HTTP2-Settings headers carry (h2c upgrade), which tshark
    decodes under the HTTP/1.1 request, with http2.settings.* fields."""
    out: tuple[tuple[int, int], ...] = ()
    for v in header_values(fr.headers, "http2-settings"):
        out += _decode_upgrade_settings(v)
    return out


def _settings_field(name: str, values, desc: str, type_: str = UINT, **kw) -> Field:
    """A field of settings (``values(pairs)``: its values of a list of (identifier, value)): on
    each SETTINGS frame completing on the packet, and on each HTTP/1 message ending there whose
    HTTP2-Settings header carries settings (tshark shows them there too: http2.settings.* on the
    Upgrade request's packet, which is no ``http2`` packet)."""
    def get(pv) -> list:
        out: list = []
        for fr in messages_ending_at(pv.ctx, pv.n):  # (the request's bytes come before any HTTP/2 frame)
            out.extend(values(_upgrade_settings(fr)))
        for fr in pv.frames:
            if _is_h2(fr):
                out.extend(values(_settings(fr, None)))
        return out

    def frame(fr) -> list:
        if _is_h2(fr):
            return list(values(_settings(fr, None)))
        if fr.protocol.startswith("http/") and fr.type in ("REQUEST", "RESPONSE"):
            return list(values(_upgrade_settings(fr)))
        return []

    return Field(name, type_, get, desc, frame=frame, **kw)


def _setting(ident: int):
    return lambda pairs: [v for i, v in pairs if i == ident]


# the identifiers tshark 4.0 names (http2.settings.<name>); any other is http2.settings.unknown
_TSHARK_SETTINGS = frozenset({1, 2, 3, 4, 5, 6, 8})


def _ping(ack: bool):
    """PING opaque data: ``http2.ping`` on a PING, ``http2.pong`` on a PING ACK (tshark's)."""
    def fn(fr, ctx):
        h = (fr.fields or {}).get("opaque") if fr.type == "PING" and bool(fr.flags & 0x1) == ack else None
        return [bytes.fromhex(h)] if isinstance(h, str) else []
    return fn


_PAD_TYPES = frozenset({"DATA", "HEADERS", "PUSH_PROMISE", "CONTINUATION"})


def _pad_length(padded_only: bool):
    """``http2.pad_length`` (tshark adds it, generated, to every DATA, HEADERS, PUSH_PROMISE and
    CONTINUATION frame: 0 without the PADDED flag) or ``http2.padding`` (the Pad Length byte,
    PADDED frames only).  tshark reads a Pad Length on a CONTINUATION with the PADDED bit too,
    which RFC 9113 does not define: that byte is read again from the stream."""
    def fn(fr, ctx):
        if fr.type not in _PAD_TYPES:
            return []
        if not fr.flags & 0x8:
            return [] if padded_only else [0]
        if fr.type == "CONTINUATION":
            if ctx is None or fr.offset < 0 or fr.length < 1:
                return []
            b = _plain(ctx, fr, fr.offset + 9, fr.offset + 10)
            return [b[0]] if b else []
        v = (fr.fields or {}).get("pad_length")
        return [v] if isinstance(v, int) else []
    return fn


def _addata(fr, ctx):
    """GOAWAY additional debug data, all of it: the bytes the dissector kept when it kept them
    all and they were UTF-8, else read again from the stream."""
    fl = fr.fields or {}
    if fr.type != "GOAWAY" or fr.length <= 8:
        return []
    text = fl.get("debug_data")
    if isinstance(text, str) and "debug_data_length" in fl and not fl.get("debug_data_truncated") and not fl.get("debug_data_escaped"):
        b = text.encode("utf-8")
        if len(b) == fr.length - 8:
            return [b]
    if ctx is None or fr.offset < 0:
        return []
    b = _plain(ctx, fr, fr.offset + 9 + 8, fr.offset + 9 + fr.length)
    return [b] if b is not None else []


def _plain(ctx, fr, a: int, b: int) -> bytes | None:
    """Bytes [a, b) of the frame's direction of the HTTP/2 byte stream: the TCP stream's for
    h2c; over TLS the plaintext stream's, its records decrypted again (the last one kept)."""
    from wirefall.analyzer.detail import _redecrypt, _stream_bytes

    an, cid, d = ctx.an, fr.connection, fr.direction
    if not 0 <= cid < len(an.connections):
        return None
    if an.connections[cid].tls is None:
        raw = _stream_bytes(an, ctx.source, cid, d, a, b, fr.first_packet or fr.packet, fr.packet)
        return raw if isinstance(raw, bytes) else None
    tab = (getattr(an, "tls_records", None) or {}).get((cid, d))
    if tab is None:
        return None
    key = ("h2_rows", cid, d)
    rows = ctx.cache.get(key)
    if rows is None or rows[0] != len(tab):  # the application-data rows, by plaintext offset
        k = len(tab)
        rows = ctx.cache[key] = (k, *zip(*[(tab.pt_offset[i], i) for i in range(k) if tab.pt_offset[i] >= 0 and tab.pt_length[i]]))
    if len(rows) < 3:
        return None
    starts, idx = rows[1], rows[2]
    out = bytearray()
    j = bisect_right(starts, a) - 1
    while len(out) < b - a and 0 <= j < len(starts) and starts[j] <= a + len(out):
        last = ctx.cache.get("h2_record")
        if last is not None and last[0] == (cid, d, idx[j]):
            pt = last[1]
        else:
            pt = _redecrypt(an, ctx.source, cid, d, tab, idx[j])
            if isinstance(pt, str):
                return None
            ctx.cache["h2_record"] = ((cid, d, idx[j]), pt)
        pos = a + len(out) - starts[j]
        out += pt[pos : pos + b - a - len(out)]
        j += 1
    return bytes(out) if len(out) == b - a else None


def _payload(fr, ctx) -> bytes | None:
    """A DATA frame's payload without its padding, read again from the stream."""
    if fr.offset < 0:
        return None
    padded = bool(fr.flags & 0x8)
    pad = (fr.fields or {}).get("pad_length", 0) if padded else 0
    a = fr.offset + 9 + padded
    return _plain(ctx, fr, a, max(a, fr.offset + 9 + fr.length - pad))


def _stream_frames(ctx, fr) -> list:
    """The DATA and HEADERS frames of ``fr``'s stream and direction, in order (indexed once)."""
    idx = ctx.cache.get("h2_streams")
    if idx is None:
        idx = ctx.cache["h2_streams"] = dict[tuple, list]()
        for f in ctx.frames:
            if _is_h2(f) and f.type in _DATA_HEADERS:
                idx.setdefault((f.connection, f.direction, f.stream_id), []).append(f)
    return idx.get((fr.connection, fr.direction, fr.stream_id), [])


def _data(fr, ctx):
    """As tshark 4.0 shows ``http2.data.data``: each DATA frame's payload, except where
    END_STREAM ends the body (on its last DATA frame, or a trailing HEADERS after one): there
    the whole body, its DATA frames joined, and decoded if its Content-Encoding is one tshark
    decodes (gzip, deflate, br)."""
    if ctx is None:
        return []
    parts = [fr]
    if fr.flags & 0x1:
        frames = _stream_frames(ctx, fr)
        frames = frames[: frames.index(fr) + 1] if fr in frames else frames
        parts = [f for f in frames if f.type == "DATA"]
        if not parts:
            return []
    got = [_payload(f, ctx) for f in parts]
    if any(g is None for g in got):
        return []
    body = b"".join(got)  # type: ignore[arg-type]
    if fr.flags & 0x1:
        ce = [v for f in frames if f.type == "HEADERS" for v in header_values(f.headers, "content-encoding")]
        if ce and ce[-1].strip().lower() in ("gzip", "deflate", "br"):
            from wirefall.analyzer.objects import decode_body

            out: list[bytes] = []
            if decode_body(ce[-1], [body], out.append).error is None:
                body = b"".join(out)
    return [body]


_DATA_HEADERS = frozenset({"DATA", "HEADERS"})
_PADDED = frozenset({"DATA", "HEADERS", "PUSH_PROMISE", "CONTINUATION"})  # (tshark shows the bit on CONTINUATION too)


HEADERS = header_family("http2", _is_h2)


def _full_uri(fr, ctx) -> list[str]:
    """tshark's generated Full request URI of a header block with an ``:authority`` (a request,
    or a PUSH_PROMISE's promised one): ``scheme://authority path`` (glib's "(null)" for a missing
    part, as tshark prints it), the authority alone for CONNECT; the last of a repeated pseudo
    header counts, as tshark's loop keeps it."""
    if not fr.headers:
        return []
    last: dict[str, str] = {}
    for k, v in fr.headers:
        if k in _URI_PARTS:
            last[k] = v
    a = last.get(":authority")
    if a is None:
        return []
    if last.get(":method") == "CONNECT":
        return [a]
    return [f"{last.get(':scheme', '(null)')}://{a}{last.get(':path', '(null)')}"]


_URI_PARTS = frozenset({":authority", ":method", ":scheme", ":path"})
header_field = HEADERS.field


PROTOCOL = Protocol("http2", "HTTP/2", frames_present("http2", _is_h2, "an HTTP/2 frame"), [
    F("http2.streamid", UINT, _is_h2, lambda fr, ctx: [fr.stream_id] if fr.stream_id is not None else [], "stream identifier", size=4),
    F("http2.type", UINT, _is_h2, _type, "frame type (0 DATA, 1 HEADERS, 3 RST_STREAM, 4 SETTINGS, …; names work too: http2.type == HEADERS)", size=1),
    F("http2.flags", UINT, _is_h2, lambda fr, ctx: [fr.flags], "frame flags (http2.flags & 0x01: END_STREAM)", size=1),
    F("http2.length", UINT, _is_h2, lambda fr, ctx: [fr.length], "frame payload length", size=3),
    _flag("end_stream", 0x1, _DATA_HEADERS, "END_STREAM (DATA, HEADERS)"),
    _flag("eh", 0x4, frozenset({"HEADERS", "PUSH_PROMISE", "CONTINUATION"}), "END_HEADERS (HEADERS, PUSH_PROMISE, CONTINUATION)"),
    _flag("padded", 0x8, _PADDED, "PADDED (DATA, HEADERS, PUSH_PROMISE; and CONTINUATION, as tshark shows it)"),
    _flag("priority", 0x20, frozenset({"HEADERS"}), "PRIORITY (HEADERS)"),
    _flag("ack.settings", 0x1, frozenset({"SETTINGS"}), "ACK (SETTINGS)"),
    _flag("ack.ping", 0x1, frozenset({"PING"}), "ACK (PING)"),
    F("http2.rst_stream.error", UINT, _of_type("RST_STREAM"), fields_value("error_code"),
      "RST_STREAM error code (names work too: http2.rst_stream.error == CANCEL)", size=4),
    F("http2.goaway.error", UINT, _of_type("GOAWAY"), fields_value("error_code"), "GOAWAY error code (names work too)", size=4),
    F("http2.goaway.last_stream_id", UINT, _of_type("GOAWAY"), fields_value("last_stream_id"), "GOAWAY last stream identifier", size=4),
    F("http2.window_update.window_size_increment", UINT, _of_type("WINDOW_UPDATE"), fields_value("increment"), "WINDOW_UPDATE increment", size=4),
    F("http2.push_promise.promised_stream_id", UINT, _of_type("PUSH_PROMISE"), fields_value("promised_stream_id"), "PUSH_PROMISE promised stream", size=4),
    F("http2.data.data", BYTES, lambda fr: _is_h2(fr) and (fr.type == "DATA" or fr.type == "HEADERS" and bool(fr.flags & 0x1)), _data,
      "DATA frame payload (without padding); where END_STREAM ends the body, the whole body (decoded: gzip, deflate, br)"),
    F("http2.goaway.addata", BYTES, _of_type("GOAWAY"), _addata, "GOAWAY additional debug data (all of it)"),
    F("http2.ping", BYTES, _is_h2, _ping(False), "PING opaque data (8 bytes; not on a PING ACK: http2.pong)"),
    F("http2.pong", BYTES, _is_h2, _ping(True), "PING ACK opaque data (8 bytes)"),
    F("http2.pad_length", UINT, _is_h2, _pad_length(False),
      "pad length of DATA, HEADERS, PUSH_PROMISE, CONTINUATION frames (0 without the PADDED flag, as tshark shows it)", size=2),
    F("http2.padding", UINT, _is_h2, _pad_length(True), "the Pad Length byte of a frame with the PADDED flag", size=1),
    F("http2.exclusive", BOOL, _is_h2, _priority("exclusive"), "exclusive flag of the stream dependency (PRIORITY; HEADERS with PRIORITY)"),
    F("http2.stream_dependency", UINT, _is_h2, _priority("depends_on"), "stream dependency (PRIORITY; HEADERS with PRIORITY)", size=4),
    # one item per setting, as tshark adds one (count(http2.settings) counts a SETTINGS frame's settings)
    # (and on an HTTP/1.1 request's packet, from its HTTP2-Settings header: _settings_field)
    _settings_field("http2.settings", lambda p: [True] * len(p), "a setting of a SETTINGS frame or of an h2c Upgrade request's "
                    "HTTP2-Settings header (one per setting)", NONE,
                    note="an HTTP2-Settings header longer than 4096 characters, or not base64url, gives no settings (tshark "
                         "decodes any length and skips characters that are not base64); a trailing partial setting is left "
                         "out (tshark shows its identifier and marks the packet malformed)"),
    _settings_field("http2.settings.id", lambda p: [i for i, _ in p],
                    "setting identifier (1 HEADER_TABLE_SIZE … 6 MAX_HEADER_LIST_SIZE, 8 ENABLE_CONNECT_PROTOCOL), each in wire order",
                    note="a setting given twice in one frame is there twice, with each of its values, as tshark shows it", size=2),
    *[_settings_field(f"http2.settings.{n}", _setting(i), f"SETTINGS_{n.upper()}", size=4) for n, i in (
        ("header_table_size", 1), ("enable_push", 2), ("max_concurrent_streams", 3), ("initial_window_size", 4),
        ("max_frame_size", 5), ("max_header_list_size", 6), ("extended_connect", 8))],
    _settings_field("http2.settings.unknown", lambda p: [v for i, v in p if i not in _TSHARK_SETTINGS],
                    "value of a setting tshark 4.0 does not name (9 NO_RFC7540_PRIORITIES, unknown identifiers)", size=4),
    *HEADERS.generic(),
    F("http2.header.length", UINT, _is_h2, lambda fr, ctx: [sum(8 + len(k.encode()) + len(v.encode()) for k, v in fr.headers)]
      if fr.headers else [], "decoded size of a header block: 8 bytes per header field plus its name and value "
      "(tshark's [Header Length], on the frame that ends the block)", size=4),
    F("http2.request.full_uri", STRING, _is_h2, _full_uri, "[Full request URI] of a header block with :authority: "
      "scheme://authority path (the authority alone for CONNECT)"),
    F("http2.magic", STRING, _is_h2, lambda fr, ctx: [], "the client's connection preface",
      unsupported="http2.magic is not a filter field in wirefall yet: its HTTP/2 reader skips the connection preface "
                  "without keeping the packet it ends on"),
    label("http2.stream", _is_h2, lambda fr, ctx: True, "an HTTP/2 frame (tshark's Stream item, one per frame)",
          note="tshark also adds one for the client's connection preface (count(http2.stream) is one more on that packet); "
               "wirefall does not keep the preface's packet"),
    F("http2.headers.weight", UINT, _is_h2, _weight(False), "priority weight as sent (0..255; PRIORITY; HEADERS with PRIORITY)", size=1),
    F("http2.headers.weight_real", UINT, _is_h2, _weight(True), "priority weight (1..256; PRIORITY; HEADERS with PRIORITY)", size=1),
    *HEADERS.named(),
], prefixes={"http2.headers.": header_field})
