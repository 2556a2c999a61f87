"""TLS record layer and handshake messages, sans-IO (no files, no sockets).

Parts reusable on their own (QUIC uses the handshake parsers on CRYPTO-frame bytes):

- ``parse_handshake_messages(buf) -> ([(type, body), ...], rest)``
- ``parse_client_hello(body)``, ``parse_server_hello(body)``, ``parse_encrypted_extensions(body)``,
  ``parse_certificate(body, tls13)``, ``parse_new_session_ticket(body, tls13)``,
  ``parse_sslv2_client_hello(record)`` -> dicts of facts; bad input gives ``{"error": ...}`` plus
  whatever was parsed before the problem, never an exception.
- ``RecordReader``: one direction of a TLS byte stream -> ``Record`` objects, each with the
  packets that carried its first and last byte.
- ``HandshakeReader``: handshake messages across records, bounded.
- ``CIPHER_SUITES`` (id -> IANA name), ``suite_name``, ``version_name``.

Why a hand-written parser: no maintained Python library parses TLS records and hello messages
passively (``cryptography`` has no TLS layer, ``dpkt.ssl`` is incomplete for TLS 1.3 and raises
on truncated input, ``scapy`` is too slow and heavy for a hot path).  The formats are simple
length-prefixed structures (RFC 8446 / RFC 5246); we decode them with ``struct``-free slicing.
"""
from __future__ import annotations

import re
from enum import IntEnum

from wirefall.dissectors.registry import FrameKinds, OracleSpec, ProtocolDescriptor, names_of

from .tls_suites import CIPHER_SUITES

# Record content types
class ContentType(IntEnum):
    """RFC 8446 §5.1 (and RFC 6520 heartbeat); a record is a ``Frame`` of this type name."""

    CHANGE_CIPHER_SPEC = 20
    ALERT = 21
    HANDSHAKE = 22
    APPLICATION_DATA = 23
    HEARTBEAT = 24


CCS, ALERT, HANDSHAKE, APPLICATION_DATA, HEARTBEAT = ContentType
CONTENT_TYPES = names_of(ContentType)

# Handshake message types
HS_HELLO_REQUEST, HS_CLIENT_HELLO, HS_SERVER_HELLO = 0, 1, 2
HS_NEW_SESSION_TICKET, HS_END_OF_EARLY_DATA, HS_ENCRYPTED_EXTENSIONS = 4, 5, 8
HS_CERTIFICATE, HS_SERVER_KEY_EXCHANGE, HS_CERTIFICATE_REQUEST, HS_SERVER_HELLO_DONE = 11, 12, 13, 14
HS_CERTIFICATE_VERIFY, HS_CLIENT_KEY_EXCHANGE, HS_FINISHED = 15, 16, 20
HS_KEY_UPDATE, HS_NEXT_PROTOCOL, HS_MESSAGE_HASH = 24, 67, 254
HandshakeType = IntEnum("HandshakeType", [  # RFC 8446 §4 and the TLS HandshakeType registry
    ("HELLO_REQUEST", 0), ("CLIENT_HELLO", 1), ("SERVER_HELLO", 2), ("HELLO_VERIFY_REQUEST", 3),
    ("NEW_SESSION_TICKET", 4), ("END_OF_EARLY_DATA", 5), ("HELLO_RETRY_REQUEST", 6), ("ENCRYPTED_EXTENSIONS", 8),
    ("CERTIFICATE", 11), ("SERVER_KEY_EXCHANGE", 12), ("CERTIFICATE_REQUEST", 13), ("SERVER_HELLO_DONE", 14),
    ("CERTIFICATE_VERIFY", 15), ("CLIENT_KEY_EXCHANGE", 16), ("FINISHED", 20), ("CERTIFICATE_URL", 21),
    ("CERTIFICATE_STATUS", 22), ("SUPPLEMENTAL_DATA", 23), ("KEY_UPDATE", 24), ("COMPRESSED_CERTIFICATE", 25),
    ("NEXT_PROTOCOL", 67), ("MESSAGE_HASH", 254),
])
HANDSHAKE_TYPES = names_of(HandshakeType)

# Extension types
EXT_SERVER_NAME, EXT_SUPPORTED_GROUPS, EXT_ALPN = 0, 10, 16
EXT_ENCRYPT_THEN_MAC, EXT_EXTENDED_MASTER_SECRET, EXT_SESSION_TICKET = 22, 23, 35
EXT_PRE_SHARED_KEY, EXT_EARLY_DATA, EXT_SUPPORTED_VERSIONS, EXT_KEY_SHARE = 41, 42, 43, 51
EXT_QUIC_TRANSPORT_PARAMETERS, EXT_QUIC_TRANSPORT_PARAMETERS_DRAFT = 0x39, 0xFFA5
EXT_NPN, EXT_RENEGOTIATION_INFO = 13172, 0xFF01
EXTENSION_NAMES = {
    0: "server_name", 1: "max_fragment_length", 5: "status_request", 10: "supported_groups",
    11: "ec_point_formats", 13: "signature_algorithms", 16: "application_layer_protocol_negotiation",
    18: "signed_certificate_timestamp", 21: "padding", 22: "encrypt_then_mac", 23: "extended_master_secret",
    27: "compress_certificate", 28: "record_size_limit", 35: "session_ticket", 41: "pre_shared_key",
    42: "early_data", 43: "supported_versions", 44: "cookie", 45: "psk_key_exchange_modes",
    49: "post_handshake_auth", 50: "signature_algorithms_cert", 51: "key_share", 57: "quic_transport_parameters",
    13172: "next_protocol_negotiation", 17513: "application_settings", 0xFE0D: "encrypted_client_hello",
    0xFF01: "renegotiation_info", 0xFFA5: "quic_transport_parameters_draft",
}

ALERT_LEVELS = {1: "warning", 2: "fatal"}
ALERT_DESCRIPTIONS = {
    0: "close_notify", 10: "unexpected_message", 20: "bad_record_mac", 21: "decryption_failed",
    22: "record_overflow", 30: "decompression_failure", 40: "handshake_failure", 41: "no_certificate",
    42: "bad_certificate", 43: "unsupported_certificate", 44: "certificate_revoked", 45: "certificate_expired",
    46: "certificate_unknown", 47: "illegal_parameter", 48: "unknown_ca", 49: "access_denied",
    50: "decode_error", 51: "decrypt_error", 60: "export_restriction", 70: "protocol_version",
    71: "insufficient_security", 80: "internal_error", 86: "inappropriate_fallback", 90: "user_canceled",
    100: "no_renegotiation", 109: "missing_extension", 110: "unsupported_extension",
    111: "certificate_unobtainable", 112: "unrecognized_name", 113: "bad_certificate_status_response",
    114: "bad_certificate_hash_value", 115: "unknown_psk_identity", 116: "certificate_required",
    120: "no_application_protocol",
}

DESCRIPTOR = ProtocolDescriptor(
    name="tls",
    display="TLS",
    protocols=("tls",),
    frame_types=ContentType,
    type_names=CONTENT_TYPES,
    kinds=FrameKinds(data=frozenset({"APPLICATION_DATA"})),
    fields_module="tls",
    long_name="Transport Layer Security", column_rank=1, frame_header=5, hooks_module="tls",
    oracle=OracleSpec(layer="tls", type_field="tls.record.content_type", fields={"length": "tls.record.length"},
                      clears_info=True),
)

VERSIONS = {0x0002: "SSL 2.0", 0x0300: "SSL 3.0", 0x0301: "TLS 1.0", 0x0302: "TLS 1.1", 0x0303: "TLS 1.2", 0x0304: "TLS 1.3"}

# SHA-256("HelloRetryRequest"), the ServerHello.random of a HelloRetryRequest (RFC 8446 4.1.3)
HRR_RANDOM = bytes.fromhex("cf21ad74e59a6111be1d8c021e65b891c2a211167abb8c5e079e09e2c8a8339c")

MAX_RECORD = (1 << 14) + 2048  # TLSCiphertext.length limit (RFC 5246 6.2.3)
MAX_HANDSHAKE_MESSAGE = 1 << 20  # bound on one handshake message held across records


def version_name(v: int | None) -> str | None:
    if v is None:
        return None
    if v in VERSIONS:
        return VERSIONS[v]
    if v >> 8 == 0x7F:
        return f"TLS 1.3 draft {v & 0xFF}"
    if v & 0x0F0F == 0x0A0A:
        return f"GREASE 0x{v:04x}"
    return f"0x{v:04x}"


def suite_name(cs: int | None) -> str | None:
    if cs is None:
        return None
    return CIPHER_SUITES.get(cs) or f"0x{cs:04x}"


def is_grease(v: int) -> bool:
    return v & 0x0F0F == 0x0A0A and v >> 8 == v & 0xFF


class _Short(Exception):
    """Internal: a structure ran past its end (caught inside the parsers)."""


class _Buf:
    """Cursor over bytes; every read checks bounds and raises _Short past the end."""

    __slots__ = ("b", "p", "end")

    def __init__(self, b, p: int = 0, end: int | None = None):
        self.b = b
        self.p = p
        self.end = len(b) if end is None else end

    def left(self) -> int:
        return self.end - self.p

    def u8(self) -> int:
        if self.p + 1 > self.end:
            raise _Short
        v = self.b[self.p]
        self.p += 1
        return v

    def u16(self) -> int:
        if self.p + 2 > self.end:
            raise _Short
        b = self.b
        v = b[self.p] << 8 | b[self.p + 1]
        self.p += 2
        return v

    def u24(self) -> int:
        if self.p + 3 > self.end:
            raise _Short
        b = self.b
        v = b[self.p] << 16 | b[self.p + 1] << 8 | b[self.p + 2]
        self.p += 3
        return v

    def take(self, n: int) -> bytes:
        if n < 0 or self.p + n > self.end:
            raise _Short
        v = bytes(self.b[self.p : self.p + n])
        self.p += n
        return v

    def vec(self, lenbytes: int) -> bytes:
        n = self.u8() if lenbytes == 1 else self.u16() if lenbytes == 2 else self.u24()
        return self.take(n)

    def sub(self, lenbytes: int) -> _Buf:
        n = self.u8() if lenbytes == 1 else self.u16() if lenbytes == 2 else self.u24()
        if self.p + n > self.end:
            raise _Short
        s = _Buf(self.b, self.p, self.p + n)
        self.p += n
        return s


# ---------------------------------------------------------------- handshake messages


def parse_handshake_messages(buf) -> tuple[list[tuple[int, bytes]], bytes]:
    """Split concatenated handshake messages: returns complete ``(type, body)`` pairs and the
    unconsumed tail (an incomplete message) for the caller to prepend to the next bytes."""
    out = []
    p, n = 0, len(buf)
    while n - p >= 4:
        ln = buf[p + 1] << 16 | buf[p + 2] << 8 | buf[p + 3]
        if n - p - 4 < ln:
            break
        out.append((buf[p], bytes(buf[p + 4 : p + 4 + ln])))
        p += 4 + ln
    return out, bytes(buf[p:])


def _parse_extensions(b: _Buf) -> list[tuple[int, bytes]]:
    exts: list[tuple[int, bytes]] = []
    if b.left() == 0:
        return exts
    e = b.sub(2)
    while e.left():
        t = e.u16()
        exts.append((t, e.vec(2)))
    return exts


def _alpn_list(data: bytes) -> list[str]:
    b = _Buf(data)
    lst = b.sub(2)
    out = []
    while lst.left():
        out.append(lst.vec(1).decode("ascii", "replace"))
    return out


def _sni(data: bytes) -> str | None:
    b = _Buf(data)
    lst = b.sub(2)
    while lst.left():
        t = lst.u8()
        name = lst.vec(2)
        if t == 0:
            return name.decode("ascii", "replace")
    return None


def _apply_hello_extensions(d: dict, exts, client: bool) -> None:
    for t, data in exts:
        if t == EXT_SERVER_NAME and client and data:
            d["sni"] = _sni(data)
        elif t == EXT_ALPN:
            protos = _alpn_list(data)
            if client:
                d["alpn"] = protos
            else:
                d["alpn"] = protos[0] if protos else None
        elif t == EXT_SUPPORTED_VERSIONS:
            if client:
                b = _Buf(data)
                lst = b.sub(1)
                vs = []
                while lst.left():
                    vs.append(lst.u16())
                d["supported_versions"] = vs
            elif len(data) >= 2:
                d["selected_version"] = data[0] << 8 | data[1]
        elif t == EXT_KEY_SHARE:
            b = _Buf(data)
            if client:
                lst = b.sub(2)
                groups = []
                while lst.left():
                    groups.append(lst.u16())
                    lst.vec(2)
                d["key_share_groups"] = groups
            elif len(data) >= 2:
                d["key_share_group"] = data[0] << 8 | data[1]  # HRR: only the selected group
        elif t in (EXT_QUIC_TRANSPORT_PARAMETERS, EXT_QUIC_TRANSPORT_PARAMETERS_DRAFT):
            d["quic_transport_parameters"] = data
        elif t == EXT_NPN:
            if client:
                d["npn"] = True
            else:
                b = _Buf(data)
                npn: list[str] = []
                while b.left():
                    npn.append(b.vec(1).decode("ascii", "replace"))
                d["npn"] = npn
        elif t == EXT_EXTENDED_MASTER_SECRET:
            d["extended_master_secret"] = True
        elif t == EXT_ENCRYPT_THEN_MAC:
            d["encrypt_then_mac"] = True
        elif t == EXT_EARLY_DATA:
            d["early_data"] = True
        elif t == EXT_PRE_SHARED_KEY:
            d["pre_shared_key"] = True
        elif t == EXT_SESSION_TICKET:
            d["session_ticket"] = data


def parse_client_hello(body) -> dict:
    """ClientHello body (after the 4-byte handshake header).  Keys: legacy_version, random,
    session_id, cipher_suites (ints, GREASE included), compression_methods, extensions
    ([(type, raw bytes)]), sni, alpn (list), supported_versions, key_share_groups,
    quic_transport_parameters (raw), npn (True if offered), extended_master_secret,
    encrypt_then_mac, early_data, pre_shared_key, session_ticket (raw, b"" if empty);
    ``error`` if the message is malformed."""
    d: dict = {"legacy_version": None, "random": None, "session_id": b"", "cipher_suites": [], "compression_methods": b"",
               "extensions": [], "sni": None, "alpn": [], "supported_versions": [], "key_share_groups": [],
               "quic_transport_parameters": None, "npn": False}
    try:
        b = _Buf(body)
        d["legacy_version"] = b.u16()
        d["random"] = b.take(32)
        d["session_id"] = b.vec(1)
        cs = b.sub(2)
        suites = []
        while cs.left() >= 2:
            suites.append(cs.u16())
        d["cipher_suites"] = suites
        d["compression_methods"] = b.vec(1)
        d["extensions"] = exts = _parse_extensions(b)
        _apply_hello_extensions(d, exts, True)
    except (_Short, ValueError, IndexError):
        d["error"] = "malformed ClientHello"
    return d


def parse_server_hello(body) -> dict:
    """ServerHello body.  Keys: legacy_version, version (supported_versions if present),
    random, session_id, cipher_suite, compression_method, extensions, hello_retry (the HRR
    random), alpn (selected, TLS 1.2 puts it here), npn (protocols the server advertises),
    key_share_group, pre_shared_key, extended_master_secret, encrypt_then_mac, session_ticket."""
    d: dict = {"legacy_version": None, "version": None, "random": None, "session_id": b"", "cipher_suite": None,
               "compression_method": None, "extensions": [], "hello_retry": False, "alpn": None}
    try:
        b = _Buf(body)
        d["legacy_version"] = d["version"] = b.u16()
        d["random"] = b.take(32)
        d["hello_retry"] = d["random"] == HRR_RANDOM
        d["session_id"] = b.vec(1)
        d["cipher_suite"] = b.u16()
        d["compression_method"] = b.u8()
        d["extensions"] = exts = _parse_extensions(b)
        _apply_hello_extensions(d, exts, False)
        if d.get("selected_version"):
            d["version"] = d["selected_version"]
    except (_Short, ValueError, IndexError):
        d["error"] = "malformed ServerHello"
    return d


def parse_encrypted_extensions(body) -> dict:
    """TLS 1.3 EncryptedExtensions: alpn (selected), early_data (accepted), extensions."""
    d: dict = {"alpn": None, "extensions": []}
    try:
        b = _Buf(body)
        d["extensions"] = exts = _parse_extensions(b)
        _apply_hello_extensions(d, exts, False)
    except (_Short, ValueError, IndexError):
        d["error"] = "malformed EncryptedExtensions"
    return d


def certificate_subject(der: bytes) -> str | None:
    """RFC 4514 subject of a DER certificate (``cryptography.x509``), None if unparseable."""
    try:
        from cryptography import x509

        return x509.load_der_x509_certificate(der).subject.rfc4514_string()
    except Exception:  # noqa: BLE001 - any bad DER must not stop decoding
        return None


def parse_certificate(body, tls13: bool = False, subject: bool = True) -> dict:
    """Certificate message: ``certificates`` (DER list) and ``subject`` of the first one
    (RFC 4514 string via ``cryptography.x509``), ``error`` if malformed.  ``subject=False``
    leaves the subject unparsed (None): callers that keep the DER parse it when needed."""
    d: dict = {"certificates": [], "subject": None}
    try:
        b = _Buf(body)
        if tls13:
            b.vec(1)  # certificate_request_context
        lst = b.sub(3)
        while lst.left():
            d["certificates"].append(lst.vec(3))
            if tls13:
                lst.vec(2)
    except (_Short, ValueError, IndexError):
        d["error"] = "malformed Certificate"
    if d["certificates"] and subject:
        try:
            from cryptography import x509

            cert = x509.load_der_x509_certificate(d["certificates"][0])
            d["subject"] = cert.subject.rfc4514_string()
        except Exception:  # noqa: BLE001 - any bad DER must not stop decoding
            d["error"] = d.get("error") or "certificate could not be parsed"
    return d


def parse_new_session_ticket(body, tls13: bool = False) -> dict:
    d: dict = {"ticket": None, "lifetime": None}
    try:
        b = _Buf(body)
        d["lifetime"] = b.u16() << 16 | b.u16()
        if tls13:
            b.take(4)  # ticket_age_add
            b.vec(1)  # nonce
            d["ticket"] = b.vec(2)
        else:
            d["ticket"] = b.vec(2)
    except (_Short, ValueError, IndexError):
        d["error"] = "malformed NewSessionTicket"
    return d


def parse_next_protocol(body) -> str | None:
    """NPN NextProtocol message (client, encrypted in TLS 1.2): the selected protocol."""
    try:
        return _Buf(body).vec(1).decode("ascii", "replace")
    except (_Short, ValueError):
        return None


def parse_sslv2_client_hello(rec) -> dict:
    """SSLv2-compatible ClientHello record (RFC 5246 appendix E.2), including the 2-byte
    header.  The challenge becomes the 32-byte client random, left-padded with zeros."""
    d: dict = {"legacy_version": None, "random": None, "session_id": b"", "cipher_suites": [], "extensions": [],
               "sni": None, "alpn": [], "supported_versions": [], "key_share_groups": [], "sslv2": True}
    try:
        b = _Buf(rec)
        b.u16()  # header
        if b.u8() != 1:
            raise _Short
        d["legacy_version"] = b.u16()
        cs_len, sid_len, ch_len = b.u16(), b.u16(), b.u16()
        specs = b.take(cs_len)
        d["session_id"] = b.take(sid_len)
        challenge = b.take(ch_len)
        d["cipher_suites"] = [specs[i + 1] << 8 | specs[i + 2] for i in range(0, len(specs) - 2, 3) if specs[i] == 0]
        d["random"] = challenge[-32:].rjust(32, b"\0")
    except (_Short, ValueError, IndexError):
        d["error"] = "malformed SSLv2 ClientHello"
    return d


def parse_alert(body) -> dict:
    if len(body) < 2:
        return {"error": "short alert"}
    return {"level": ALERT_LEVELS.get(body[0], str(body[0])), "description": ALERT_DESCRIPTIONS.get(body[1], str(body[1]))}


class HandshakeReader:
    """Handshake messages of one direction across records (a message may span records and
    a record may hold several messages).  ``feed(plaintext) -> [(type, body)]``."""

    __slots__ = ("buf", "error")

    def __init__(self):
        self.buf = b""
        self.error: str | None = None

    def feed(self, data) -> list[tuple[int, bytes]]:
        if self.error:
            return []
        buf = self.buf + bytes(data) if self.buf else data
        msgs, self.buf = parse_handshake_messages(buf)
        if len(self.buf) >= 4:
            ln = self.buf[1] << 16 | self.buf[2] << 8 | self.buf[3]
            if ln > MAX_HANDSHAKE_MESSAGE:
                self.error = f"handshake message of {ln} bytes exceeds the {MAX_HANDSHAKE_MESSAGE}-byte limit"
                self.buf = b""
        return msgs


# ---------------------------------------------------------------- record layer


class Record:
    """One TLS record.  ``offset`` is the stream offset of its 5-byte header; ``first_packet``
    and ``packet`` carried its first and last byte.  ``sslv2`` marks an SSLv2-format hello
    (its ``body`` then holds the whole record including its 2-byte header)."""

    __slots__ = ("type", "version", "body", "offset", "first_packet", "packet", "sslv2", "header")

    def __init__(self, type_, version, body, offset, first_packet, packet, sslv2=False, header=None):
        self.type = type_
        self.version = version
        self.body = body
        self.offset = offset
        self.first_packet = first_packet
        self.packet = packet
        self.sslv2 = sslv2
        self.header = header  # the 5 header bytes as read (TLS 1.3's additional data), when the reader kept them

    def __repr__(self):
        return f"<Record {CONTENT_TYPES.get(self.type, self.type)} len={len(self.body)} off={self.offset} pkts={self.first_packet}-{self.packet}>"


_RECORD_HEADER: re.Pattern[bytes] | None = None  # content type 20-24, version 3.0-3.4: compiled on first use (~0.1 ms of every start)


def _record_header() -> re.Pattern[bytes]:
    global _RECORD_HEADER
    if _RECORD_HEADER is None:  # (two threads at once both compile it; each gets a whole pattern)
        _RECORD_HEADER = re.compile(rb"[\x14-\x18]\x03[\x00-\x04]")
    return _RECORD_HEADER


def record_chain(buf, p: int = 0) -> tuple[int, bool]:
    """Position in ``buf`` (from ``p``) of the next plausible record header: a content type,
    version 3.x and a length within the limit, followed by another such header or the end of the
    data.  ``(pos, True)``; else ``(pos, False)`` where pos is where to wait for more bytes (a
    header whose record runs past the data cannot be told yet).  Used after a gap, and when a
    capture begins inside a record."""
    n = len(buf)
    header = _record_header()
    for m in header.finditer(buf, p):  # (two headers cannot overlap: no match is lost)
        q = m.start()
        if q + 5 > n:
            break
        ln = buf[q + 3] << 8 | buf[q + 4]
        if 0 < ln <= MAX_RECORD:
            e = q + 5 + ln
            if e == n:
                return q, True
            if e + 3 > n:
                return q, False  # cannot tell yet
            if header.match(buf, e):
                return q, True
    return max(p, n - 4), False


class RecordReader:
    """One direction of a TLS byte stream -> records.  ``feed(data, offset, packet)`` returns
    the records completed by these bytes.  After a gap (``gap()``) or a malformed header the
    reader looks for the next plausible record header (``resync``) and counts what it skipped.

    While the stream is record-aligned, the bytes of an incomplete record are held as the
    chunks that brought them (``parts``: the TCP payloads, immutable, never copied) and joined
    once, when the record is whole; record bodies are views of that one copy (or of the chunk
    itself for a record wholly inside one).  The general path (the first record, which may be an
    SSLv2 hello, a malformed header, resynchronisation) buffers in ``buf`` as before."""

    __slots__ = ("buf", "start", "chunks", "error", "skipped", "first", "lost", "want", "parts", "held")

    MAX_PARTS = 64  # chunks held before they are joined (a record in 1-byte segments: bounded objects)

    def __init__(self):
        self.want = 0  # bytes the buffered record needs before parsing is worth trying again
        self.buf = bytearray()
        self.start = 0  # stream offset of buf[0] (or of parts[0][0])
        self.chunks: list[tuple[int, int]] = []  # (stream offset, packet) of chunks in buf (or parts)
        self.error: str | None = None  # why the stream is not record-aligned (None = aligned)
        self.skipped = 0
        self.first = True
        self.lost = False
        self.parts: list = []  # aligned: the chunks holding an incomplete record (buf is then empty)
        self.held = 0  # bytes in parts

    def _packet_at(self, off: int) -> int:
        pk = self.chunks[0][1]
        for o, p in self.chunks:
            if o > off:
                break
            pk = p
        return pk

    def gap(self, offset: int, length: int) -> None:
        self.want = 0
        self.buf.clear()
        self.parts.clear()
        self.held = 0
        self.chunks.clear()
        self.start = offset + length
        self.lost = True

    def feed(self, data, offset: int, packet: int) -> list[Record]:
        at = self.start + self.held + len(self.buf)
        if offset != at:  # defensive: treat as a gap
            self.gap(at, offset - at)
        if self.first or self.lost or self.buf:
            return self._feed(data, offset, packet)
        if type(data) is not bytes and not (type(data) is memoryview and data.readonly):
            data = bytes(data)  # (held and viewed below: only an immutable chunk may be)
        parts = self.parts
        joined = bool(parts)
        if joined:
            self.chunks.append((offset, packet))
            parts.append(data)
            self.held += len(data)
            if self.held < self.want:
                if len(parts) >= self.MAX_PARTS:
                    parts[:] = [b"".join(parts)]
                return []
            data = b"".join(parts)
            parts.clear()
            self.held = 0
            offset = self.start
        out: list[Record] = []
        mv = memoryview(data)
        n = len(mv)
        p = 0
        # (a record wholly inside one chunk was never held to the length limit: as before)
        limit = MAX_RECORD if joined else 0xFFFF
        while n - p >= 5:
            t = mv[p]
            if not (20 <= t <= 24) or mv[p + 1] != 3:
                break
            ln = mv[p + 3] << 8 | mv[p + 4]
            if n - p - 5 < ln or ln > limit:
                break
            off = offset + p
            out.append(Record(t, mv[p + 1] << 8 | mv[p + 2], mv[p + 5 : p + 5 + ln], off,
                              self._packet_at(off) if joined else packet, packet, False, mv[p : p + 5]))
            p += 5 + ln
        if p == n:
            self.start = offset + n
            self.chunks.clear()
            return out
        self.start = cut = offset + p
        ch = self.chunks
        if joined:
            i = 0
            while i + 1 < len(ch) and ch[i + 1][0] <= cut:
                i += 1
            if i:
                del ch[:i]
        else:
            ch.append((offset, packet))
        if n - p >= 5:
            t = mv[p]
            ln = mv[p + 3] << 8 | mv[p + 4]
            if not (20 <= t <= 24) or mv[p + 1] != 3 or ln > MAX_RECORD:
                self.buf += mv[p:]  # not a record header: the general path says so and resyncs
                self.want = 0
                return out + self._feed(b"", offset + n, packet)
            self.want = 5 + ln
        else:
            self.want = 5
        parts.append(mv[p:])
        self.held = n - p
        return out

    def _feed(self, data, offset: int, packet: int) -> list[Record]:
        """The general path (``feed``)."""
        out: list[Record] = []
        buf = self.buf
        if self.want:
            # a record is still incomplete (MTU-sized segments of a 16 KB record): buffer
            # these bytes and parse only once the record can be whole
            self.chunks.append((offset, packet))
            buf += data
            if len(buf) < self.want:
                return out
            self.want = 0
            data = b""
        if not buf and not self.lost:
            # fast path: records wholly inside this chunk need no copy into the buffer
            mv = memoryview(data)
            n = len(mv)
            p = 0
            while n - p >= 5:
                t = mv[p]
                if not (20 <= t <= 24) or mv[p + 1] != 3:
                    break
                ln = mv[p + 3] << 8 | mv[p + 4]
                if n - p - 5 < ln:
                    break
                out.append(Record(t, mv[p + 1] << 8 | mv[p + 2], mv[p + 5 : p + 5 + ln], offset + p, packet, packet))
                p += 5 + ln
            self.first = self.first and p == 0
            if p == n:
                self.start = offset + n
                return out
            data = mv[p:]
            offset += p
        if not buf:
            self.start = offset
        if data:
            self.chunks.append((offset, packet))
            buf += data
        p = 0
        n = len(buf)
        while True:
            if self.lost:
                q, found = self._resync(p)
                self.skipped += q - p
                p = q
                if not found:
                    break
                self.lost = False
            if n - p < 5:
                break
            t = buf[p]
            if self.first and t & 0x80 and n - p >= 3 and buf[p + 2] == 1:  # SSLv2-compatible ClientHello
                ln = (buf[p] & 0x7F) << 8 | buf[p + 1]
                if n - p - 2 < ln:
                    break
                off = self.start + p
                out.append(Record(HANDSHAKE, 0x0002, bytes(buf[p : p + 2 + ln]), off, self._packet_at(off), packet, True))
                p += 2 + ln
                self.first = False
                continue
            if not (20 <= t <= 24) or buf[p + 1] != 3:
                self.error = f"not a TLS record header at stream offset {self.start + p}"
                self.lost = True
                p += 1
                continue
            ln = buf[p + 3] << 8 | buf[p + 4]
            if ln > MAX_RECORD:
                self.error = f"record of {ln} bytes at stream offset {self.start + p} exceeds the TLS limit"
                self.lost = True
                p += 1
                continue
            if n - p - 5 < ln:
                self.want = 5 + ln  # the record starts at buf[0] once the bytes before it are cut
                break
            off = self.start + p
            with memoryview(buf) as v:  # one copy of the body (a bytearray slice, then bytes, is two)
                body = v[p + 5 : p + 5 + ln].tobytes()
            out.append(Record(t, buf[p + 1] << 8 | buf[p + 2], body, off, self._packet_at(off), packet))
            p += 5 + ln
            self.first = False
        if p:
            del buf[:p]
            self.start += p
            cut = self.start
            ch = self.chunks
            i = 0
            while i + 1 < len(ch) and ch[i + 1][0] <= cut:
                i += 1
            if i:
                del ch[:i]
        if not buf:
            self.chunks.clear()
        elif not self.lost and not self.first:
            # aligned again, inside a record: its bytes so far go to parts (one copy) and the
            # next chunks are held, not appended
            self.parts.append(bytes(buf))
            self.held = len(buf)
            buf.clear()
            if not self.want:
                self.want = 5
        return out

    def _resync(self, p: int) -> tuple[int, bool]:
        return record_chain(self.buf, p)
