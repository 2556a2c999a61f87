"""``tls``: TLS records (TCP) and handshake messages (TCP, and QUIC's CRYPTO frames).

Record fields come from wirefall's ``tls`` frames (one per record, on the packet that
completes it, with the inner content type once decrypted); hello fields (version, cipher
suites, server name, ALPN) are read again from the ClientHello/ServerHello bytes on demand
(only for packets that carry a hello), or taken from the connection's TLS facts for QUIC.
QUIC's transport parameters (``tls.quic.parameter.*``) are read from the ClientHello read again
and from the EncryptedExtensions, its Handshake packets decrypted again.
"""
from __future__ import annotations

from wirefall.dissectors.tls import ALERT_DESCRIPTIONS, ALERT_LEVELS, CONTENT_TYPES, HANDSHAKE_TYPES

from ._util import frame_field as F, label
from .types import BYTES, NONE, PROTO_OPAQUE, STRING, UINT, Field, Protocol

CONTENT_CODES = {v: k for k, v in CONTENT_TYPES.items()}
ALERT_LEVEL_CODES = {v: k for k, v in ALERT_LEVELS.items()}
ALERT_DESC_CODES = {v: k for k, v in ALERT_DESCRIPTIONS.items()}
HS_CODES = {v.replace("_", ""): k for k, v in HANDSHAKE_TYPES.items()}
VERSION_CODES = {"SSL 2.0": 0x0002, "SSL 3.0": 0x0300, "TLS 1.0": 0x0301, "TLS 1.1": 0x0302, "TLS 1.2": 0x0303, "TLS 1.3": 0x0304}


# why the fields of handshake messages other than the hellos are refused (an error, not a silent empty match)
_NOT_HELLO = ("wirefall's filter reads the hellos again, not the other handshake messages (Certificate, ServerKeyExchange, "
              "CertificateRequest, CertificateVerify, a decrypted TLS 1.3 EncryptedExtensions), where tshark 4.0 shows it too")


def _is_tls(fr) -> bool:
    return fr.protocol == "tls"


def _tls_present(pv) -> list:
    """tshark shows TLS where a record (or a handshake message in QUIC) ends, and also where
    its dissector had to wait for more data: see ``_waiting``."""
    if any(fr.protocol == "tls" for fr in pv.frames):
        return [True]
    return [True] if pv.n in _waiting(pv.ctx) else []


def _waiting(ctx) -> set[int]:
    """Packets without a TLS record or message ending in them on which tshark 4.0 still shows
    an (empty) TLS layer: over TCP, where a record that spans packets begins, or, if its 5-byte
    header is itself split, the packet with the header's last byte (the TLS dissector reads the
    header there and asks TCP for the rest); in QUIC, each packet whose first CRYPTO frame of a
    packet space continues that space's in-order data and extends it (the TLS dissector runs on
    it, message complete or not; a packet of shuffled CRYPTO frames, as Chromium sends its
    ClientHello, is held back until the message is whole)."""
    got = ctx.cache.get("tls_waiting")
    if got is not None:
        return got
    import heapq

    got = set()
    maps = ctx.an.maps
    crypto: dict[tuple, list] = {}
    for fr in ctx.frames:
        if fr.protocol == "tls":
            if _is_record(fr) and fr.offset >= 0 and (fr.first_packet or fr.packet) != fr.packet:
                m = maps.get((fr.connection, fr.direction))
                hdr_end = m.packet_at(fr.offset + 4) if m is not None else None
                # the header split over two packets: where it ends; else where the record begins
                got.add(hdr_end if hdr_end is not None and hdr_end != m.packet_at(fr.offset) else fr.first_packet)
        elif fr.protocol == "quic" and fr.type == "CRYPTO" and fr.fields:
            off = fr.fields.get("offset")
            if not isinstance(off, int):
                continue
            # [contiguous end, pending (offset, end) heap, last packet seen, that packet in order]
            st = crypto.setdefault((fr.connection, fr.direction, fr.fields.get("packet_type")), [0, [], 0, False])
            if st[2] != fr.packet:  # the packet's first CRYPTO frame of this space: does it continue the data?
                st[2], st[3] = fr.packet, off <= st[0]
            heapq.heappush(st[1], (off, off + fr.length))
            end = st[0]
            while st[1] and st[1][0][0] <= st[0]:
                st[0] = max(st[0], heapq.heappop(st[1])[1])
            if st[0] > end and st[3]:
                got.add(fr.packet)
    ctx.cache["tls_waiting"] = got
    return got


def _is_record(fr) -> bool:
    return fr.protocol == "tls" and not (fr.fields and "quic_epoch" in fr.fields)


def _msg_codes(fr) -> list[int]:
    out = []
    for m in (fr.fields or {}).get("messages") or ():
        c = HS_CODES.get(str(m).upper().replace("_", ""))
        if c is None and str(m).isdigit():
            c = int(m)
        if c is not None:
            out.append(c)
    return out


def _has_hs(fr) -> bool:
    return fr.protocol == "tls" and bool(_msg_codes(fr))


def _encrypted_hs(fr) -> bool:
    """A handshake record whose content was not decrypted (its messages unknown)."""
    fl = fr.fields or {}
    return _is_record(fr) and fr.type == "HANDSHAKE" and bool(fl.get("encrypted")) and not fl.get("decrypted") and not fl.get("messages")


def _hellos(fr, ctx) -> list[tuple[int, dict]]:
    """(type, parsed hello) for each ClientHello/ServerHello in the record ``fr``."""
    codes = [c for c in _msg_codes(fr) if c in (1, 2)]
    if not codes:
        return []
    key = ("tls_hello", id(fr))
    if ctx is not None and key in ctx.cache:
        return ctx.cache[key]
    out: list[tuple[int, dict]] = []
    if ctx is not None and _is_record(fr) and fr.offset >= 0 and fr.type != "SSLV2_CLIENT_HELLO":
        from wirefall.analyzer.detail import _stream_bytes
        from wirefall.dissectors.tls import parse_client_hello, parse_handshake_messages, parse_server_hello

        raw = _stream_bytes(ctx.an, ctx.source, fr.connection, fr.direction, fr.offset, fr.offset + 5 + fr.length,
                            fr.first_packet or fr.packet, fr.packet)
        if isinstance(raw, bytes) and len(raw) > 5 and raw[0] == 22:
            msgs, _ = parse_handshake_messages(raw[5:])
            for t, body in msgs:
                if t == 1:
                    out.append((1, parse_client_hello(body)))
                elif t == 2:
                    out.append((2, parse_server_hello(body)))
    want = 1 if fr.direction == 0 else 2  # (QUIC: the client's Initial CRYPTO data begins with its ClientHello, the server's with its ServerHello)
    if not out and ctx is not None and not _is_record(fr) and want in codes:
        h = _quic_hello(fr, ctx, want)
        if h is not None:
            out.append((want, h))
            codes = [c for c in codes if c != want]
    if not out or any(t not in {x for x, _ in out} for t in codes):  # QUIC, or a hello wirefall cannot read again: the connection's facts
        c = ctx.an.connections[fr.connection] if ctx is not None and 0 <= fr.connection < len(ctx.an.connections) else None
        tls = c.tls if c is not None else None
        quic = c.quic if c is not None else None
        have = {x for x, _ in out}
        for t in codes:
            if t in have:
                continue
            if t == 1:
                out.append((1, {"legacy_version": 0x0303, "sni": (tls and tls.sni) or (quic and quic.sni),
                                "alpn": list(tls.alpn_offered) if tls else [], "cipher_suites": [], "partial": True}))
            else:
                out.append((2, {"legacy_version": 0x0303, "cipher_suite": tls.cipher_suite_id if tls else None,
                                "alpn": tls.alpn if tls else None}))
    if ctx is not None:
        ctx.cache[key] = out
    return out


MAX_CRYPTO_SCAN = 8  # QUIC packets of the connection read again for one ClientHello or EncryptedExtensions


def _quic_hello(fr, ctx, want: int) -> dict | None:
    """The ClientHello (``want`` 1, the client's) or ServerHello (2, the server's) a QUIC
    connection's Initial CRYPTO frames carry in ``fr``'s direction (``_quic_message``)."""
    from wirefall.dissectors.tls import parse_client_hello, parse_server_hello

    # from the connection's first packet: after a HelloRetryRequest the second ClientHello (and
    # the real ServerHello) follow the first in the same Initial CRYPTO stream, not at offset 0
    conn = ctx.an.connections[fr.connection] if 0 <= fr.connection < len(ctx.an.connections) else None
    body = _quic_message(fr, ctx, 0, want, conn.first_packet if conn is not None else fr.packet)
    if body is None:
        return None
    return (parse_client_hello if want == 1 else parse_server_hello)(body)


def _quic_message(fr, ctx, epoch: int, want: int, first: int) -> bytes | None:
    """The body of the last whole handshake message of type ``want`` in ``fr``'s direction's
    CRYPTO stream of one packet space (``epoch`` 0 Initial, 2 Handshake), as far as the packets
    from ``first`` to ``fr.packet`` carry it in order, decrypted again (analyzer.detail.decrypted_quic):
    the message ``fr`` (a QUIC handshake message completing there) stands for."""
    from wirefall.analyzer.detail import decrypted_quic
    from .quic import _varint

    idx = ctx.idx
    chunks: dict[int, bytes] = {}
    first, last = min(fr.first_packet or fr.packet, fr.packet, first), fr.packet
    seen = 0
    for p in range(max(first, 1), min(last, len(idx)) + 1):
        if idx.conn[p - 1] != fr.connection:
            continue
        seen += 1
        if seen > MAX_CRYPTO_SCAN:
            break
        for q in decrypted_quic(ctx.an, ctx.source, p):
            if q.error or q.epoch != epoch or q.direction != fr.direction:
                continue
            for j in range(len(q.starts)):
                a, b = q.frame_span(j)
                if a < 0 or q.data[a] != 0x06:
                    continue
                try:
                    off, k = _varint(q.data, a + 1)
                    ln, k = _varint(q.data, k)
                except IndexError:
                    continue
                chunks.setdefault(off, q.data[k : k + ln])
    buf = b""
    while len(buf) in chunks:
        c = chunks[len(buf)]
        if not c:
            break
        buf += c
    # the messages in order: the last whole one of the type wanted is this frame's
    p, body = 0, None
    while p + 4 <= len(buf):
        ln = int.from_bytes(buf[p + 1 : p + 4], "big")
        if p + 4 + ln > len(buf):
            break
        if buf[p] == want:
            body = buf[p + 4 : p + 4 + ln]
        p += 4 + ln
    return body


def _ee(fr, ctx) -> list[dict]:
    """The decrypted TLS 1.3 EncryptedExtensions in ``fr`` (a TCP record, or a QUIC handshake
    message), each as ``parse_encrypted_extensions`` reads it (its ``extensions`` and selected
    ``alpn``): tshark lists their extension types and the ALPN the server selects as it does a
    hello's.  Decrypted again (a TCP record: analyzer.detail.decrypted_tls; QUIC: its Handshake
    packets, ``_quic_message``); none without the key log."""
    if ctx is None or 8 not in _msg_codes(fr):
        return []
    if _is_record(fr) and not (fr.fields or {}).get("decrypted"):
        return []
    key = ("tls_ee", id(fr))
    got = ctx.cache.get(key)
    if got is not None:
        return got
    from wirefall.analyzer.detail import decrypted_tls
    from wirefall.dissectors.tls import parse_encrypted_extensions, parse_handshake_messages

    got = []
    if not _is_record(fr):
        body = _quic_message(fr, ctx, 2, 8, fr.first_packet or fr.packet)
        got = [parse_encrypted_extensions(body)] if body is not None else []
        ctx.cache[key] = got
        return got
    for r in decrypted_tls(ctx.an, ctx.source, fr.packet):
        if r.offset == fr.offset and r.ctype == 22 and r.data:
            msgs, _ = parse_handshake_messages(r.data)
            got.extend(parse_encrypted_extensions(body) for t, body in msgs if t == 8)
    ctx.cache[key] = got
    return got


def _hs_version(fr, ctx):
    return [h["legacy_version"] for _, h in _hellos(fr, ctx) if h.get("legacy_version") is not None]


def _ciphersuite(fr, ctx):
    out = []
    for t, h in _hellos(fr, ctx):
        if t == 1:
            out.extend(h.get("cipher_suites") or ())
        elif h.get("cipher_suite") is not None:
            out.append(h["cipher_suite"])
    return out


def _sni(fr, ctx):
    return [h["sni"] for t, h in _hellos(fr, ctx) if t == 1 and h.get("sni")]


def _alpn(fr, ctx):
    out = []
    for h in [h for _, h in _hellos(fr, ctx)] + _ee(fr, ctx):
        a = h.get("alpn")
        out.extend(a if isinstance(a, list) else [a] if a else [])
    return out


def _hello_bytes(key: str, nonempty: bool = False):
    """A byte field of each hello (``random``, ``session_id``: tshark shows an empty session ID
    as its length only)."""
    def fn(fr, ctx):
        out = []
        for _, h in _hellos(fr, ctx):
            v = h.get(key)
            if isinstance(v, (bytes, bytearray)) and (v or not nonempty):
                out.append(bytes(v))
        return out
    return fn


def _extension_types(fr, ctx):
    return [t for h in [h for _, h in _hellos(fr, ctx)] + _ee(fr, ctx) for t, _ in h.get("extensions") or ()]


def _supported_versions(fr, ctx):
    out = []
    for t, h in _hellos(fr, ctx):
        if t == 1:
            out.extend(h.get("supported_versions") or ())
        elif h.get("selected_version"):
            out.append(h["selected_version"])
    return out


# QUIC transport parameters (RFC 9000 §18): their extension's codepoints (RFC 9001's and the
# drafts'), and tshark 4.0's fields of the parameters it decodes: name -> (parameter, how it is
# read: "varint", "bytes" (the value), "u32" (4 bytes), a fixed size in bytes, "vi.chosen" /
# "vi.other" (RFC 9368's Version Information: the first version, each further one), FT type,
# integer size, meaning)
QUIC_TP_EXTENSIONS = (0x39, 0xFFA5)
QUIC_TP: dict[str, tuple[int, str | int, str, int, str]] = {
    "original_destination_connection_id": (0x00, "bytes", BYTES, 0, "the DCID of the client's first Initial (server)"),
    "max_idle_timeout": (0x01, "varint", UINT, 8, "idle timeout (ms)"),
    "stateless_reset_token": (0x02, 16, BYTES, 0, "stateless reset token (server)"),
    "max_udp_payload_size": (0x03, "varint", UINT, 8, "largest UDP payload the endpoint receives"),
    "initial_max_data": (0x04, "varint", UINT, 8, "initial connection flow-control limit (bytes)"),
    "initial_max_stream_data_bidi_local": (0x05, "varint", UINT, 8, "initial limit of the endpoint's own bidirectional streams"),
    "initial_max_stream_data_bidi_remote": (0x06, "varint", UINT, 8, "initial limit of the peer's bidirectional streams"),
    "initial_max_stream_data_uni": (0x07, "varint", UINT, 8, "initial limit of unidirectional streams"),
    "initial_max_streams_bidi": (0x08, "varint", UINT, 8, "bidirectional streams the peer may open"),
    "initial_max_streams_uni": (0x09, "varint", UINT, 8, "unidirectional streams the peer may open"),
    "ack_delay_exponent": (0x0A, "varint", UINT, 8, "ACK delay exponent"),
    "max_ack_delay": (0x0B, "varint", UINT, 8, "maximum ACK delay (ms)"),
    "active_connection_id_limit": (0x0E, "varint", UINT, 8, "connection IDs the endpoint keeps"),
    "initial_source_connection_id": (0x0F, "bytes", BYTES, 0, "the SCID of the endpoint's first Initial"),
    "retry_source_connection_id": (0x10, "bytes", BYTES, 0, "the SCID of the server's Retry (server)"),
    "vi.chosen_version": (0x11, "vi.chosen", UINT, 4, "Version Information's chosen version (RFC 9368)"),
    "vi.other_version": (0x11, "vi.other", UINT, 4, "Version Information's other versions, each"),
    "max_datagram_frame_size": (0x20, "varint", UINT, 8, "largest DATAGRAM frame accepted (RFC 9221)"),
    "google.initial_rtt": (0x3127, "varint", UINT, 8, "Google's initial RTT (µs; Chromium)"),
    "google.connection_options": (0x3128, "bytes", BYTES, 0, "Google's connection options (Chromium)"),
    "google.quic_version": (0x4752, "u32", UINT, 4, "Google's QUIC version (Chromium)"),
}


def _tp_parse(data: bytes) -> dict:
    """One quic_transport_parameters extension as tshark 4.0 reads it: ``old`` (the drafts
    before 27: a 2-byte total length, 2-byte types and lengths — tshark's test: the first two
    bytes are the rest's length and the first parameter fits), ``len`` (that total), and
    ``params``: (type, length, value bytes, the extension's bytes from the value on) each, in
    order (a decoded varint is read where the value starts, its length unchecked, as tshark
    reads it).  A parameter running past the extension ends the list (a malformed extension:
    tshark still shows that one's type and length)."""
    from .quic import _varint

    n = len(data)
    tails = memoryview(data)  # (each parameter's "rest of the extension" a view: a copy each was quadratic in a hostile extension)
    old = n >= 6 and 2 + int.from_bytes(data[0:2], "big") == n and 6 + int.from_bytes(data[4:6], "big") <= n
    out: dict = {"old": old, "len": int.from_bytes(data[0:2], "big") if old else None, "params": []}
    p = 2 if old else 0
    while p < n:
        try:
            if old:
                if p + 4 > n:
                    break
                t, ln, p = int.from_bytes(data[p : p + 2], "big"), int.from_bytes(data[p + 2 : p + 4], "big"), p + 4
            else:
                t, p = _varint(data, p)
                ln, p = _varint(data, p)
        except IndexError:
            break
        if p + ln > n:
            break
        out["params"].append((t, ln, data[p : p + ln], tails[p:]))
        p += ln
    return out


def _tp_decode(how: str | int, value: bytes, tail: bytes) -> list:
    """A parameter's decoded values (``QUIC_TP``'s ``how``)."""
    from .quic import _varint

    if how == "varint":
        try:
            return [_varint(tail, 0)[0]]
        except IndexError:
            return []
    if how == "bytes":
        return [value]
    if how == "u32":
        return [int.from_bytes(tail[:4], "big")] if len(tail) >= 4 else []
    if how == "vi.chosen":
        return [int.from_bytes(value[:4], "big")] if len(value) >= 4 else []
    if how == "vi.other":
        return [int.from_bytes(value[i : i + 4], "big") for i in range(4, len(value) - 3, 4)]
    assert isinstance(how, int)
    return [bytes(tail[:how])] if len(tail) >= how else []


def _tp_exts(fr, ctx) -> list[dict]:
    """The transport-parameter extensions of the QUIC handshake message(s) ``fr`` carries, as
    ``_tp_parse`` reads each: a ClientHello's (read again: ``_hellos``) and a decrypted
    EncryptedExtensions' (its Handshake CRYPTO stream decrypted again), in message order."""
    codes = [c for c in _msg_codes(fr) if c in (1, 8)]
    if not codes or ctx is None:
        return []
    key = ("tls_quic_tp", id(fr))
    got = ctx.cache.get(key)
    if got is not None:
        return got
    from wirefall.dissectors.tls import parse_encrypted_extensions

    got = []
    for c in codes:
        if c == 1:
            exts = [e for t, h in _hellos(fr, ctx) if t == 1 for e in h.get("extensions") or ()]
        elif not _is_record(fr):  # (over TCP an EncryptedExtensions carries no QUIC parameters)
            body = _quic_message(fr, ctx, 2, 8, fr.first_packet or fr.packet)
            exts = parse_encrypted_extensions(body)["extensions"] if body is not None else []
        else:
            exts = []
        got.extend(_tp_parse(d) for t, d in exts if t in QUIC_TP_EXTENSIONS)
    ctx.cache[key] = got
    return got


def _has_tp(fr) -> bool:
    return fr.protocol == "tls" and any(c in (1, 8) for c in _msg_codes(fr))


def _tp(part: str):
    """Values of every transport parameter in the frame's extensions: ``type``, ``length``
    (the varint encoding's), ``old_length`` (the drafts' 2-byte one), ``value`` (its bytes,
    empty too), ``len`` (the drafts' total length, once per extension)."""
    def fn(fr, ctx) -> list:
        out: list = []
        for e in _tp_exts(fr, ctx):
            if part == "len":
                out.extend([e["len"]] if e["old"] else [])
            elif part == "length" and e["old"] or part == "old_length" and not e["old"]:
                continue
            else:
                i = {"type": 0, "length": 1, "old_length": 1, "value": 2}[part]
                out.extend(x[i] for x in e["params"])
        return out
    return fn


def _tp_value(ident: int, how: str | int):
    """The decoded values of each transport parameter ``ident`` (as tshark's field for it)."""
    def fn(fr, ctx):
        return [v for e in _tp_exts(fr, ctx) for x in e["params"] if x[0] == ident for v in _tp_decode(how, x[2], x[3])]
    return fn


_TP_NOTE = ("read again from the message's packets (a ClientHello's Initial packets; an EncryptedExtensions' Handshake "
            "packets, with the key log), at most the connection's first 8 from where it begins; none in frames -Y (no packets there)")
_TP_SAME = "as tls.quic.parameter.type"


def _version(fr, ctx):
    v = (fr.fields or {}).get("version")
    c = VERSION_CODES.get(str(v)) if v is not None else None
    return [c] if c is not None else []


def _has_alert(fr) -> bool:
    """A decrypted (or plaintext) alert record: the session's ``alert`` "level: description"."""
    return _is_record(fr) and isinstance((fr.fields or {}).get("alert"), str)


def _is_alert(fr) -> bool:
    """An alert record, its content read or not (TLS 1.2's encrypted alert: content type 21)."""
    return _is_record(fr) and CONTENT_CODES.get(fr.type) == 21


def _alert(i: int, codes: dict):
    def fn(fr, ctx):
        v = fr.fields["alert"].split(": ", 1)[i]
        c = codes.get(v, int(v) if v.isdigit() else None)
        return [c] if c is not None else []
    return fn


def _tls13(fr, ctx) -> bool:
    """The record is on a connection whose ServerHello selected TLS 1.3 (tshark's session
    version: a connection joined mid-way has none)."""
    if ctx is None:
        return False
    got = ctx.cache.get("tls13_conns")
    if got is None:
        got = ctx.cache["tls13_conns"] = {c.id for c in ctx.an.connections
                                          if c.tls is not None and c.tls.version == "TLS 1.3" and c.tls.server_hello_time is not None}
    return fr.connection in got


def _opaque(fr, ctx) -> bool:
    """A TLS 1.3 protected record (outer type 23): tshark names its outer type opaque_type."""
    f = fr.fields or {}
    return bool(f.get("encrypted")) and f.get("version") != "SSL 2.0" and _tls13(fr, ctx)


def _content_type(fr, ctx):
    """The outer type; on a TLS 1.3 protected record the inner type once decrypted, else none."""
    c = CONTENT_CODES.get(fr.type)
    if c is None or (not (fr.fields or {}).get("decrypted") and _opaque(fr, ctx)):
        return []
    return [c]


def _handshake_label() -> Field:
    """``tls.handshake``: a handshake message; in QUIC also each packet whose CRYPTO data the
    TLS dissector reads while the message is still partial (``_waiting``: tshark shows the
    Handshake Protocol there, without a type)."""
    # one item per message, as tshark adds one (a record may hold several), and one for a handshake
    # record not decrypted (tshark's "Encrypted Handshake Message": a TLS 1.2 Finished without keys)
    f = F("tls.handshake", NONE, lambda fr: _has_hs(fr) or _encrypted_hs(fr), lambda fr, ctx: [True] * max(len(_msg_codes(fr)), 1),
          "a handshake message (an encrypted one too; in QUIC, also a packet whose CRYPTO frame carries part of one, as tshark)")
    per_frame = f.get

    def get(pv) -> list:
        out = per_frame(pv)
        if not out and pv.layers.udp is not None and pv.n in _waiting(pv.ctx):
            return [True]
        return out

    f.get = get
    return f


def _is_app_data(fr) -> bool:
    return _is_record(fr) and fr.type == "APPLICATION_DATA"


def _app_data(fr, ctx):
    """The record's body as sent (the ciphertext), read again from the TCP segments."""
    if ctx is None or fr.offset < 0:
        return []
    from wirefall.analyzer.detail import _stream_bytes

    raw = _stream_bytes(ctx.an, ctx.source, fr.connection, fr.direction, fr.offset + 5, fr.offset + 5 + fr.length,
                        fr.first_packet or fr.packet, fr.packet)
    return [raw] if isinstance(raw, bytes) else []


PROTOCOL = Protocol("tls", "Transport Layer Security (records over TCP, handshake messages in QUIC too)",
                    Field("tls", PROTO_OPAQUE, _tls_present, "a TLS record or handshake message ends (or a record spanning segments begins)",
                          frame=lambda fr: [True] if _is_tls(fr) else []), [
    label("tls.record", _is_record, lambda fr, ctx: True, "a TLS record (over TCP)"),
    F("tls.record.content_type", UINT, _is_record, _content_type,
      "record content type (20 CCS, 21 alert, 22 handshake, 23 application data); on a TLS 1.3 protected record the inner "
      "type once decrypted, absent if not (see opaque_type)",
      note="`frames -Y` cannot tell a TLS 1.3 record (no connection there): it reads the outer type", size=1),
    F("tls.record.opaque_type", UINT, _is_record, lambda fr, ctx: [23] if _opaque(fr, ctx) else [],
      "a TLS 1.3 protected record's outer type (23), decrypted or not",
      note="`frames -Y` cannot tell a TLS 1.3 record (no connection there): absent", size=1),
    F("tls.record.version", UINT, _is_record, _version, "record-layer version (0x0301 TLS 1.0 … 0x0303)", size=2),
    F("tls.record.length", UINT, _is_record, lambda fr, ctx: [fr.length], "record length", size=2),
    label("tls.alert_message", _is_alert, lambda fr, ctx: True, "an alert record (tshark's \"Encrypted Alert\" too: level and "
          "description only decrypted or in the clear)"),
    F("tls.alert_message.level", UINT, _has_alert, _alert(0, ALERT_LEVEL_CODES), "alert level (1 warning, 2 fatal)", size=1),
    F("tls.alert_message.desc", UINT, _has_alert, _alert(1, ALERT_DESC_CODES), "alert description (0 close_notify, 40 handshake_failure…)", size=1),
    F("tls.app_data", BYTES, _is_app_data, _app_data, "an application-data record's body as sent (encrypted: ciphertext and tag)",
      note="past 4096 records on a connection, a run of small undecrypted ones is one frame: its first record's body only"),
    _handshake_label(),
    F("tls.handshake.type", UINT, _has_hs, lambda fr, ctx: _msg_codes(fr), "handshake message type (1 ClientHello, 2 ServerHello, 11 Certificate, 20 Finished…)", size=1),
    F("tls.handshake.version", UINT, _has_hs, _hs_version, "hello's legacy version (0x0303)", size=2),
    F("tls.handshake.ciphersuite", UINT, _has_hs, _ciphersuite, "cipher suites offered (ClientHello) or chosen (ServerHello)",
      note="in QUIC the ClientHello's list is read from its Initial packets, decrypted again", size=2),
    F("tls.handshake.extensions_server_name", STRING, _has_hs, _sni, "server name (SNI) in the ClientHello"),
    F("tls.handshake.extensions_alpn_str", STRING, _has_hs, _alpn, "ALPN protocols offered or selected (the ServerHello's, or a decrypted "
      "TLS 1.3 EncryptedExtensions')",
      note="an EncryptedExtensions is decrypted again: over TCP its record; in QUIC its Handshake packets, at most the "
      "connection's first 8 from where it begins"),
    F("tls.handshake.random", BYTES, _has_hs, _hello_bytes("random"), "hello random (32 bytes)"),
    F("tls.handshake.session_id", BYTES, _has_hs, _hello_bytes("session_id", nonempty=True), "hello legacy session ID (when not empty)"),
    F("tls.handshake.extension.type", UINT, _has_hs, _extension_types, "extension types of a hello or a decrypted TLS 1.3 EncryptedExtensions, "
      "in order (0 server_name, 16 ALPN, 43 supported_versions…)", note="as tls.handshake.extensions_alpn_str; a TLS 1.3 Certificate's per-certificate extensions (5 status_request: "
      "OCSP), which tshark lists too, are not read", size=2),
    F("tls.handshake.extensions.supported_version", UINT, _has_hs, _supported_versions,
      "versions a ClientHello offers (supported_versions) or a ServerHello selects (0x0304 TLS 1.3)", size=2),
    F("tls.quic.len", UINT, _has_tp, _tp("len"), "QUIC transport parameters' total length (drafts before 27 only)",
      note=_TP_SAME, size=2),
    F("tls.quic.parameter.type", UINT, _has_tp, _tp("type"), "a QUIC transport parameter's type, each in order (ClientHello, "
      "EncryptedExtensions: 4 initial_max_data, 0x0f initial_source_connection_id…)", note=_TP_NOTE, size=8),
    F("tls.quic.parameter.length", UINT, _has_tp, _tp("length"), "a QUIC transport parameter's length (varint encoding)",
      note=_TP_SAME, size=8),
    F("tls.quic.parameter.lengt.old", UINT, _has_tp, _tp("old_length"), "a QUIC transport parameter's 2-byte length "
      "(drafts before 27; tshark's name)", note=_TP_SAME, size=2),
    F("tls.quic.parameter.value", BYTES, _has_tp, _tp("value"), "a QUIC transport parameter's value bytes (every parameter, "
      "empty ones too)", note=_TP_SAME),
    *[F(f"tls.quic.parameter.{name}", ft, _has_tp, _tp_value(ident, how), f"transport parameter {name} (0x{ident:02x}): {desc}",
        note=_TP_SAME, size=size) for name, (ident, how, ft, size, desc) in QUIC_TP.items()],
    *[F(n, t, _has_hs, lambda fr, ctx: [], d, unsupported=f"{n} is not a filter field in wirefall yet: {why}") for n, t, d, why in (
        ("tls.handshake.extensions_supported_group", UINT, "a supported group (ClientHello; a decrypted EncryptedExtensions)", _NOT_HELLO),
        ("tls.handshake.sig_hash_alg", UINT, "a signature algorithm (hello extensions, ServerKeyExchange, CertificateRequest, "
         "CertificateVerify)", _NOT_HELLO),
        ("tls.handshake.certificate", BYTES, "a certificate (Certificate message)", _NOT_HELLO),
        ("tls.handshake.length", UINT, "a handshake message's length", _NOT_HELLO),
        ("tls.segment", UINT, "a record of a handshake message reassembled from several", "tshark adds it where its own "
         "handshake reassembly joins records, which wirefall's TLS reader does not reproduce record for record"),
        ("x509ce.dNSName", STRING, "a certificate's subjectAltName DNS name", _NOT_HELLO))],
])
