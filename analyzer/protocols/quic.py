"""QUIC in the packet list: tshark's Info of a datagram is its last QUIC packet's (tshark's
column keeps only the last of coalesced packets): ``Initial, DCID=…, SCID=…, PKN: 0, CRYPTO,
PADDING`` or ``Protected Payload (KP0), DCID=…, PKN: 5, ACK, STREAM(0), HEADERS`` — frames in
wire order, not collapsed, with tshark's short names (``DONE``, ``NCI``, ``SB`` …) and the
HTTP/3 frames tshark names (HEADERS, SETTINGS, PRIORITY_UPDATE, …) after the STREAM frame
carrying them.

The QUIC packet header is read here, once, by ``parse_headers``: each packet of a datagram as a
``QuicHeader`` whose ``HeaderField``s are tshark's fields with their bytes.  The Info column, the
detail tree (``header_nodes``) and the display-filter fields (analyzer/fields/quic.py) are made
of it."""
from __future__ import annotations

from bisect import insort
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from wirefall.analyzer.model import Analysis, Frame
from wirefall.dissectors.quic_varint import quic_varint

if TYPE_CHECKING:
    from wirefall.analyzer.detail import Node

# tshark's short frame names in the Info column (packet-quic.c, dissect_quic_frame_type)
QUIC_SHORT = {
    "RESET_STREAM": "RS", "STOP_SENDING": "SS", "NEW_TOKEN": "NT", "MAX_DATA": "MD", "MAX_STREAM_DATA": "MSD",
    "MAX_STREAMS": "MS", "DATA_BLOCKED": "DB", "STREAM_DATA_BLOCKED": "SDB", "STREAMS_BLOCKED": "SB",
    "NEW_CONNECTION_ID": "NCI", "RETIRE_CONNECTION_ID": "RC", "PATH_CHALLENGE": "PC", "PATH_RESPONSE": "PR",
    "CONNECTION_CLOSE": "CC", "HANDSHAKE_DONE": "DONE", "DATAGRAM": "DG", "ACK_FREQUENCY": "ACK_FREQ",
}
# frames whose stream ID tshark writes after the short name, as for STREAM: "RS(4)", "MSD(8)"
QUIC_WITH_STREAM = frozenset({"STREAM", "RESET_STREAM", "STOP_SENDING", "MAX_STREAM_DATA", "STREAM_DATA_BLOCKED"})
# wirefall's frames for a whole packet it did not read frame by frame: nothing in the Info
QUIC_NO_FRAMES = frozenset({"PROTECTED", "RETRY", "VERSION_NEGOTIATION"})
# HTTP/3 frames tshark names in the Info column where they begin; DATA only when it also ends in
# that packet (amazon1 485: "STREAM(0), HEADERS, DATA"), not where it continues or ends, nor one
# the capture cuts
H3_NAMED = {"HEADERS", "DATA", "SETTINGS", "PRIORITY_UPDATE", "MAX_PUSH_ID", "GOAWAY", "CANCEL_PUSH", "PUSH_PROMISE"}
H3_UNKNOWN: set[str] = set()  # (reserved GREASE frames: tshark writes nothing for them on a request or control stream)
_LONG_TYPES = {0: "Initial", 1: "0-RTT", 2: "Handshake", 3: "Retry"}


# QUIC's variable-length integer: (value, offset after it), IndexError where the bytes cut it —
# the one reader (dissectors/quic_varint.py) under the name the QUIC and HTTP/3 detail and
# fields (protocols.http3, fields.quic, fields.tls) import it by
_varint = quic_varint


# ---------------------------------------------------------------- the packet header: one parser
#
# ``parse_headers`` is the one reading of QUIC packet headers above the dissector (which reads
# them too, interleaved with its keys and state, while decrypting): the display-filter fields
# (analyzer/fields/quic.py), the Info column (``datagram_info``) and the detail tree
# (``header_nodes``) are all made of its ``QuicHeader``s.

V1, V2 = 0x00000001, 0x6B3343CF
_V2_TYPES = {1: 0, 2: 1, 3: 2, 0: 3}  # QUIC v2 packet type bits -> v1 type
RETRY, VERSION_NEGOTIATION, ONE_RTT, PADDING = _LONG_TYPES[3], "Version Negotiation", "1-RTT", "Padding"
MAX_COALESCED = 16  # QUIC packets read from one datagram


class HeaderField(NamedTuple):
    """One field of a QUIC packet header, named as tshark names it, with its bytes."""

    name: str  # tshark's field: "quic.dcid"
    offset: int  # its first byte in the UDP payload
    length: int  # its bytes: 1 for a bit field of the first byte, 0 for a computed one ([Packet Length])
    value: int | bytes | None  # a number; bytes (IDs, tokens, the Retry tag); None for quic.short (a subtree)


class Decrypted(NamedTuple):
    """What decrypting a packet told about its header, which header protection hides from a
    parse: the first byte's low bits, the packet number and (short header) where the DCID ends."""

    hdr_len: int  # header length up to and including the packet number
    pn_len: int
    pn: int
    first_byte: int | None  # the first byte without header protection (None: not at hand)


class QuicHeader(NamedTuple):
    """One QUIC packet of a UDP payload, or the padding after the last one: its bytes
    ``[start, end)`` in the payload, its type, version and connection IDs, and its header's
    fields in tshark's order."""

    start: int
    end: int
    kind: str  # "Initial", "0-RTT", "Handshake", "Retry", "Version Negotiation", "1-RTT" or "Padding"
    version: int | None  # a long header's (0: Version Negotiation); None: short header, padding
    dcid: bytes
    scid: bytes  # (b"": short header, padding)
    # A Padding header's fields are what tshark 4.0 shows for those bytes: nothing, or — bytes
    # with the fixed bit clear that begin with the first packet's DCID — a short header
    # (tshark 4.2 calls them padding)
    fields: tuple[HeaderField, ...]

    def get(self, name: str, default: Any = None) -> Any:
        """The value of the header's first field ``name``."""
        for f in self.fields:
            if f.name == name:
                return f.value
        return default


# The display filter parses the datagram of every packet it reads, nearly all of them one short
# header: all the parse sees of one (the datagram's length, the fixed and spin bits, the DCID)
# repeats from packet to packet, so its QuicHeader (immutable) is made once and shared: ~0.35 us
# a short header, as the filter's dicts before this parser, instead of ~0.8 (at most _SHORT_MAX
# of them kept, ~0.9 kB each).  The fields are made by tuple.__new__, without the Python call of
# a NamedTuple's __new__ (~0.12 us a field instead of ~0.3: an Initial in ~3.6 us, not ~4.7).
_new = tuple.__new__
_SHORT: dict[tuple[int, int, bytes], QuicHeader] = {}
_SHORT_MAX = 4096


def _fields(f: list[tuple[str, int, int, int | bytes | None]]) -> tuple[HeaderField, ...]:
    return tuple([_new(HeaderField, x) for x in f])


def _short_fields(payload: bytes, p: int, dcid: bytes, row: Decrypted | None) -> tuple[HeaderField, ...]:
    n, b0 = len(payload), payload[p]
    f: list[tuple[str, int, int, int | bytes | None]] = [
        ("quic.packet_length", p, 0, n - p), ("quic.short", p, n - p, None), ("quic.header_form", p, 1, 0),
        ("quic.fixed_bit", p, 1, (b0 >> 6) & 1), ("quic.spin_bit", p, 1, (b0 >> 5) & 1)]
    fb = row.first_byte if row is not None else None
    if fb is not None:
        f += (("quic.short.reserved", p, 1, (fb >> 3) & 3), ("quic.key_phase", p, 1, (fb >> 2) & 1), ("quic.packet_number_length", p, 1, fb & 3))
    if dcid:
        f.append(("quic.dcid", p + 1, len(dcid), dcid))
    if row is not None:
        f.append(("quic.packet_number", p + 1 + len(dcid), row.pn_len, row.pn))
    return _fields(f)


def _long_header(payload: bytes, p: int, dcid: bytes, row: Decrypted | None) -> QuicHeader | None:
    """The long header at ``p``; None where the capture cut it (before the end of its source
    connection ID, or of an Initial, 0-RTT or Handshake packet's Length: tshark 4.0 shows no
    header fields there either)."""
    n = len(payload)
    b0 = payload[p]
    dl = len(dcid)
    q = p + 6 + dl
    if q >= n:
        return None
    sl = payload[q]
    s0 = q + 1
    q = s0 + sl
    if q > n:
        return None
    ver = int.from_bytes(payload[p + 1 : p + 5], "big")
    scid = payload[s0:q]
    # (the first field, [Packet Length], is known at the end)
    f: list[tuple[str, int, int, int | bytes | None]] = [("quic.packet_length", p, 0, 0), ("quic.header_form", p, 1, 1)]
    if ver == 0:
        kind, t = VERSION_NEGOTIATION, -1
        f.append(("quic.vn.unused", p, 1, b0 & 0x7F))
    else:
        bits = (b0 >> 4) & 3
        t = _V2_TYPES[bits] if ver == V2 else bits
        kind = _LONG_TYPES[t]
        if t != 3:  # (tshark shows no Fixed Bit on a Retry)
            f.append(("quic.fixed_bit", p, 1, (b0 >> 6) & 1))
        f.append(("quic.long.packet_type_v2" if ver == V2 else "quic.long.packet_type", p, 1, bits))
        fb = row.first_byte if row is not None else None
        if fb is not None and t != 3:
            f += (("quic.long.reserved", p, 1, (fb >> 2) & 3), ("quic.packet_number_length", p, 1, fb & 3))
    f += (("quic.version", p + 1, 4, ver), ("quic.dcil", p + 5, 1, dl))
    if dl:
        f.append(("quic.dcid", p + 6, dl, dcid))
    f.append(("quic.scil", s0 - 1, 1, sl))
    if sl:
        f.append(("quic.scid", s0, sl, scid))
    end = n
    if ver == 0:  # the versions the server supports fill the datagram
        f += (("quic.supported_version", i, 4, int.from_bytes(payload[i : i + 4], "big")) for i in range(q, n - 3, 4))
    elif t == 3:  # Retry: its token (never empty, RFC 9000 §17.2.5.2), then the 16-byte integrity tag, end the datagram
        if n - 16 > q:
            f.append(("quic.retry_token", q, n - 16 - q, payload[q : n - 16]))
        if n - 16 >= q:
            f.append(("quic.retry_integrity_tag", n - 16, 16, payload[n - 16 : n]))
    else:
        if t == 0:
            tl, q2 = _varint(payload, q)
            f.append(("quic.token_length", q, q2 - q, tl))
            if tl:
                f.append(("quic.token", q2, tl, payload[q2 : q2 + tl]))
            q = q2 + tl
        ln, q2 = _varint(payload, q)
        f.append(("quic.length", q, q2 - q, ln))
        if row is not None:
            f.append(("quic.packet_number", q2, row.pn_len, row.pn))
        end = min(q2 + ln, n)
    f[0] = ("quic.packet_length", p, 0, end - p)
    return _new(QuicHeader, (p, end, kind, ver, dcid, scid, _fields(f)))


def parse_headers(payload: bytes, short_cid: int | None, decrypted: Mapping[int, Decrypted] | None = None) -> list[QuicHeader]:
    """The header of each QUIC packet coalesced in one UDP payload, in order, each with its
    fields and their bytes; then, if bytes follow that are not a QUIC packet, a ``Padding``
    header for them.  ``short_cid``: the DCID length of a short header the analysis did not
    decrypt; ``decrypted``: offset in the payload -> ``Decrypted``, for the packets it did (a
    short header's DCID length, and the fields header protection hides: reserved bits, key
    phase, packet number length and packet number).

    After the first packet, bytes whose DCID is not the first packet's (RFC 9000 §12.2), or
    whose fixed bit is clear (§17), end the QUIC packets: padding (tshark 4.0: "coalesced padding
    data"; but it reads bytes with the fixed bit clear and that DCID as a short header — such a
    Padding header carries those fields; tshark 4.2 calls them padding)."""
    if type(payload) is not bytes:  # (the IDs and tokens are bytes, and a short header's DCID a key of _SHORT)
        payload = bytes(payload)
    n = len(payload)
    if n and not payload[0] & 0x80:  # a short header (nearly every packet): the whole datagram
        row = decrypted.get(0) if decrypted else None
        cl = row.hdr_len - 1 - row.pn_len if row is not None else short_cid
        dcid = payload[1 : 1 + cl] if cl and cl > 0 else b""
        if row is not None:
            return [QuicHeader(0, n, ONE_RTT, None, dcid, b"", _short_fields(payload, 0, dcid, row))]
        key = (n, payload[0] & 0x60, dcid)
        h = _SHORT.get(key)
        if h is None:
            if len(_SHORT) >= _SHORT_MAX:
                _SHORT.clear()
            h = _SHORT[key] = QuicHeader(0, n, ONE_RTT, None, dcid, b"", _short_fields(payload, 0, dcid, None))
        return [h]
    out: list[QuicHeader] = []
    p = 0
    first_dcid = b""
    while p < n and len(out) < MAX_COALESCED:
        b0 = payload[p]
        row = decrypted.get(p) if decrypted else None
        if b0 & 0x80:
            if p + 6 > n:  # too short for a long header
                if p:
                    out.append(_new(QuicHeader, (p, n, PADDING, None, b"", b"", ())))
                break
            dcid = payload[p + 6 : p + 6 + payload[p + 5]]
        else:
            cl = row.hdr_len - 1 - row.pn_len if row is not None else short_cid
            dcid = payload[p + 1 : p + 1 + cl] if cl and cl > 0 else b""
        if p and (dcid != first_dcid or not b0 & 0x40):
            as_short = dcid == first_dcid and not b0 & 0x80
            out.append(_new(QuicHeader, (p, n, PADDING, None, b"", b"", _short_fields(payload, p, dcid, None) if as_short else ())))
            break
        if not b0 & 0x80:
            out.append(_new(QuicHeader, (p, n, ONE_RTT, None, dcid, b"", _short_fields(payload, p, dcid, row))))
            break
        try:
            h = _long_header(payload, p, dcid, row)
        except IndexError:  # (a Token Length or Length the capture cut)
            h = None
        if h is None:
            break
        out.append(h)
        if not p:
            first_dcid = dcid
        if h.kind in (VERSION_NEGOTIATION, RETRY):
            break
        p = h.end
    return out


def _last_quic_header(payload: bytes, rows: list[tuple[int, int, int, int, int]], short_cid: int | None = None) -> str | None:
    """tshark's header text of the datagram's last QUIC packet: ``Initial, DCID=…, SCID=…``
    or ``Protected Payload (KP0), DCID=…``.  ``rows``: (offset, hdr_len, pn_len, key phase,
    packet number) of the decrypted packets."""
    heads = [h for h in parse_headers(payload, short_cid, {r[0]: Decrypted(r[1], r[2], r[4], None) for r in rows}) if h.kind != PADDING]
    if not heads:
        return None
    h = heads[-1]
    if h.kind == VERSION_NEGOTIATION:  # (tshark writes both IDs, empty or not)
        return f"Version Negotiation, DCID={h.dcid.hex()}, SCID={h.scid.hex()}"
    if h.version is not None:
        return h.kind + (f", DCID={h.dcid.hex()}" if h.dcid else "") + (f", SCID={h.scid.hex()}" if h.scid else "")
    kp = next((r[3] for r in rows if r[0] == h.start), 0)
    return f"Protected Payload (KP{kp})" + (f", DCID={h.dcid.hex()}" if h.dcid else "")


def short_dcid_len(analysis: Analysis, frames: list[Frame]) -> int | None:
    """The DCID length of a short header wirefall did not decrypt (``frames``: the datagram's):
    that of this direction's other 1-RTT packets, else the length of the ID the peer gave in its
    long headers, as tshark takes it."""
    if not frames:
        return None
    recs = getattr(analysis, "quic_packets", None) or {}
    tab = recs.get((frames[0].connection, frames[0].direction))
    if tab is not None:
        k = next((i for i in range(min(len(tab), 64)) if tab.epoch(i) == 3), None)
        if k is not None:
            return tab.hdr_len[k] - 1 - tab.pn_len(k)
    if 0 <= frames[0].connection < len(analysis.connections):
        qi = analysis.connections[frames[0].connection].quic
        peer = (qi.server_scid if frames[0].direction == 0 else qi.scid) if qi is not None else None
        if peer:
            return len(peer) // 2
    return None


def datagram_info(analysis: Analysis, n: int, payload: bytes, frames: list[Frame], spanning: list[Frame] | None = None) -> str | None:
    """tshark's Info of a QUIC datagram (None: not a datagram wirefall decoded as QUIC).
    ``frames``: the frames completing on packet ``n``; ``spanning``: every frame with a byte
    on it (HTTP/3 frames are named where they begin, as tshark does)."""
    from wirefall.analyzer.detail import quic_packets_on_packet

    rows = quic_packets_on_packet(analysis, n)
    recs = getattr(analysis, "quic_packets", None) or {}
    info_rows = []
    for cid, d, i in rows:
        tab = recs[(cid, d)]
        info_rows.append((tab.offset[i], tab.hdr_len[i], tab.pn_len(i), (tab.flags[i] >> 4) & 1, tab.pn[i]))
    short_cid = short_dcid_len(analysis, frames) if frames and not info_rows else None
    head = _last_quic_header(payload, info_rows, short_cid)
    if head is None:
        return None
    q = [fr for fr in frames if fr.protocol == "quic"]
    if not q:
        return head
    last_key = ((q[-1].fields or {}).get("packet_type"), (q[-1].fields or {}).get("packet_number"))
    mine = [fr for fr in q if ((fr.fields or {}).get("packet_type"), (fr.fields or {}).get("packet_number")) == last_key]
    parts = [head]
    if last_key[1] is not None and mine and mine[0].type != "PROTECTED":
        parts.append(f"PKN: {last_key[1]}")
    h3 = [fr for fr in (spanning if spanning is not None else frames)
          if fr.protocol == "h3" and fr.first_packet == n and fr.type in H3_NAMED
          and (fr.type != "DATA" or fr.packet == n and fr.error is None)]  # (error: cut by the stream's or capture's end)
    for fr in mine:
        if fr.type in QUIC_NO_FRAMES:
            continue
        name = QUIC_SHORT.get(fr.type, fr.type)
        parts.append(f"{name}({fr.stream_id})" if fr.type in QUIC_WITH_STREAM and fr.stream_id is not None else name)
        if fr.type == "STREAM":
            for h in [h for h in h3 if h.stream_id == fr.stream_id]:
                parts.append("Unknown" if h.type in H3_UNKNOWN else h.type)
                h3.remove(h)
    return ", ".join(parts)


# ---------------------------------------------------------------- detail tree: headers, error codes

# RFC 9000 §20.1 (packet-quic.c quic_transport_error_code_vals); 0x100-0x1ff CRYPTO_ERROR
TRANSPORT_ERRORS = {
    0x00: "NO_ERROR", 0x01: "INTERNAL_ERROR", 0x02: "CONNECTION_REFUSED", 0x03: "FLOW_CONTROL_ERROR", 0x04: "STREAM_LIMIT_ERROR",
    0x05: "STREAM_STATE_ERROR", 0x06: "FINAL_SIZE_ERROR", 0x07: "FRAME_ENCODING_ERROR", 0x08: "TRANSPORT_PARAMETER_ERROR",
    0x09: "CONNECTION_ID_LIMIT_ERROR", 0x0A: "PROTOCOL_VIOLATION", 0x0B: "INVALID_TOKEN", 0x0C: "APPLICATION_ERROR",
    0x0D: "CRYPTO_BUFFER_EXCEEDED", 0x0E: "KEY_UPDATE_ERROR", 0x0F: "AEAD_LIMIT_REACHED", 0x10: "NO_VIABLE_PATH",
}
# RFC 9114 §8.1 and RFC 9204 §6: the application error codes of an HTTP/3 connection (tshark 4.0
# shows the number only: the name is wirefall's, in the label; the field's value is the number)
H3_ERRORS = {
    0x100: "H3_NO_ERROR", 0x101: "H3_GENERAL_PROTOCOL_ERROR", 0x102: "H3_INTERNAL_ERROR", 0x103: "H3_STREAM_CREATION_ERROR",
    0x104: "H3_CLOSED_CRITICAL_STREAM", 0x105: "H3_FRAME_UNEXPECTED", 0x106: "H3_FRAME_ERROR", 0x107: "H3_EXCESSIVE_LOAD",
    0x108: "H3_ID_ERROR", 0x109: "H3_SETTINGS_ERROR", 0x10A: "H3_MISSING_SETTINGS", 0x10B: "H3_REQUEST_REJECTED",
    0x10C: "H3_REQUEST_CANCELLED", 0x10D: "H3_REQUEST_INCOMPLETE", 0x10E: "H3_MESSAGE_ERROR", 0x10F: "H3_CONNECT_ERROR",
    0x110: "H3_VERSION_FALLBACK", 0x200: "QPACK_DECOMPRESSION_FAILED", 0x201: "QPACK_ENCODER_STREAM_ERROR",
    0x202: "QPACK_DECODER_STREAM_ERROR",
}


def transport_error_name(code: int) -> str:
    if 0x100 <= code <= 0x1FF:
        return "CRYPTO_ERROR"
    return TRANSPORT_ERRORS.get(code, "Unknown")


# packet-quic.c's quic_version_vals (a range string): (first, last, words)
QUIC_VERSIONS = (
    (0x00000000, 0x00000000, "Version Negotiation"), (0x00000001, 0x00000001, "1"), (0x45474700, 0x454747FF, "Quant"),
    (0x50435130, 0x50435131, "Picoquic internal"), (0x50524F58, 0x50524F58, "Proxied QUIC (PROX)"),
    (0x51303433, 0x51303433, "Google Q043"), (0x51303434, 0x51303434, "Google Q044"), (0x51303436, 0x51303436, "Google Q046"),
    (0x51303530, 0x51303530, "Google Q050"), (0x51474F00, 0x51474FFF, "QGO (QUIC GO)"), (0x54303530, 0x54303530, "Google T050"),
    (0x54303531, 0x54303531, "Google T051"), (0x91C17000, 0x91C170FF, "Quicly"), (0xABCD0000, 0xABCD000F, "MsQuic"),
    (0xF0F0F0F0, 0xF0F0F0FF, "ETH Z\u00fcrich (Measurability experiments)"),
    (0xF0F0F1F0, 0xF0F0F1FF, "Telecom Italia (Measurability experiments)"), (0xF123F0C0, 0xF123F0CF, "MozQuic"),
    (0xFACEB001, 0xFACEB001, "Facebook mvfst (draft-22)"), (0xFACEB002, 0xFACEB002, "Facebook mvfst (draft-27)"),
    (0xFACEB003, 0xFACEB00D, "Facebook mvfst"), (0xFACEB00E, 0xFACEB00E, "Facebook mvfst (Experimental)"),
    (0xFACEB00F, 0xFACEB00F, "Facebook mvfst"),
    *((0xFF000000 + k, 0xFF000000 + k, f"draft-{k:02d}") for k in range(4, 35)),
    (0xFF020000, 0xFF020000, "v2-draft-00"), (0x709A50C4, 0x709A50C4, "v2-draft-01"), (0x6B3343CF, 0x6B3343CF, "2"),
)




def version_words(v: int) -> str:
    """A QUIC version's words in tshark 4.0's table (``QUIC_VERSIONS``): ``1``, ``draft-29``,
    ``Google Q050``, ``Unknown``."""
    return next((w for lo, hi, w in QUIC_VERSIONS if lo <= v <= hi), "Unknown")


def version_label(v: int) -> str:
    """tshark's Version text: ``1 (0x00000001)``, ``draft-29 (0xff00001d)``."""
    if v == 0:
        return "Version Negotiation (0x00000000)"
    name = "1" if v == V1 else "2" if v == V2 else f"draft-{v & 0xFF:02d}" if v >> 8 == 0xFF0000 else "Unknown"
    return f"{name} (0x{v:08x})"


def _colon(b: bytes) -> str:
    return ":".join(f"{x:02x}" for x in b)


def _hv(b: bytes, limit: int = 36) -> str:
    h = b.hex()
    return h if len(h) <= 2 * limit else h[: 2 * limit] + "…"


# tshark's label of each header field (``h``: its header), and its value as PDML's "show" (``field_show``)
_LABELS: dict[str, Callable[[Any, QuicHeader], str]] = {
    "quic.packet_length": lambda v, h: f"[Packet Length: {v}]",
    "quic.short": lambda v, h: "QUIC Short Header" + (f" DCID={h.dcid.hex()}" if h.dcid else "")
    + (f" PKN={pn}" if (pn := h.get("quic.packet_number")) is not None else ""),
    "quic.header_form": lambda v, h: "1... .... = Header Form: Long Header (1)" if v else "0... .... = Header Form: Short Header (0)",
    "quic.vn.unused": lambda v, h: f"Unused: 0x{v:02x}",
    "quic.fixed_bit": lambda v, h: f".{v}.. .... = Fixed Bit: {bool(v)}",
    "quic.spin_bit": lambda v, h: f"..{v}. .... = Spin Bit: {bool(v)}",
    "quic.long.packet_type": lambda v, h: f"Packet Type: {h.kind} ({v})",
    "quic.long.packet_type_v2": lambda v, h: f"Packet Type: {h.kind} ({v})",
    "quic.long.reserved": lambda v, h: f"Reserved: {v}",
    "quic.short.reserved": lambda v, h: f"Reserved: {v}",
    "quic.key_phase": lambda v, h: f"Key Phase Bit: {bool(v)}",
    "quic.packet_number_length": lambda v, h: f"Packet Number Length: {v + 1} bytes ({v})",
    "quic.version": lambda v, h: f"Version: {version_label(v)}",
    "quic.dcil": lambda v, h: f"Destination Connection ID Length: {v}",
    "quic.dcid": lambda v, h: f"Destination Connection ID: {v.hex()}",
    "quic.scil": lambda v, h: f"Source Connection ID Length: {v}",
    "quic.scid": lambda v, h: f"Source Connection ID: {v.hex()}",
    "quic.supported_version": lambda v, h: f"Supported Version: {version_label(v)}",
    "quic.retry_token": lambda v, h: f"Retry Token: {_hv(v)}",
    "quic.retry_integrity_tag": lambda v, h: f"Retry Integrity Tag: {v.hex()}",
    "quic.token_length": lambda v, h: f"Token Length: {v}",
    "quic.token": lambda v, h: f"Token: {_hv(v)}",
    "quic.length": lambda v, h: f"Length: {v}",
    "quic.packet_number": lambda v, h: f"Packet Number: {v}",
}
HEADER_FIELDS = frozenset(_LABELS)  # every field parse_headers gives
# the fields only a decrypted packet has (header protection hides them)
PROTECTED_FIELDS = frozenset({"quic.long.reserved", "quic.short.reserved", "quic.key_phase", "quic.packet_number_length", "quic.packet_number"})
_HEX_SHOWN = {"quic.version": "0x{:08x}", "quic.supported_version": "0x{:08x}", "quic.vn.unused": "0x{:02x}"}


def field_show(f: HeaderField) -> str:
    """A header field's value as tshark's PDML shows it (``show``): ``0x00000001``, ``8``,
    ``aa:bb:…``."""
    v = f.value
    if v is None:
        return ""
    if isinstance(v, bytes):
        return _colon(v)
    fmt = _HEX_SHOWN.get(f.name)
    return fmt.format(v) if fmt else str(v)


def header_nodes(payload: bytes, base: int, rows: dict, short_cid: int | None) -> list[tuple[int, int, str, Node]]:
    """One header node per QUIC packet of a UDP payload (coalesced packets each their own), with
    tshark's fields and byte ranges (``base``: the payload's position in the packet):
    ``(start, end, packet type, node)`` in datagram order, made of ``parse_headers``.  ``rows``:
    offset in the payload -> ``(header length, packet number length, packet number, first byte
    without header protection or None)`` of the packets the analysis decrypted; the reserved
    bits, the packet number length and the packet number are shown only for those, as tshark
    does.  Bytes after the packets that are not one end in a padding node (its fields not
    shown: tshark 4.0 shows a short header where their fixed bit is clear and they begin with the
    first packet's DCID, 4.2 padding)."""
    from wirefall.analyzer.detail import Node

    out: list[tuple[int, int, str, Node]] = []
    n = len(payload)
    for h in parse_headers(payload, short_cid, {k: Decrypted(*v) for k, v in rows.items()}):
        p = h.start
        if h.kind == PADDING:
            why = "fixed bit clear" if not payload[p] & 0x40 else "not the first packet's connection ID"
            out.append((p, n, PADDING, Node(f"[Padding after the QUIC packets: {n - p} bytes ({why})]", [], base + p, base + n)))
            break
        if h.version is not None:
            node = parent = Node(f"QUIC Long Header: {h.kind}, version {version_label(h.version)}" + (f", DCID={h.dcid.hex()}" if h.dcid else "")
                                 + (f", SCID={h.scid.hex()}" if h.scid else ""), [], base + p, base + h.end)
        else:
            node = parent = Node(f"QUIC Short Header: 1-RTT, {n - p} bytes", [], base + p, base + n)
        for f in h.fields:
            leaf = parent.add(_LABELS[f.name](f.value, h), base + f.offset, base + f.offset + f.length, f.name, field_show(f))
            if f.name == "quic.short":  # the short header's own node (in the packet's) holds the fields after it
                parent = leaf
        out.append((p, h.end, h.kind, node))
    return out


# tshark's frame type words (packet-quic.c quic_frame_type_vals)
_FT_WORDS = {0x00: "PADDING", 0x01: "PING", 0x02: "ACK", 0x03: "ACK_ECN", 0x04: "RESET_STREAM", 0x05: "STOP_SENDING",
             0x06: "CRYPTO", 0x07: "NEW_TOKEN", **{t: "STREAM" for t in range(0x08, 0x10)}, 0x10: "MAX_DATA",
             0x11: "MAX_STREAM_DATA", 0x12: "MAX_STREAMS (BIDI)", 0x13: "MAX_STREAMS (UNI)", 0x14: "DATA_BLOCKED",
             0x15: "STREAM_DATA_BLOCKED", 0x16: "STREAMS_BLOCKED (BIDI)", 0x17: "STREAMS_BLOCKED (UNI)",
             0x18: "NEW_CONNECTION_ID", 0x19: "RETIRE_CONNECTION_ID", 0x1A: "PATH_CHALLENGE", 0x1B: "PATH_RESPONSE",
             0x1C: "CONNECTION_CLOSE (Transport)", 0x1D: "CONNECTION_CLOSE (Application)", 0x1E: "HANDSHAKE_DONE",
             0x30: "DATAGRAM", 0x31: "DATAGRAM"}


def frame_node(node: Node, fr: Frame) -> Node | None:
    """A decrypted QUIC frame as Wireshark's tree shows it (``quic.*``): ``STREAM id=3 fin=0
    off=0 len=12 dir=Unidirectional origin=Server-initiated``, ``ACK``, ``PADDING Length: 220``,
    its frame type (a STREAM frame's FIN/LEN/OFF bits), then its fields — ACK's largest
    acknowledged, delay, ranges and ECN counts, CRYPTO's and STREAM's offset and length, a
    stream's initiator and direction bits; the fields read from the frame's bytes (error codes,
    connection IDs, stream data) come after (``frame_field_nodes``).  wirefall's own facts
    (packet type and number, direction) in a ``[wirefall: …]`` node.  None (the generic node)
    for what is not a frame (a packet that could not be decrypted, Retry, Version Negotiation)."""
    from wirefall.analyzer.detail import bit_node, frame_facts_node

    f = fr.fields or {}
    t = f.get("frame_type")
    if not isinstance(t, int):
        return None
    word = _FT_WORDS.get(t, fr.type)
    ftl = node.add(f"Frame Type: {word} (0x{t:016x})", abbrev="quic.frame_type", value=str(t))
    skip = {"frame_type", "offset", "fin", "largest_acknowledged", "ack_delay", "ack_range_count", "ranges", "ecn"}
    title = word
    if t == 0x00:
        title = f"PADDING Length: {fr.length}"
        node.add(f"[Padding Length: {fr.length}]", abbrev="quic.padding_length", value=str(fr.length))
    elif t in (0x02, 0x03) and isinstance(f.get("largest_acknowledged"), int):
        largest = f["largest_acknowledged"]
        node.add(f"Largest Acknowledged: {largest}", abbrev="quic.ack.largest_acknowledged", value=str(largest))
        node.add(f"ACK Delay: {f.get('ack_delay')}", abbrev="quic.ack.ack_delay", value=str(f.get("ack_delay")))
        node.add(f"ACK Range Count: {f.get('ack_range_count')}", abbrev="quic.ack.ack_range_count", value=str(f.get("ack_range_count")))
        ranges = f.get("ranges") or []
        if ranges:
            lo, hi = ranges[0]
            node.add(f"First ACK Range: {hi - lo}", abbrev="quic.ack.first_ack_range", value=str(hi - lo))
            for (plo, _phi), (lo, hi) in zip(ranges, ranges[1:]):  # (the ranges the dissector kept: MAX_ACK_RANGES)
                node.add(f"Gap: {plo - hi - 2}", abbrev="quic.ack.gap", value=str(plo - hi - 2))
                node.add(f"ACK Range: {hi - lo}", abbrev="quic.ack.ack_range", value=str(hi - lo))
        ecn = f.get("ecn")
        if t == 0x03 and isinstance(ecn, (tuple, list)) and len(ecn) == 3:
            for w, ab, v in zip(("ECT0 Count", "ECT1 Count", "ECN-CE Count"), ("ect0_count", "ect1_count", "ecn_ce_count"), ecn):
                node.add(f"{w}: {v}", abbrev=f"quic.ack.{ab}", value=str(v))
    elif t == 0x06:
        off = f.get("offset")
        node.add(f"Offset: {off}", abbrev="quic.crypto.offset", value=str(off))
        node.add(f"Length: {fr.length}", abbrev="quic.crypto.length", value=str(fr.length))
        node.add("Crypto Data")  # (quic.crypto.crypto_data: not a field of wirefall's filter)
    elif 0x08 <= t <= 0x0F and fr.stream_id is not None:
        sid, off = fr.stream_id, f.get("offset") if isinstance(f.get("offset"), int) else max(fr.offset, 0)
        uni, server = sid & 0x2, sid & 0x1
        title = (f"STREAM id={sid} fin={1 if t & 0x1 else 0} off={off} len={fr.length} "
                 f"dir={'Unidirectional' if uni else 'Bidirectional'} origin={'Server' if server else 'Client'}-initiated")
        bit_node(ftl, t, 0x01, 8, "Fin", str(bool(t & 0x01)), abbrev="quic.stream.fin")
        bit_node(ftl, t, 0x02, 8, "Len(gth)", str(bool(t & 0x02)), abbrev="quic.stream.len")
        bit_node(ftl, t, 0x04, 8, "Off(set)", str(bool(t & 0x04)), abbrev="quic.stream.off")
        sn = node.add(f"Stream ID: {sid}", abbrev="quic.stream.stream_id", value=str(sid))
        bit_node(sn, sid, 0x1, 64, "Stream initiator", f"{'Server' if server else 'Client'}-initiated ({server})",
                 abbrev="quic.stream.initiator")
        bit_node(sn, sid, 0x2, 64, "Stream direction", f"{'Unidirectional' if uni else 'Bidirectional'} ({uni >> 1})",
                 abbrev="quic.stream.direction")
        if t & 0x04:
            node.add(f"Offset: {off}", abbrev="quic.stream.offset", value=str(off))
        if t & 0x02:
            node.add(f"Length: {fr.length}", abbrev="quic.stream.length", value=str(fr.length))
    elif t in (0x1C, 0x1D) and isinstance(f.get("error_code"), int):
        code = f["error_code"]
        title = f"{word} Error code: {transport_error_name(code) if t == 0x1C else code}"
    node.label = title
    node.abbrev = "quic.frame"
    node.children.append(frame_facts_node(fr, fr.type, f, skip))
    return node


def frame_field_nodes(fn: Node, fr: Frame, data: bytes, a: int, b: int, source: int, h3: bool,
                      level_frames: Callable[[], list[tuple[int, int, bytes]] | None] | None = None) -> None:
    """tshark's fields of a decrypted QUIC frame that carries error codes or connection IDs
    (RESET_STREAM, STOP_SENDING, CONNECTION_CLOSE, NEW_CONNECTION_ID, RETIRE_CONNECTION_ID),
    with their bytes in the "Decrypted QUIC" tab ``source`` (``data[a:b]``: the frame).
    ``h3``: the connection is HTTP/3 (application error codes are named)."""
    t = (fr.fields or {}).get("frame_type")
    if isinstance(t, int) and 0x08 <= t <= 0x0F and 0 <= a < b <= len(data) and 0 <= b - fr.length:
        from wirefall.analyzer.detail import Node as _Node, insert_before_facts

        sd = bytes(data[b - fr.length : b])
        # (quic.stream_data: not a field of wirefall's filter, the line is named by none)
        n = _Node(f"Stream Data: {_hv(sd)}" if sd else "Stream Data: <MISSING>", [], b - fr.length, b)
        n.source = source
        insert_before_facts(fn, [n])
        return
    if t == 0x06 and 0 <= a < b <= len(data):
        _crypto_handshake(fn, data, a, b, source, level_frames)
        return
    if t not in (0x04, 0x05, 0x18, 0x19, 0x1C, 0x1D) or not 0 <= a < b <= len(data):
        return
    kids: list = []

    def leaf(label: str, s: int, e: int, abbrev: str, value: str) -> None:
        n = fn.add(label, s, e, abbrev, value)
        n.source = source
        kids.append(n)

    def app(code: int) -> str:
        name = H3_ERRORS.get(code) if h3 else None
        return f"{name} ({code})" if name else str(code)

    try:
        _, q = _varint(data, a)
        if t in (0x04, 0x05):
            pre = "quic.rsts" if t == 0x04 else "quic.ss"
            sid, q2 = _varint(data, q)
            leaf(f"Stream ID: {sid}", q, q2, f"{pre}.stream_id", str(sid))
            code, q3 = _varint(data, q2)
            leaf(f"Application Error code: {app(code)}", q2, q3, f"{pre}.application_error_code", str(code))
            if t == 0x04:
                fs, q4 = _varint(data, q3)
                leaf(f"Final Size: {fs}", q3, q4, "quic.rsts.final_size", str(fs))
        elif t == 0x18:
            seq, q2 = _varint(data, q)
            leaf(f"Sequence: {seq}", q, q2, "quic.nci.sequence", str(seq))
            rpt, q3 = _varint(data, q2)
            leaf(f"Retire Prior To: {rpt}", q2, q3, "quic.nci.retire_prior_to", str(rpt))
            cl = data[q3]
            leaf(f"Connection ID Length: {cl}", q3, q3 + 1, "quic.nci.connection_id.length", str(cl))
            cid = data[q3 + 1 : q3 + 1 + cl]
            leaf(f"Connection ID: {cid.hex()}", q3 + 1, q3 + 1 + cl, "quic.nci.connection_id", _colon(cid))
            tok = data[q3 + 1 + cl : q3 + 17 + cl]
            leaf(f"Stateless Reset Token: {tok.hex()}", q3 + 1 + cl, q3 + 17 + cl, "quic.nci.stateless_reset_token", _colon(tok))
        elif t == 0x19:
            seq, q2 = _varint(data, q)
            leaf(f"Sequence: {seq}", q, q2, "quic.rci.sequence", str(seq))
        else:
            code, q2 = _varint(data, q)
            if t == 0x1C:
                leaf(f"Error code: {transport_error_name(code)} ({code})", q, q2, "quic.cc.error_code", str(code))
                ft, q3 = _varint(data, q2)
                leaf(f"Frame Type: {ft}", q2, q3, "quic.cc.frame_type", str(ft))
            else:
                leaf(f"Application Error code: {app(code)}", q, q2, "quic.cc.error_code.app", str(code))
                q3 = q2
            rl, q4 = _varint(data, q3)
            leaf(f"Reason phrase Length: {rl}", q3, q4, "quic.cc.reason_phrase.length", str(rl))
            reason = bytes(data[q4 : q4 + rl]).decode("utf-8", "replace")
            leaf(f"Reason phrase: {reason}", q4, q4 + rl, "quic.cc.reason_phrase", reason)
    except IndexError:
        return
    # (the frame's own wirefall fields stay below, after tshark's)
    for n in kids:
        fn.children.remove(n)
    at = 1 if fn.children and fn.children[0].abbrev == "quic.frame_type" else 0
    fn.children[at:at] = kids


# tshark's reassembly of a handshake stream (a connection's CRYPTO frames of one direction and
# packet type): the bytes held at once are bounded (a hostile stream of far offsets, or a message
# that claims 16 MB, shows its frames but no reassembled message)
CRYPTO_HOLD_MAX = 1 << 18  # bytes of out-of-order CRYPTO frames held, waiting for a gap to fill
CRYPTO_HOLD_FRAMES = 512  # and frames (Chrome scatters a ClientHello over ~15)
HANDSHAKE_MESSAGE_MAX = 1 << 18  # a handshake message reassembled from several deliveries, at most


def crypto_frame_at(d: bytes, a: int) -> tuple[int, int, int]:
    """The CRYPTO frame at ``d[a]`` (its type byte): (stream offset, where its data starts, its
    length); IndexError where ``d`` cuts the header."""
    off, p = _varint(d, a + 1)
    ln, p = _varint(d, p)
    return off, p, ln


def _fragments_node(what: str, count_words: str, parts) -> Node:
    """tshark's list of the pieces a reassembly put together, ``parts`` ((packet, bytes) each):
    ``[3 Reassembled QUIC CRYPTO Data Fragments (462 bytes): #2(274), …]`` with a ``[Frame: 2,
    payload: 0-273 (274 bytes)]`` line each and ``[Fragment count: 3]``."""
    from wirefall.analyzer.detail import Node as _Node

    total = sum(m for _p, m in parts)
    node = _Node(f"[{len(parts)} Reassembled {what} ({total} bytes): " + ", ".join(f"#{p}({m})" for p, m in parts) + "]", [], -1, -1)
    pos = 0
    for p, m in parts:
        node.children.append(_Node(f"[Frame: {p}, payload: {pos}-{pos + m - 1} ({m} byte{'s' if m != 1 else ''})]", [], -1, -1))
        pos += m
    node.children.append(_Node(f"[{count_words}: {len(parts)}]", [], -1, -1))
    return node


class CryptoDelivery(NamedTuple):
    """What tshark's QUIC layer hands its TLS layer at one CRYPTO frame: the bytes from stream
    offset ``offset`` on, made of ``parts`` ((packet, length) of each CRYPTO frame in it, in
    offset order: more than one when out-of-order frames were reassembled)."""

    offset: int
    data: bytes
    parts: tuple[tuple[int, int], ...]


def crypto_deliveries(frames: list[tuple[int, int, bytes]]) -> list[CryptoDelivery | None]:
    """tshark 4.0's QUIC CRYPTO reassembly over one handshake stream's frames ((packet, stream
    offset, data) in capture order): per frame, what is handed to TLS there, or None.  A frame
    at the next expected offset with none held is handed on as it is (TLS reassembles a message
    it cuts: ``handshake_pieces``); one beyond it is held, with those that follow, until the held
    frames run without a gap from the expected offset (Chrome scatters its ClientHello over
    many frames and two packets: handed on, all together, at the one that fills the last gap);
    data already handed on (a retransmission) hands on nothing."""
    out: list[CryptoDelivery | None] = []
    expected = 0
    held: list[tuple[int, int, int, bytes]] = []  # (offset, arrival, packet, data), by offset
    reach, run = 0, 0  # held[:run] run without a gap from ``expected`` to ``reach``
    size = 0
    for pkt, off, data in frames:
        end = off + len(data)
        if end <= expected:
            out.append(None)
            continue
        if off <= expected and not held:
            d = data[expected - off :]
            out.append(CryptoDelivery(expected, d, ((pkt, len(d)),)))
            expected = end
            continue
        size += len(data)
        if size > CRYPTO_HOLD_MAX or len(held) >= CRYPTO_HOLD_FRAMES:  # (beyond the budget: nothing more is reassembled here)
            held.clear()
            expected = 1 << 62
            out.append(None)
            continue
        if not held:
            reach, run = expected, 0
        insort(held, (off, len(held), pkt, data))  # (beyond ``reach``: after the run; else within or just after it)
        if off <= reach:  # (the run grows by it, and by the held frames it now joins)
            reach, run = max(reach, end), run + 1
            while run < len(held) and held[run][0] <= reach:
                reach = max(reach, held[run][0] + len(held[run][3]))
                run += 1
        if run < len(held):
            out.append(None)
            continue
        pieces, parts, pos = [], [], expected
        for o, _a, p, d in held:
            if o + len(d) > pos:
                pieces.append(d[pos - o :])
                parts.append((p, o + len(d) - pos))
                pos = o + len(d)
        out.append(CryptoDelivery(expected, b"".join(pieces), tuple(parts)))
        expected, held, size = pos, [], 0
    return out


class HandshakePiece(NamedTuple):
    """A handshake message, or a part of one, in a delivery: ``kind`` "whole", "first" (it goes
    on in a later delivery), "middle" or "last"; its type, where it lies in the delivery
    (``start``, ``size``); a "last" one's whole message (``body``: after its 4-byte header) and
    the deliveries it was reassembled from (``fragments``: (packet, bytes) each)."""

    kind: str
    type: int
    start: int
    size: int
    body: bytes = b""
    fragments: tuple[tuple[int, int], ...] = ()


def handshake_pieces(deliveries: list[tuple[int, bytes]]) -> list[list[HandshakePiece]]:
    """tshark's TLS handshake reassembly over a handshake stream's deliveries ((packet, bytes)
    each, in order): per delivery, its messages and parts of messages.  A message longer than
    ``HANDSHAKE_MESSAGE_MAX`` is shown as its first part, and nothing after it on the stream."""
    out: list[list[HandshakePiece]] = []
    # the message going on: (type, whole length with its 4-byte header: -1 while the header
    # itself is cut, its bytes so far, (packet, bytes) of each delivery that brought some)
    pend: tuple[int, int, bytearray, list[tuple[int, int]]] | None = None
    dead = False
    for pkt, data in deliveries:
        pieces: list[HandshakePiece] = []
        out.append(pieces)
        if dead:
            continue
        p, n = 0, len(data)
        if pend is not None:
            t, whole, got, frags = pend
            if whole < 0:  # (its header cut: completed first)
                p = min(n, 4 - len(got))
                got += data[:p]
                if len(got) == 4:
                    whole = 4 + int.from_bytes(got[1:4], "big")
            if whole > HANDSHAKE_MESSAGE_MAX:
                dead = True
                continue
            if whole >= 0:
                k = min(n - p, whole - len(got))
                got += data[p : p + k]
                p += k
            frags.append((pkt, p))
            if len(got) == whole:
                pieces.append(HandshakePiece("last", t, 0, p, bytes(got[4:]), tuple(frags)))
                pend = None
            else:
                pieces.append(HandshakePiece("middle", t, 0, p))
                pend = (t, whole, got, frags)
        while p < n:
            t = data[p]
            if n - p < 4:  # (a message header cut by the delivery: its length comes with the next)
                pend = (t, -1, bytearray(data[p:]), [(pkt, n - p)])
                pieces.append(HandshakePiece("first", t, p, n - p))
                break
            ln = int.from_bytes(data[p + 1 : p + 4], "big")
            if p + 4 + ln <= n:
                pieces.append(HandshakePiece("whole", t, p, 4 + ln, bytes(data[p + 4 : p + 4 + ln])))
                p += 4 + ln
                continue
            pieces.append(HandshakePiece("first", t, p, n - p))
            if 4 + ln > HANDSHAKE_MESSAGE_MAX:
                dead = True
            else:
                pend = (t, 4 + ln, bytearray(data[p:]), [(pkt, n - p)])
            break
    return out


def _crypto_handshake(fn: Node, data: bytes, a: int, b: int, source: int,
                      level_frames: Callable[[], list[tuple[int, int, bytes]] | None] | None = None) -> None:
    """The TLS handshake a CRYPTO frame (``data[a:b]``) hands on, as tshark shows it under the
    frame: where tshark reassembled out-of-order frames, ``[N Reassembled QUIC CRYPTO Data
    Fragments (…)]``; then ``TLSv1.3 Record Layer: Handshake Protocol: …`` with each message
    whole in what is handed on, a message's ``(fragment)`` that goes on in a later one, and
    where one ends its ``(last fragment)``, ``[N Reassembled Handshake Fragments (…)]`` and the
    whole message.  ``level_frames``: the handshake stream's CRYPTO frames up to this one
    ((packet, offset, data) each, this one last; None where earlier packets cannot be read
    again: then only what this frame holds from offset 0).  Lines of what this frame's own bytes
    hold are placed in the "Decrypted QUIC" tab ``source``; a reassembled message's lines have
    no bytes (tshark shows them in a tab of their own)."""
    from wirefall.analyzer.detail import Node as _Node, insert_before_facts

    from wirefall.dissectors.tls import HRR_RANDOM

    from .tls import handshake_nodes, handshake_title

    try:
        off, q, ln = crypto_frame_at(data, a)
    except IndexError:
        return
    if q + ln > b:
        return
    own = bytes(data[q : q + ln])
    frames = level_frames() if level_frames is not None else None
    if not frames or frames[-1][1:] != (off, own):
        frames = [(-1, off, own)]
    deliveries = crypto_deliveries(frames)
    got = deliveries[-1]
    if got is None:
        return
    handed = [(frames[i][0], d.data) for i, d in enumerate(deliveries) if d is not None]
    pieces = handshake_pieces(handed)[-1]
    if not pieces:
        return
    placed = len(got.parts) == 1  # (the delivery is this frame's bytes, from q + skip)
    at = q + (got.offset - off) if placed else -1

    def add(parent, text: str, start: int, size: int, abbrev: str | None = None, value=None):
        s = at + start if placed and start >= 0 else -1
        n = _Node(text, [], s, s + size if s >= 0 else -1, abbrev, None if value is None else str(value), source if s >= 0 else 0)
        parent.children.append(n)
        return n

    def unplaced(parent, text: str, start: int, size: int, abbrev: str | None = None, value=None):
        n = _Node(text, [], -1, -1, abbrev, None if value is None else str(value))
        parent.children.append(n)
        return n

    def word(t: int) -> str:
        return handshake_title([(t, b"")]).split(": ", 1)[1]

    def hrr(k: HandshakePiece) -> bool:  # (a ServerHello with HelloRetryRequest's random: tshark's words for it)
        return k.type == 2 and k.body[2:34] == HRR_RANDOM

    # tshark's QUIC reassembly of the frames handed on together
    out: list = [] if placed else [_fragments_node("QUIC CRYPTO Data Fragments", "Fragment count", got.parts)]
    if len(pieces) == 1 and pieces[0].kind != "whole":
        k = pieces[0]
        head = {"first": f"Handshake Protocol: {word(k.type)} (fragment)", "last": handshake_title([(k.type, k.body)], hrr(k)),
                "middle": "Handshake Protocol: Multiple Handshake Messages"}[k.kind]
    else:
        head = handshake_title([(k.type, k.body) for k in pieces], any(map(hrr, pieces)))
    rec = _Node(f"TLSv1.3 Record Layer: {head}", [], at if placed else -1, at + len(got.data) if placed else -1, None, None,
                source if placed else 0)
    for k in pieces:
        if k.kind == "whole":
            handshake_nodes(rec, [(k.type, k.body)], lambda parent, text, start, size, abbrev=None, value=None, _k=k:
                            add(parent, text, _k.start + start, size, abbrev, value), hrr(k), True)
        elif k.kind in ("first", "middle"):
            add(rec, f"Handshake Protocol: {word(k.type)} (fragment)", k.start, k.size)
        else:
            add(rec, f"Handshake Protocol: {word(k.type)} (last fragment)", k.start, k.size)
            rec.children.append(_fragments_node("Handshake Fragments", "Handshake Fragment count", k.fragments))
            handshake_nodes(rec, [(k.type, k.body)], unplaced, hrr(k), True)
    out.append(rec)
    insert_before_facts(fn, out)


def error_label(fr: Frame, h3: bool) -> str | None:
    """The error code of a QUIC frame in words, where no bytes place it (not decrypted again):
    ``NO_ERROR (0)``, ``H3_NO_ERROR (256)``."""
    f = fr.fields or {}
    code = f.get("error_code")
    if not isinstance(code, int):
        return None
    if fr.type == "CONNECTION_CLOSE" and not f.get("application"):
        return f"{transport_error_name(code)} ({code})"
    name = H3_ERRORS.get(code) if h3 else None
    return f"{name} ({code})" if name else None
