"""``quic``: QUIC (RFC 9000, v2, drafts) packet headers and frames.

Header fields (version, connection IDs, long packet type) are read from the datagram itself,
each coalesced QUIC packet in turn; a short header's destination CID length is the length
of the source CID the peer gave in its long headers (as tshark learns it).  Frame fields come
from wirefall's ``quic`` frames, so they exist only where the packet was decrypted (as in
tshark)."""
from __future__ import annotations

from wirefall.analyzer.protocols.quic import RETRY, Decrypted, QuicHeader, parse_headers, short_dcid_len
from wirefall.analyzer.protocols.quic import _varint as _varint  # (fields.tls reads QUIC's varints from here)

from ._util import fields_value, frame_field as F, packet_field as P
from .types import BOOL, BYTES, NONE, PROTO_OPAQUE, STRING, UINT, Field, Protocol

CID_SCAN = 256  # packets of a connection scanned for its CID lengths

_QUIC_CODES = (10, 11)  # analyzer.model.PROTO_NAMES: QUIC, HTTP3


def _payload(pv) -> bytes | None:
    L = pv.layers
    if L.udp is None:
        return None
    return pv.data[L.udp_off + 8 : L.l4_end]


def _is_quic(pv) -> bool:
    c = pv.connection
    if c is None or c.transport != "udp" or c.protocol == "gquic" or c.quic is None:
        return False
    return pv.ctx.idx.proto[pv.n - 1] in _QUIC_CODES or any(fr.protocol == "quic" for fr in pv.frames)


def _cid_lens(pv) -> dict[int, int]:
    """direction -> the CID length the peer chose (its long headers' SCID length)."""
    c = pv.connection
    key = ("quic_cid", c.id)
    lens = pv.ctx.cache.get(key)
    if lens is None:
        from .packet import PacketView  # (here, not per call: the filter asks on every packet)

        lens = {}
        idx = pv.ctx.idx
        scanned = 0
        for p in range(c.first_packet, min(c.last_packet, len(idx)) + 1):
            if idx.conn[p - 1] != c.id:
                continue
            scanned += 1
            if scanned > CID_SCAN or len(lens) == 2:
                break
            v = PacketView(pv.ctx, p)
            d = v.direction
            pl = _payload(v)
            if d is None or pl is None or d in lens:
                continue
            for h in parse_headers(pl, None):
                if h.version:  # (a long header; not Version Negotiation)
                    if h.kind == RETRY:  # a Retry's SCID is not the ID the server goes on with: its next Initial's is
                        continue
                    lens[d] = len(h.scid)
                    break
        pv.ctx.cache[key] = lens
    return lens


def _short_cid(pv) -> int | None:
    """A short header's DCID length: the peer's long headers' SCID length (as tshark learns it);
    in a connection the capture joined mid-way (no long header), what decrypting its 1-RTT
    packets told (``protocols.quic.short_dcid_len``, as the detail tree shows it)."""
    d = pv.direction
    short = _cid_lens(pv).get(1 - d) if d is not None else None
    if short is None:
        q = [fr for fr in pv.frames if fr.protocol == "quic"]
        if q:
            short = short_dcid_len(pv.ctx.an, q)
    return short


def headers(pv) -> list[QuicHeader]:
    """The QUIC packet headers of this datagram (memoised on the view's context), padding after
    them included: tshark 4.0 reads bytes with the fixed bit clear and the first packet's DCID as
    a short header (``parse_headers``), and its filters match that header's fields."""
    if not _is_quic(pv):
        return []
    memo = pv.memo
    if memo is None:
        memo = pv.memo = {}
    h = memo.get("quic")
    if h is None:
        pl = _payload(pv)
        if pl is None:
            return []
        h = memo["quic"] = parse_headers(pl, _short_cid(pv))
    return h


def _hf(name: str):
    """The values of the header field ``name`` in the datagram's QUIC packets (parse_headers'
    fields: a filter field is the header field of the same tshark name)."""
    return lambda pv: [f.value for h in headers(pv) for f in h.fields if f.name == name]


_short = _hf("quic.short")


def _decrypted_headers(pv) -> list[QuicHeader]:
    """The datagram's QUIC packet headers with what header protection hides (reserved bits,
    packet number length), read where wirefall decrypted the packet: the datagram's packets
    decrypted again (``analyzer.detail.decrypted_quic``), as the detail tree shows them."""
    if not _is_quic(pv):
        return []
    memo = pv.memo
    if memo is None:
        memo = pv.memo = {}
    h = memo.get("quic_decrypted")
    if h is None:
        from wirefall.analyzer.detail import decrypted_quic

        pl = _payload(pv)
        rows = decrypted_quic(pv.ctx.an, pv.ctx.source, pv.n) if pl is not None else []
        dec = {r.offset: Decrypted(r.hdr_len, r.pn_len, r.pn, r.first_byte) for r in rows if not r.error}
        h = memo["quic_decrypted"] = parse_headers(pl, _short_cid(pv), dec) if pl is not None and dec else []
    return h


def _hfd(name: str):
    """``_hf`` for a field header protection hides (decrypted packets only, as in tshark)."""
    return lambda pv: [f.value for h in _decrypted_headers(pv) for f in h.fields if f.name == name]


def _is_qframe(fr) -> bool:
    return fr.protocol == "quic"


def _per_packet(key: str):
    """A field of each decrypted QUIC packet in the datagram (its frames carry it: packet
    number, key phase), once per packet."""
    def get(pv) -> list:
        out, seen = [], set()
        for fr in pv.frames:
            if fr.protocol == "quic":
                f = fr.fields or {}
                k = (f.get("packet_type"), f.get("packet_number"))
                v = f.get(key)
                if k[1] is not None and v is not None and k not in seen:
                    seen.add(k)
                    out.append(v)
        return out
    return get


_pn = _per_packet("packet_number")


def _frames_of(*types: str):
    ts = frozenset(types)
    return lambda fr: fr.protocol == "quic" and fr.type in ts


def _stream_bit(bit: int, value=None):
    """A STREAM frame's type bit (0x04 OFF, 0x02 LEN, 0x01 FIN) as a flag, or, with ``value``,
    the field that bit says is present (offset, length), as tshark shows them."""
    def fn(fr, ctx):
        t = (fr.fields or {}).get("frame_type")
        if not isinstance(t, int):
            return []
        if value is None:
            return [1 if t & bit else 0]
        return value(fr) if t & bit else []
    return fn


def _nci(key: str, conv=None):
    """A NEW_CONNECTION_ID frame's field (hex strings as bytes)."""
    def fn(fr, ctx):
        v = (fr.fields or {}).get(key)
        if v is None:
            return []
        if conv is not None:
            try:
                return [conv(v)]
            except ValueError:
                return []
        return [v]
    return fn


def _close(app: bool):
    """CONNECTION_CLOSE frames of one kind: 0x1c (a transport error) or 0x1d (the application's)."""
    return lambda fr: fr.protocol == "quic" and fr.type == "CONNECTION_CLOSE" and bool((fr.fields or {}).get("application")) == app


def _reason(length: bool):
    """A CONNECTION_CLOSE's reason phrase (as read, UTF-8), or its length in bytes."""
    def fn(fr, ctx):
        r = (fr.fields or {}).get("reason")
        if not isinstance(r, str):
            return []
        return [len(r.encode("utf-8", "surrogatepass"))] if length else [r]
    return fn


def _ack_ranges(part: str):
    """An ACK frame's ranges as sent, from the dissector's ``ranges`` (each (smallest, largest)
    packet number, the first range first): ``first`` the First ACK Range (largest - smallest),
    ``gap`` each Gap (packets between a range and the next lower one, minus 1), ``range`` each
    ACK Range (largest - smallest, after the first) — what tshark adds, one per range, in order."""
    def fn(fr, ctx):
        r = (fr.fields or {}).get("ranges")
        if not r:
            return []
        if part == "first":
            return [r[0][1] - r[0][0]]
        if part == "gap":
            return [r[i - 1][0] - r[i][1] - 2 for i in range(1, len(r))]
        return [hi - lo for lo, hi in r[1:]]
    return fn


def _ecn(i: int):
    """An ACK_ECN (0x03) frame's ECT(0), ECT(1) or ECN-CE count."""
    def fn(fr, ctx):
        e = (fr.fields or {}).get("ecn")
        return [e[i]] if e else []
    return fn


def _sid(fr, ctx) -> list:
    return [fr.stream_id] if fr.stream_id is not None else []


def _hex(key: str):
    """A frame's field kept as a hex string, as bytes."""
    def fn(fr, ctx):
        v = (fr.fields or {}).get(key)
        try:
            return [bytes.fromhex(v)] if isinstance(v, str) else []
        except ValueError:
            return []
    return fn


def _tls_alert(fr, ctx) -> list:
    """A CONNECTION_CLOSE (0x1c) CRYPTO_ERROR's TLS alert: tshark adds it for codes 0x100-0x1ff
    (RFC 9001 §4.8: 0x100 + the alert), from the code's last byte."""
    c = (fr.fields or {}).get("error_code")
    return [c & 0xFF] if isinstance(c, int) and c >> 8 == 1 else []


def _dg_length(fr, ctx) -> list:
    """A DATAGRAM frame's Length field: only type 0x31 has one (0x30 runs to the packet's end)."""
    return [fr.length] if (fr.fields or {}).get("frame_type") == 0x31 else []


_STREAM = _frames_of("STREAM")
_ACK = _frames_of("ACK")
_ACK_NOTE = ("an ACK frame's first 64 ranges (dissectors.quic.MAX_ACK_RANGES: a frame listing more has its "
             "ack_range_count; tshark lists them all)")


PROTOCOL = Protocol("quic", "QUIC (IETF)", P("quic", PROTO_OPAQUE, lambda pv: [True] if headers(pv) else [], "a QUIC datagram"), [
    P("quic.packet_length", UINT, _hf("quic.packet_length"), "[Packet Length]: a QUIC packet's bytes in the datagram (header included)", size=4),
    P("quic.header_form", UINT, _hf("quic.header_form"), "1 long header, 0 short header", size=1),
    P("quic.fixed_bit", BOOL, _hf("quic.fixed_bit"), "fixed bit (1; not on a Retry or Version Negotiation)"),
    P("quic.long.reserved", UINT, _hfd("quic.long.reserved"), "long header's reserved bits (decrypted packets)", size=1),
    P("quic.short.reserved", UINT, _hfd("quic.short.reserved"), "short header's reserved bits (decrypted packets)", size=1),
    P("quic.packet_number_length", UINT, _hfd("quic.packet_number_length"),
      "packet number length bits: the length in bytes - 1 (decrypted packets)", size=1),
    P("quic.version", UINT, _hf("quic.version"), "version of a long header (0x00000001)", size=4),
    P("quic.long.packet_type", UINT, _hf("quic.long.packet_type"), "long packet type (0 Initial, 1 0-RTT, 2 Handshake, 3 Retry)", size=1),
    P("quic.long.packet_type_v2", UINT, _hf("quic.long.packet_type_v2"), "QUIC v2 long packet type bits", size=1),
    P("quic.dcil", UINT, _hf("quic.dcil"), "destination connection ID length (long header)", size=1),
    P("quic.scil", UINT, _hf("quic.scil"), "source connection ID length (long header)", size=1),
    P("quic.token_length", UINT, _hf("quic.token_length"), "Initial packet's Token Length (0 when it has no token)", size=8),
    P("quic.token", BYTES, _hf("quic.token"), "Initial packet's token (where its length is not 0)"),
    P("quic.length", UINT, _hf("quic.length"), "Length field of a long header (packet number and payload)", size=8),
    P("quic.retry_token", BYTES, _hf("quic.retry_token"), "Retry packet's token"),
    P("quic.supported_version", UINT, _hf("quic.supported_version"), "a version a Version Negotiation packet lists", size=4),
    P("quic.dcid", BYTES, _hf("quic.dcid"), "destination connection ID"),
    P("quic.scid", BYTES, _hf("quic.scid"), "source connection ID (long header)"),
    Field("quic.short", NONE, lambda pv: [True] * len(_short(pv)), "a short-header packet (one per short-header packet in the datagram)"),
    P("quic.packet_number", UINT, _pn, "packet number (decrypted packets)", size=8),
    P("quic.spin_bit", BOOL, _hf("quic.spin_bit"), "latency spin bit (short header)"),
    P("quic.key_phase", BOOL, _per_packet("key_phase"), "key phase bit (short header, decrypted packets)"),
    F("quic.frame_type", UINT, _is_qframe, lambda fr, ctx: [t] if (t := (fr.fields or {}).get("frame_type")) is not None else [],
      "frame type (0 PADDING, 1 PING, 2 ACK, 6 CRYPTO, 8..15 STREAM, 0x1c CONNECTION_CLOSE…)", size=8),
    F("quic.frame", NONE, _is_qframe, lambda fr, ctx: [True] if (fr.fields or {}).get("frame_type") is not None else [],
      "a QUIC frame (of a decrypted packet)"),
    F("quic.padding_length", UINT, _frames_of("PADDING"), lambda fr, ctx: [fr.length],
      "a run of PADDING frames' length in bytes (consecutive 0x00 bytes are one item, as tshark counts them)", size=4),
    F("quic.stream.initiator", UINT, _STREAM, lambda fr, ctx: [fr.stream_id & 1] if fr.stream_id is not None else [],
      "STREAM frame's stream initiator (0 client, 1 server: the stream ID's low bit)", size=8),
    F("quic.stream.direction", UINT, _STREAM, lambda fr, ctx: [(fr.stream_id >> 1) & 1] if fr.stream_id is not None else [],
      "STREAM frame's stream direction (0 bidirectional, 1 unidirectional: the stream ID's second bit)", size=8),
    F("quic.stream.stream_id", UINT, lambda fr: fr.protocol == "quic" and fr.type == "STREAM",
      lambda fr, ctx: [fr.stream_id] if fr.stream_id is not None else [], "stream ID of a STREAM frame", size=8),
    F("quic.stream.fin", BOOL, _STREAM, _stream_bit(0x01), "STREAM frame's FIN bit"),
    F("quic.stream.len", BOOL, _STREAM, _stream_bit(0x02), "STREAM frame's LEN bit (a Length field is present)"),
    F("quic.stream.off", BOOL, _STREAM, _stream_bit(0x04), "STREAM frame's OFF bit (an Offset field is present)"),
    F("quic.stream.offset", UINT, _STREAM, _stream_bit(0x04, lambda fr: [(fr.fields or {}).get("offset", 0)]),
      "STREAM frame's offset (where the OFF bit is set)", size=8),
    F("quic.stream.length", UINT, _STREAM, _stream_bit(0x02, lambda fr: [fr.length]), "STREAM frame's data length (where the LEN bit is set)", size=8),
    F("quic.crypto.offset", UINT, _frames_of("CRYPTO"), fields_value("offset"), "CRYPTO frame's offset", size=8),
    F("quic.crypto.length", UINT, _frames_of("CRYPTO"), lambda fr, ctx: [fr.length], "CRYPTO frame's data length", size=8),
    F("quic.ack.largest_acknowledged", UINT, _ACK, fields_value("largest_acknowledged"), "ACK frame's largest acknowledged packet number", size=8),
    F("quic.ack.ack_delay", UINT, _ACK, fields_value("ack_delay"), "ACK frame's ACK Delay as sent (before the ack_delay_exponent scaling)", size=8),
    F("quic.ack.ack_range_count", UINT, _ACK, fields_value("ack_range_count"), "ACK frame's ACK Range Count", size=8),
    F("quic.ack.first_ack_range", UINT, _ACK, _ack_ranges("first"),
      "ACK frame's First ACK Range: packets acknowledged below the largest", size=8),
    F("quic.ack.gap", UINT, _ACK, _ack_ranges("gap"), "ACK frame's Gap before each further ACK Range (unacknowledged packets - 1)",
      note=_ACK_NOTE, size=8),
    F("quic.ack.ack_range", UINT, _ACK, _ack_ranges("range"), "ACK frame's further ACK Ranges (packets acknowledged - 1), in order",
      note=_ACK_NOTE, size=8),
    F("quic.ack.ect0_count", UINT, _ACK, _ecn(0), "ACK_ECN (0x03) frame's ECT(0) count", size=8),
    F("quic.ack.ect1_count", UINT, _ACK, _ecn(1), "ACK_ECN (0x03) frame's ECT(1) count", size=8),
    F("quic.ack.ecn_ce_count", UINT, _ACK, _ecn(2), "ACK_ECN (0x03) frame's ECN-CE count", size=8),
    F("quic.nt.length", UINT, _frames_of("NEW_TOKEN"), lambda fr, ctx: [fr.length], "NEW_TOKEN's token length", size=8),
    F("quic.nt.token", BYTES, _frames_of("NEW_TOKEN"), _hex("token"), "NEW_TOKEN's token"),
    F("quic.md.maximum_data", UINT, _frames_of("MAX_DATA"), fields_value("maximum_data"), "MAX_DATA's Maximum Data (connection flow-control limit)",
      size=8),
    F("quic.msd.stream_id", UINT, _frames_of("MAX_STREAM_DATA"), _sid, "MAX_STREAM_DATA's stream ID", size=8),
    F("quic.msd.maximum_stream_data", UINT, _frames_of("MAX_STREAM_DATA"), fields_value("maximum_stream_data"),
      "MAX_STREAM_DATA's Maximum Stream Data (the stream's flow-control limit)", size=8),
    F("quic.ms.max_streams", UINT, _frames_of("MAX_STREAMS"), fields_value("maximum_streams"),
      "MAX_STREAMS' Maximum Streams (0x12 bidirectional, 0x13 unidirectional: quic.frame_type says which)", size=8),
    F("quic.sb.stream_data_limit", UINT, _frames_of("DATA_BLOCKED", "STREAM_DATA_BLOCKED"), fields_value("limit"),
      "DATA_BLOCKED's and STREAM_DATA_BLOCKED's limit (tshark names both so)", size=8),
    F("quic.sdb.stream_id", UINT, _frames_of("STREAM_DATA_BLOCKED"), _sid, "STREAM_DATA_BLOCKED's stream ID", size=8),
    F("quic.sib.stream_limit", UINT, _frames_of("STREAMS_BLOCKED"), fields_value("limit"),
      "STREAMS_BLOCKED's Maximum Streams (0x16 bidirectional, 0x17 unidirectional)", size=8),
    F("quic.path_challenge.data", BYTES, _frames_of("PATH_CHALLENGE"), _hex("data"), "PATH_CHALLENGE's 8 data bytes"),
    F("quic.path_response.data", BYTES, _frames_of("PATH_RESPONSE"), _hex("data"), "PATH_RESPONSE's 8 data bytes"),
    F("quic.dg.length", UINT, _frames_of("DATAGRAM"), _dg_length, "DATAGRAM (0x31) frame's Length", size=8),
    F("quic.nci.sequence", UINT, _frames_of("NEW_CONNECTION_ID"), _nci("sequence"), "NEW_CONNECTION_ID's Sequence Number", size=8),
    F("quic.nci.retire_prior_to", UINT, _frames_of("NEW_CONNECTION_ID"), _nci("retire_prior_to"), "NEW_CONNECTION_ID's Retire Prior To", size=8),
    F("quic.nci.connection_id.length", UINT, _frames_of("NEW_CONNECTION_ID"), _nci("connection_id", lambda v: len(v) // 2),
      "NEW_CONNECTION_ID's connection ID length", size=1),
    F("quic.nci.connection_id", BYTES, _frames_of("NEW_CONNECTION_ID"), _nci("connection_id", bytes.fromhex),
      "NEW_CONNECTION_ID's connection ID"),
    F("quic.nci.stateless_reset_token", BYTES, _frames_of("NEW_CONNECTION_ID"), _nci("reset_token", bytes.fromhex),
      "NEW_CONNECTION_ID's Stateless Reset Token"),
    F("quic.cc.error_code", UINT, _close(False), fields_value("error_code"), "CONNECTION_CLOSE (0x1c) transport error code (0 NO_ERROR…)", size=8),
    F("quic.cc.error_code.app", UINT, _close(True), fields_value("error_code"), "CONNECTION_CLOSE (0x1d) application error code", size=8),
    F("quic.cc.error_code.tls_alert", UINT, _close(False), _tls_alert,
      "CONNECTION_CLOSE (0x1c) CRYPTO_ERROR's TLS alert (error code 0x100 + alert)", size=1),
    F("quic.cc.frame_type", UINT, _close(False), fields_value("offending_frame_type"),
      "CONNECTION_CLOSE (0x1c): the type of the frame that caused the error (0: none)", size=8),
    F("quic.cc.reason_phrase.length", UINT, _frames_of("CONNECTION_CLOSE"), _reason(True), "CONNECTION_CLOSE's Reason Phrase Length (bytes)", size=8),
    F("quic.cc.reason_phrase", STRING, _frames_of("CONNECTION_CLOSE"), _reason(False), "CONNECTION_CLOSE's Reason Phrase"),
    F("quic.rsts.stream_id", UINT, _frames_of("RESET_STREAM"), lambda fr, ctx: [fr.stream_id] if fr.stream_id is not None else [],
      "RESET_STREAM's stream ID", size=8),
    F("quic.rsts.application_error_code", UINT, _frames_of("RESET_STREAM"), fields_value("error_code"), "RESET_STREAM's application error code", size=8),
    F("quic.rsts.final_size", UINT, _frames_of("RESET_STREAM"), fields_value("final_size"), "RESET_STREAM's final size", size=8),
    F("quic.ss.stream_id", UINT, _frames_of("STOP_SENDING"), lambda fr, ctx: [fr.stream_id] if fr.stream_id is not None else [],
      "STOP_SENDING's stream ID", size=8),
    F("quic.ss.application_error_code", UINT, _frames_of("STOP_SENDING"), fields_value("error_code"), "STOP_SENDING's application error code", size=8),
    F("quic.rci.sequence", UINT, _frames_of("RETIRE_CONNECTION_ID"), fields_value("sequence"), "RETIRE_CONNECTION_ID's sequence number", size=8),
])
