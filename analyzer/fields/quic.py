"""``quic``: QUIC (RFC 9000, v2, drafts) packet headers and frames.

Header fields (version, connection IDs, long packet type) are read from the datagram itself,
each coalesced QUIC packet in turn; a short header's destination CID length is the length
of the source CID the peer gave in its long headers (as tshark learns it).  Frame fields come
from wirefall's ``quic`` frames, so they exist only where the packet was decrypted (as in
tshark)."""
from __future__ import annotations

from ._util import fields_value, frame_field as F, packet_field as P
from .types import BOOL, BYTES, PROTO_OPAQUE, UINT, Field, Protocol

V2 = 0x6B3343CF
_V2_TYPES = {1: 0, 2: 1, 3: 2, 0: 3}  # v2 bits -> v1 packet type
MAX_COALESCED = 16
CID_SCAN = 256  # packets of a connection scanned for its CID lengths

_QUIC_CODES = (10, 11)  # analyzer.model.PROTO_NAMES: QUIC, HTTP3


def _varint(b, p: int) -> tuple[int, int]:
    first = b[p]
    ln = 1 << (first >> 6)
    if p + ln > len(b):
        raise IndexError
    v = first & 0x3F
    for i in range(1, ln):
        v = (v << 8) | b[p + i]
    return v, p + ln


def parse_headers(payload: bytes, short_dcid_len: int | None) -> list[dict]:
    """The header of each QUIC packet coalesced in one UDP payload."""
    out: list[dict] = []
    p, n = 0, len(payload)
    try:
        while p < n and len(out) < MAX_COALESCED:
            b0 = payload[p]
            if b0 & 0x80:
                if p + 6 > n:
                    break
                ver = int.from_bytes(payload[p + 1 : p + 5], "big")
                dl = payload[p + 5]
                q = p + 6 + dl
                dcid = payload[p + 6 : q]
                sl = payload[q]
                scid = payload[q + 1 : q + 1 + sl]
                q += 1 + sl
                if q > n:
                    break
                bits = (b0 >> 4) & 3
                kind = _V2_TYPES[bits] if ver == V2 else bits
                h = {"form": 1, "version": ver, "bits": bits, "type": kind, "dcid": dcid, "scid": scid, "v2": ver == V2}
                out.append(h)
                if ver == 0:  # version negotiation: the supported versions fill the rest of the datagram
                    h["versions"] = [int.from_bytes(payload[i : i + 4], "big") for i in range(q, n - 3, 4)]
                    break
                if kind == 3:  # Retry: its token, then the 16-byte integrity tag, end the datagram
                    h["retry_token"] = bytes(payload[q : max(q, n - 16)])
                    break
                if kind == 0:
                    tl, q = _varint(payload, q)
                    h["token_length"], h["token"] = tl, bytes(payload[q : q + tl])
                    q += tl
                ln, q = _varint(payload, q)
                h["length"] = ln
                p = q + ln
            else:
                dcid = payload[p + 1 : p + 1 + short_dcid_len] if short_dcid_len else b""
                out.append({"form": 0, "dcid": dcid, "coalesced": bool(out), "spin": (b0 >> 5) & 1})
                break
    except IndexError:
        pass
    return out


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


def _known_cids(pv) -> set[bytes]:
    """Connection IDs the connection's endpoints gave (long headers, NEW_CONNECTION_ID)."""
    c = pv.connection
    key = ("quic_cids", c.id)
    got = pv.ctx.cache.get(key)
    if got is None:
        got = set(_cid_lens(pv).get("cids", ()))
        for hexcid in (c.quic.scid, c.quic.dcid):
            try:
                got.add(bytes.fromhex(hexcid or ""))
            except ValueError:
                pass
        got.update(_new_cids(pv.ctx).get(c.id, ()))
        got.discard(b"")
        pv.ctx.cache[key] = got
    return got


def _new_cids(ctx) -> dict[int, set[bytes]]:
    """connection -> the IDs its NEW_CONNECTION_ID frames gave (one pass over the frames)."""
    got = ctx.cache.get("quic_new_cids")
    if got is None:
        got = {}
        for fr in ctx.frames:
            if fr.type == "NEW_CONNECTION_ID" and fr.protocol == "quic":
                try:
                    got.setdefault(fr.connection, set()).add(bytes.fromhex((fr.fields or {}).get("connection_id") or ""))
                except ValueError:
                    pass
        ctx.cache["quic_new_cids"] = got
    return got


def _cid_lens(pv) -> dict:
    """direction -> the CID length the peer chose (its long headers' SCID length); "cids":
    the CIDs seen in those long headers."""
    from .packet import PacketView

    c = pv.connection
    key = ("quic_cid", c.id)
    lens = pv.ctx.cache.get(key)
    if lens is None:
        lens = {}
        cids: set = set()
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
                if h["form"] == 1 and h["version"]:
                    cids.update((h["scid"], h["dcid"]))
                    if h["type"] == 3:  # a Retry's SCID is not the ID the server goes on with: its next Initial's is
                        continue
                    lens[d] = len(h["scid"])
                    break
        lens["cids"] = cids
        pv.ctx.cache[key] = lens
    return lens


def headers(pv) -> list[dict]:
    """The QUIC packet headers of this datagram (memoised on the view's context)."""
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
        d = pv.direction
        short = _cid_lens(pv).get(1 - d) if d is not None else None
        h = parse_headers(pl, short)
        if h and h[-1]["form"] == 0 and h[-1]["coalesced"] and h[-1]["dcid"] and h[-1]["dcid"] not in _known_cids(pv):
            h.pop()  # bytes after coalesced packets that name no connection ID of ours: padding (tshark stops there too)
        memo["quic"] = h
    return h


def _hf(fn):
    return lambda pv: [v for h in headers(pv) for v in fn(h)]


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


_STREAM = _frames_of("STREAM")
_ACK = _frames_of("ACK")


PROTOCOL = Protocol("quic", "QUIC (IETF)", P("quic", PROTO_OPAQUE, lambda pv: [True] if headers(pv) else [], "a QUIC datagram"), [
    P("quic.header_form", UINT, _hf(lambda h: [h["form"]]), "1 long header, 0 short header"),
    P("quic.version", UINT, _hf(lambda h: [h["version"]] if h["form"] else []), "version of a long header (0x00000001)"),
    P("quic.long.packet_type", UINT, _hf(lambda h: [h["bits"]] if h["form"] and h["version"] and not h["v2"] else []),
      "long packet type (0 Initial, 1 0-RTT, 2 Handshake, 3 Retry)"),
    P("quic.long.packet_type_v2", UINT, _hf(lambda h: [h["bits"]] if h["form"] and h["v2"] else []), "QUIC v2 long packet type bits"),
    P("quic.dcil", UINT, _hf(lambda h: [len(h["dcid"])] if h["form"] else []), "destination connection ID length (long header)"),
    P("quic.scil", UINT, _hf(lambda h: [len(h["scid"])] if h["form"] else []), "source connection ID length (long header)"),
    P("quic.token_length", UINT, _hf(lambda h: [h["token_length"]] if "token_length" in h else []),
      "Initial packet's Token Length (0 when it has no token)"),
    P("quic.token", BYTES, _hf(lambda h: [h["token"]] if h.get("token") else []), "Initial packet's token (where its length is not 0)"),
    P("quic.length", UINT, _hf(lambda h: [h["length"]] if "length" in h else []),
      "Length field of a long header (packet number and payload)"),
    P("quic.retry_token", BYTES, _hf(lambda h: [h["retry_token"]] if "retry_token" in h else []), "Retry packet's token"),
    P("quic.supported_version", UINT, _hf(lambda h: h.get("versions", [])), "a version a Version Negotiation packet lists"),
    P("quic.dcid", BYTES, _hf(lambda h: [h["dcid"]] if h["dcid"] else []), "destination connection ID"),
    P("quic.scid", BYTES, _hf(lambda h: [h["scid"]] if h["form"] and h.get("scid") else []), "source connection ID (long header)"),
    Field("quic.short", "none", lambda pv: [True] if any(h["form"] == 0 for h in headers(pv)) else [], "a short-header packet"),
    P("quic.packet_number", UINT, _pn, "packet number (decrypted packets)"),
    P("quic.spin_bit", BOOL, _hf(lambda h: [h["spin"]] if h["form"] == 0 else []), "latency spin bit (short header)"),
    P("quic.key_phase", BOOL, _per_packet("key_phase"), "key phase bit (short header, decrypted packets)"),
    F("quic.frame_type", UINT, _is_qframe, lambda fr, ctx: [t] if (t := (fr.fields or {}).get("frame_type")) is not None else [],
      "frame type (0 PADDING, 1 PING, 2 ACK, 6 CRYPTO, 8..15 STREAM, 0x1c CONNECTION_CLOSE…)"),
    F("quic.stream.stream_id", UINT, lambda fr: fr.protocol == "quic" and fr.type == "STREAM",
      lambda fr, ctx: [fr.stream_id] if fr.stream_id is not None else [], "stream ID of a STREAM frame"),
    F("quic.stream.fin", BOOL, _STREAM, _stream_bit(0x01), "STREAM frame's FIN bit"),
    F("quic.stream.len", BOOL, _STREAM, _stream_bit(0x02), "STREAM frame's LEN bit (a Length field is present)"),
    F("quic.stream.off", BOOL, _STREAM, _stream_bit(0x04), "STREAM frame's OFF bit (an Offset field is present)"),
    F("quic.stream.offset", UINT, _STREAM, _stream_bit(0x04, lambda fr: [(fr.fields or {}).get("offset", 0)]),
      "STREAM frame's offset (where the OFF bit is set)"),
    F("quic.stream.length", UINT, _STREAM, _stream_bit(0x02, lambda fr: [fr.length]), "STREAM frame's data length (where the LEN bit is set)"),
    F("quic.crypto.offset", UINT, _frames_of("CRYPTO"), fields_value("offset"), "CRYPTO frame's offset"),
    F("quic.crypto.length", UINT, _frames_of("CRYPTO"), lambda fr, ctx: [fr.length], "CRYPTO frame's data length"),
    F("quic.ack.largest_acknowledged", UINT, _ACK, fields_value("largest_acknowledged"), "ACK frame's largest acknowledged packet number"),
    F("quic.ack.ack_delay", UINT, _ACK, fields_value("ack_delay"), "ACK frame's ACK Delay as sent (before the ack_delay_exponent scaling)"),
    F("quic.ack.ack_range_count", UINT, _ACK, fields_value("ack_range_count"), "ACK frame's ACK Range Count"),
    F("quic.nci.sequence", UINT, _frames_of("NEW_CONNECTION_ID"), _nci("sequence"), "NEW_CONNECTION_ID's Sequence Number"),
    F("quic.nci.retire_prior_to", UINT, _frames_of("NEW_CONNECTION_ID"), _nci("retire_prior_to"), "NEW_CONNECTION_ID's Retire Prior To"),
    F("quic.nci.connection_id.length", UINT, _frames_of("NEW_CONNECTION_ID"), _nci("connection_id", lambda v: len(v) // 2),
      "NEW_CONNECTION_ID's connection ID length"),
    F("quic.nci.connection_id", BYTES, _frames_of("NEW_CONNECTION_ID"), _nci("connection_id", bytes.fromhex),
      "NEW_CONNECTION_ID's connection ID"),
    F("quic.nci.stateless_reset_token", BYTES, _frames_of("NEW_CONNECTION_ID"), _nci("reset_token", bytes.fromhex),
      "NEW_CONNECTION_ID's Stateless Reset Token"),
    F("quic.cc.error_code", UINT, _close(False), fields_value("error_code"), "CONNECTION_CLOSE (0x1c) transport error code (0 NO_ERROR…)"),
    F("quic.cc.error_code.app", UINT, _close(True), fields_value("error_code"), "CONNECTION_CLOSE (0x1d) application error code"),
])
