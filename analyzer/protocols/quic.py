"""QUIC in the packet list: tshark's Info of a datagram is its last QUIC packet's (tshark's
column keeps only the last of coalesced packets): ``Initial, DCID=…, SCID=…, PKN: 0, CRYPTO,
PADDING`` or ``Protected Payload (KP0), DCID=…, PKN: 5, ACK, STREAM(0), HEADERS`` — frames in
wire order, not collapsed, with tshark's short names (``DONE``, ``NCI``, ``SB`` …) and the
HTTP/3 frames tshark names (HEADERS, SETTINGS, PRIORITY_UPDATE, …) after the STREAM frame
carrying them."""
from __future__ import annotations

import struct
from typing import TYPE_CHECKING

from wirefall.analyzer.model import Analysis, Frame

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


def _varint(b: bytes, p: int) -> tuple[int, int]:
    if p >= len(b):
        raise IndexError
    n = 1 << (b[p] >> 6)
    if p + n > len(b):
        raise IndexError
    v = b[p] & 0x3F
    for i in range(1, n):
        v = v << 8 | b[p + i]
    return v, p + n


def _last_quic_header(payload: bytes, rows: list[tuple[int, int, int, int]], short_cid: int | None = None) -> str | None:
    """tshark's header text of the datagram's last QUIC packet: ``Initial, DCID=…, SCID=…``
    or ``Protected Payload (KP0), DCID=…``.  ``rows``: (offset, hdr_len, pn_len, key phase)
    of the decrypted packets (for a short header's DCID length)."""
    p = 0
    kind = ""  # of the last packet: "long", "short" or "vn"
    name, dcid, scid, off = "", b"", b"", 0
    try:
        for _ in range(16):
            if p >= len(payload):
                break
            b0 = payload[p]
            if p and not b0 & 0x40:
                break  # not a QUIC packet (the fixed bit is clear): padding after the last one
            if not b0 & 0x80:
                kind, off = "short", p
                break
            version = struct.unpack_from("!I", payload, p + 1)[0]
            dl = payload[p + 5]
            dcid = payload[p + 6 : p + 6 + dl]
            q = p + 6 + dl
            sl = payload[q]
            scid = payload[q + 1 : q + 1 + sl]
            q += 1 + sl
            if version == 0:
                kind = "vn"
                break
            t = (b0 >> 4) & 3
            if version == 0x6B3343CF:  # QUIC v2 renumbers the long packet types
                t = {1: 0, 2: 1, 3: 2, 0: 3}[t]
            kind, name = "long", _LONG_TYPES[t]
            if t == 3:
                break
            if t == 0:
                tl, q = _varint(payload, q)
                q += tl
            ln, q = _varint(payload, q)
            p = q + ln
    except (IndexError, struct.error, KeyError):
        pass
    if not kind:
        return None
    if kind == "vn":  # (tshark writes both IDs, empty or not)
        return f"Version Negotiation, DCID={dcid.hex()}, SCID={scid.hex()}"
    if kind == "long":
        return name + (f", DCID={dcid.hex()}" if dcid else "") + (f", SCID={scid.hex()}" if scid else "")
    row = next((r for r in rows if r[0] == off), None)
    s = f"Protected Payload (KP{row[3] if row is not None else 0})"
    cid_len = row[1] - 1 - row[2] if row is not None else short_cid
    if cid_len and cid_len > 0:
        s += f", DCID={payload[off + 1 : off + 1 + cid_len].hex()}"
    return s


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
    head = _last_quic_header(payload, [r[:4] for r in info_rows], short_cid)
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

V1, V2 = 0x00000001, 0x6B3343CF
_V2_TYPES = {1: 0, 2: 1, 3: 2, 0: 3}  # QUIC v2 packet type bits -> v1 type
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


def header_nodes(payload: bytes, base: int, rows: dict, short_cid: int | None) -> list[tuple[int, int, str, Node]]:
    """One header node per QUIC packet of a UDP payload (coalesced packets each their own), with
    tshark's fields and byte ranges (``base``: the payload's position in the packet):
    ``(start, end, packet type, node)`` in datagram order.  ``rows``: offset in the payload ->
    ``(header length, packet number length, packet number, first byte without header
    protection or None)`` of the packets the analysis decrypted; the reserved bits, the
    packet number length and the packet number are shown only for those, as tshark does."""
    from wirefall.analyzer.detail import Node

    out: list[tuple[int, int, str, Node]] = []
    n = len(payload)
    p = 0

    def leaf(parent: Node, label: str, s: int, e: int, abbrev: str, value: str) -> None:
        parent.add(label, base + s, base + e, abbrev, value)

    def vint(q: int) -> tuple[int, int]:
        return _varint(payload, q)

    try:
        for _ in range(16):
            if p >= n:
                break
            b0 = payload[p]
            if p and not b0 & 0x40:
                # not a QUIC packet (fixed bit clear): padding after the last one (RFC 9000 §12.2;
                # tshark 4.0 shows it as a short header without keys, 4.2 as padding)
                out.append((p, n, "Padding", Node(f"[Padding after the QUIC packets: {n - p} bytes (fixed bit clear)]", [], base + p, base + n)))
                break
            row = rows.get(p)
            fb = row[3] if row is not None else None
            if b0 & 0x80:
                if p + 6 > n:
                    break
                ver = int.from_bytes(payload[p + 1 : p + 5], "big")
                dl = payload[p + 5]
                q = p + 6 + dl
                if q >= n:
                    break
                sl = payload[q]
                s0 = q + 1
                q = s0 + sl
                if q > n:
                    break
                node = Node("", [], base + p, base + n)
                leaf(node, "1... .... = Header Form: Long Header (1)", p, p + 1, "quic.header_form", "1")
                if ver == 0:
                    kind = "Version Negotiation"
                    leaf(node, f"Unused: 0x{b0 & 0x7F:02x}", p, p + 1, "quic.vn.unused", f"0x{b0 & 0x7F:02x}")
                else:
                    bits = (b0 >> 4) & 3
                    t = _V2_TYPES[bits] if ver == V2 else bits
                    kind = _LONG_TYPES[t]
                    if t != 3:  # (tshark shows no Fixed Bit on a Retry)
                        leaf(node, f".{(b0 >> 6) & 1}.. .... = Fixed Bit: {bool(b0 & 0x40)}", p, p + 1, "quic.fixed_bit", str((b0 >> 6) & 1))
                    leaf(node, f"Packet Type: {kind} ({bits})", p, p + 1, "quic.long.packet_type_v2" if ver == V2 else "quic.long.packet_type",
                         str(bits))
                    if fb is not None and t != 3:
                        leaf(node, f"Reserved: {(fb >> 2) & 3}", p, p + 1, "quic.long.reserved", str((fb >> 2) & 3))
                        leaf(node, f"Packet Number Length: {(fb & 3) + 1} bytes ({fb & 3})", p, p + 1, "quic.packet_number_length", str(fb & 3))
                leaf(node, f"Version: {version_label(ver)}", p + 1, p + 5, "quic.version", f"0x{ver:08x}")
                leaf(node, f"Destination Connection ID Length: {dl}", p + 5, p + 6, "quic.dcil", str(dl))
                if dl:
                    leaf(node, f"Destination Connection ID: {payload[p + 6 : p + 6 + dl].hex()}", p + 6, p + 6 + dl, "quic.dcid",
                         _colon(payload[p + 6 : p + 6 + dl]))
                leaf(node, f"Source Connection ID Length: {sl}", s0 - 1, s0, "quic.scil", str(sl))
                if sl:
                    leaf(node, f"Source Connection ID: {payload[s0:q].hex()}", s0, q, "quic.scid", _colon(payload[s0:q]))
                end = n
                if ver == 0:
                    for i in range(q, n - 3, 4):
                        v = int.from_bytes(payload[i : i + 4], "big")
                        leaf(node, f"Supported Version: {version_label(v)}", i, i + 4, "quic.supported_version", f"0x{v:08x}")
                elif kind == "Retry":
                    if n - 16 > q:
                        leaf(node, f"Retry Token: {_hv(payload[q : n - 16])}", q, n - 16, "quic.retry_token", _colon(payload[q : n - 16]))
                    if n - 16 >= q:
                        leaf(node, f"Retry Integrity Tag: {payload[n - 16 : n].hex()}", n - 16, n, "quic.retry_integrity_tag",
                             _colon(payload[n - 16 : n]))
                else:
                    if kind == "Initial":
                        tl, q2 = vint(q)
                        leaf(node, f"Token Length: {tl}", q, q2, "quic.token_length", str(tl))
                        if tl:
                            leaf(node, f"Token: {_hv(payload[q2 : q2 + tl])}", q2, q2 + tl, "quic.token", _colon(payload[q2 : q2 + tl]))
                        q = q2 + tl
                    ln, q2 = vint(q)
                    leaf(node, f"Length: {ln}", q, q2, "quic.length", str(ln))
                    if row is not None:
                        leaf(node, f"Packet Number: {row[2]}", q2, q2 + row[1], "quic.packet_number", str(row[2]))
                    end = min(q2 + ln, n)
                node.children.insert(0, Node(f"[Packet Length: {end - p}]", [], base + p, base + p, "quic.packet_length", str(end - p)))
                dcid = payload[p + 6 : p + 6 + dl].hex()
                node.label = f"QUIC Long Header: {kind}, version {version_label(ver)}" + (f", DCID={dcid}" if dcid else "") + \
                    (f", SCID={payload[s0 : s0 + sl].hex()}" if sl else "")
                node.end = base + end
                out.append((p, end, kind, node))
                p = end
                if ver == 0 or kind == "Retry":
                    break
            else:
                cl = row[0] - 1 - row[1] if row is not None else short_cid
                node = Node("", [], base + p, base + n, "quic.short", "")
                leaf(node, "0... .... = Header Form: Short Header (0)", p, p + 1, "quic.header_form", "0")
                leaf(node, f".{(b0 >> 6) & 1}.. .... = Fixed Bit: {bool(b0 & 0x40)}", p, p + 1, "quic.fixed_bit", str((b0 >> 6) & 1))
                leaf(node, f"..{(b0 >> 5) & 1}. .... = Spin Bit: {bool(b0 & 0x20)}", p, p + 1, "quic.spin_bit", str((b0 >> 5) & 1))
                if fb is not None:
                    leaf(node, f"Reserved: {(fb >> 3) & 3}", p, p + 1, "quic.short.reserved", str((fb >> 3) & 3))
                    leaf(node, f"Key Phase Bit: {bool(fb & 4)}", p, p + 1, "quic.key_phase", str((fb >> 2) & 1))
                    leaf(node, f"Packet Number Length: {(fb & 3) + 1} bytes ({fb & 3})", p, p + 1, "quic.packet_number_length", str(fb & 3))
                sd = bytes(payload[p + 1 : p + 1 + cl]) if cl else b""
                if sd:
                    leaf(node, f"Destination Connection ID: {sd.hex()}", p + 1, p + 1 + len(sd), "quic.dcid", _colon(sd))
                if row is not None:
                    q = p + 1 + len(sd)
                    leaf(node, f"Packet Number: {row[2]}", q, q + row[1], "quic.packet_number", str(row[2]))
                node.label = "QUIC Short Header" + (f" DCID={sd.hex()}" if sd else "") + (f" PKN={row[2]}" if row is not None else "")
                wrap = Node(f"QUIC Short Header: 1-RTT, {n - p} bytes", [], base + p, base + n)
                wrap.add(f"[Packet Length: {n - p}]", base + p, base + p, "quic.packet_length", str(n - p))
                wrap.children.append(node)
                out.append((p, n, "1-RTT", wrap))
                break
    except (IndexError, struct.error):
        pass
    return out


def frame_field_nodes(fn: Node, fr: Frame, data: bytes, a: int, b: int, source: int, h3: bool) -> None:
    """tshark's fields of a decrypted QUIC frame that carries error codes or connection IDs
    (RESET_STREAM, STOP_SENDING, CONNECTION_CLOSE, NEW_CONNECTION_ID, RETIRE_CONNECTION_ID),
    with their bytes in the "Decrypted QUIC" tab ``source`` (``data[a:b]``: the frame).
    ``h3``: the connection is HTTP/3 (application error codes are named)."""
    t = (fr.fields or {}).get("frame_type")
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
