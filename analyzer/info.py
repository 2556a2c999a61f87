"""The packet list's Info column in tshark's words (``tshark -T fields -e _ws.col.Info``,
Wireshark 4.0) for DNS, TLS, HTTP/1.x, HTTP/2 and QUIC/HTTP/3.

``analyzer.detail.row_columns`` builds the row and calls these for the frames on a packet.
What they reproduce, protocol by protocol (docs/PACKETS.md lists what still differs and why):

- **HTTP/1.x**: a message is shown on the packet where it ends (tshark reassembles the body
  before it dissects the message), as ``GET /x HTTP/1.1 `` (the trailing space is tshark's)
  or ``HTTP/1.1 200 OK `` followed by `` (text/css)`` — the media type, or the image
  dissector's name (``PNG``, ``JPEG JFIF image``) — when it has a body; the segments before
  its end say ``[TCP segment of a reassembled PDU]`` (over TLS: ``[TLS segment of a
  reassembled PDU]``).
- **HTTP/2**: ``HEADERS[1]: 200 OK`` (the status with its reason phrase), ``Magic`` before the
  client's first frames, `` (text/css)`` after the DATA frame that ends a response body,
  ``[TCP Window Full] , HEADERS…`` (tshark's separator after a TCP-analysis prefix).
- **TLS**: ``Alert (Level: Warning, Description: Close Notify)``, or ``Encrypted Alert`` when
  it cannot be read; ``Hello Retry Request``.
- **DNS**: ``Standard query[ response] 0xID [rcode] TYPE name`` and each answer, authority
  and additional record (``A 1.2.3.4``, ``CNAME x``, ``SOA mname``, ``OPT``), parsed here
  with dpkt from the datagram (a message dpkt refuses keeps wirefall's ``QUERY[id]``).
- **QUIC**: the datagram's last QUIC packet (tshark's column keeps only the last of
  coalesced packets): ``Initial, DCID=…, SCID=…, PKN: 0, CRYPTO, PADDING`` or ``Protected
  Payload (KP0), DCID=…, PKN: 5, ACK, STREAM(0), HEADERS`` — frames in wire order, not
  collapsed, with tshark's short names (``DONE``, ``NCI``, ``SB`` …) and the HTTP/3 frames
  tshark names (HEADERS, SETTINGS, PRIORITY_UPDATE, …) after the STREAM frame carrying them.
"""
from __future__ import annotations

import struct
from http import HTTPStatus
from typing import Any

from .model import Analysis, Frame

SEGMENT = "[TCP segment of a reassembled PDU]"
TLS_SEGMENT = "[TLS segment of a reassembled PDU]"

# ---------------------------------------------------------------- HTTP

# what the body dissector tshark hands a media type to writes in the Info column
_NO_DISSECTOR = {"application/octet-stream", "image/x-icon", "image/vnd.microsoft.icon"}
_MEDIA_NAMES = {"image/png": "PNG", "image/jpeg": "JPEG JFIF image", "image/jpg": "JPEG JFIF image", "image/gif": "GIF89a"}


def media_text(content_type: str | None) -> str | None:
    """`` (text/css)`` / `` (PNG)``: what tshark appends for a message body of this type."""
    if not content_type:
        return None
    ct = content_type.split(";", 1)[0].strip().lower()
    if not ct or ct in _NO_DISSECTOR:  # (no dissector for the type: tshark writes nothing)
        return None
    if ct == "application/json" or ct.endswith("+json"):
        return f", JavaScript Object Notation ({ct})"  # the JSON dissector's own entry
    return f" ({_MEDIA_NAMES.get(ct, ct)})"


def status_text(status: Any) -> str:
    """``200 OK``: the status code with its reason phrase, as tshark's HTTP/2 Info."""
    try:
        code = int(str(status).strip())
        return f"{code} {HTTPStatus(code).phrase}"
    except ValueError:
        return str(status)


def _exchange(analysis: Analysis, ex_id: Any):
    """The exchange with id ``ex_id`` (a map kept on the analysis, rebuilt as exchanges grow)."""
    if not isinstance(ex_id, int):
        return None
    exs = analysis.exchanges
    memo = analysis.__dict__.get("_wf_ex_by_id")
    if memo is None or memo[0] != len(exs):
        memo = (len(exs), {e.id: e for e in exs})
        analysis.__dict__["_wf_ex_by_id"] = memo
    return memo[1].get(ex_id)


def _hdr(headers, name: str) -> str | None:
    for k, v in headers or ():
        if isinstance(k, str) and k.lower() == name:
            return v
    return None


def http1_start_line(fr: Frame) -> str | None:
    f = fr.fields or {}
    if fr.type == "REQUEST" and f.get("method"):
        return f"{f['method']} {f.get('target') or ''} {f.get('version') or fr.protocol.upper()}"
    if fr.type == "RESPONSE" and f.get("status") is not None:
        return f"{f.get('version') or fr.protocol.upper()} {f['status']} {f.get('reason', '')}".rstrip()
    return None


def http1_end_packet(analysis: Analysis, fr: Frame) -> int | None:
    """The packet where the message whose head is ``fr`` ends (its body's last byte)."""
    f = fr.fields or {}
    if fr.type == "RESPONSE" and isinstance(f.get("status"), int) and 100 <= f["status"] < 200:
        return fr.packet  # an interim response has no body (the exchange's end is the final response's)
    e = _exchange(analysis, f.get("exchange"))
    if e is None:
        return None
    return e.request_end_packet if fr.type == "REQUEST" else e.response_end_packet


def http1_info(analysis: Analysis, n: int, frames: list[Frame], on_packet: list[Frame], over_tls: bool = False) -> tuple[str, bool]:
    """(Info of the HTTP/1 messages ending on packet ``n``, whether a message continues past
    it).  ``frames``: the HTTP/1 frames completing on ``n``; ``on_packet``: every frame with
    a byte on it."""
    from .detail import frames_on_packet

    parts: list[str] = []
    pending = False
    for fr in frames:
        if fr.type in ("REQUEST", "RESPONSE"):
            end = http1_end_packet(analysis, fr)
            if end is not None and end > n:
                pending = True  # its body ends later: shown there, in full
                line = http1_start_line(fr)
                if line is not None and not over_tls:
                    parts.append(line + " ")  # (tshark's HTTP writes the head it read before asking TCP for more)
                continue
            line = http1_start_line(fr)
            if line is None:
                continue
            has_body = any(b.type == "BODY" and (b.fields or {}).get("exchange") == (fr.fields or {}).get("exchange")
                           and b.direction == fr.direction for b in frames)
            parts.append(line + " " + (_body_media(analysis, fr) or "" if has_body else ""))
        elif fr.type == "BODY":
            ex = (fr.fields or {}).get("exchange")
            if any(h.type in ("REQUEST", "RESPONSE") and (h.fields or {}).get("exchange") == ex and h.direction == fr.direction
                   for h in frames):
                continue  # (shown with its head, above)
            head = next((h for h in frames_on_packet(analysis, fr.first_packet) if h.type in ("REQUEST", "RESPONSE")
                         and h.direction == fr.direction and (h.fields or {}).get("exchange") == ex), None)
            line = http1_start_line(head) if head is not None else None
            if head is not None and line is not None:
                parts.append(line + " " + (_body_media(analysis, head) or ""))
    if any(fr.packet > n and fr.protocol.startswith("http/") and fr.type == "BODY" for fr in on_packet):
        pending = True
    return "".join(parts), pending


def _body_media(analysis: Analysis, head: Frame) -> str | None:
    e = _exchange(analysis, (head.fields or {}).get("exchange"))
    if e is None:
        return None
    if head.type == "RESPONSE":
        return media_text(e.content_type or _hdr(getattr(e, "response_headers", None), "content-type"))
    return media_text(_hdr(getattr(e, "request_headers", None), "content-type"))


def h2_first_client_packets(analysis: Analysis) -> set[int]:
    """Packets carrying the client's first HTTP/2 frame of each connection (its connection
    preface, ``Magic``, is in front of it)."""
    frames = analysis.frames
    memo = analysis.__dict__.get("_wf_h2_first")
    if memo is not None and memo[0] == len(frames):
        return memo[1]
    seen: dict[int, int] = {}
    for fr in frames:
        if fr.direction == 0 and fr.protocol in ("h2", "h2c") and fr.connection not in seen:
            seen[fr.connection] = fr.first_packet
    out = set(seen.values())
    analysis.__dict__["_wf_h2_first"] = (len(frames), out)
    return out


def h2_summary(analysis: Analysis, fr: Frame) -> str:
    s = f"{fr.type}[{fr.stream_id}]" if fr.stream_id is not None else fr.type
    if fr.headers:
        m, p, st = _hdr(fr.headers, ":method"), _hdr(fr.headers, ":path"), _hdr(fr.headers, ":status")
        if m:
            s += f": {m} {p or ''}".rstrip()
        elif st:
            s += f": {status_text(st)}"
    trailers = fr.type == "HEADERS" and fr.headers and not any(str(k).startswith(":") for k, _ in fr.headers)
    if fr.flags & 0x1 and (fr.type == "DATA" or trailers):  # END_STREAM: tshark dissects the body and names its type
        e = _exchange(analysis, (fr.fields or {}).get("exchange"))
        if e is None:
            e = _h2_exchange(analysis, fr)
        if e is not None:
            ct = e.content_type if fr.direction == 1 else _hdr(getattr(e, "request_headers", None), "content-type")
            s += media_text(ct) or ""
    if fr.error:
        s += " [error]"
    return s


def _h2_exchange(analysis: Analysis, fr: Frame):
    memo = analysis.__dict__.get("_wf_ex_by_stream")
    exs = analysis.exchanges
    if memo is None or memo[0] != len(exs):
        memo = (len(exs), {(e.connection, e.stream_id): e for e in exs})
        analysis.__dict__["_wf_ex_by_stream"] = memo
    return memo[1].get((fr.connection, fr.stream_id))


# ---------------------------------------------------------------- TLS

_ALERT_WORDS = {"mac": "MAC", "psk": "PSK", "ca": "CA"}


def tls_alert_text(fr: Frame) -> str:
    f = fr.fields or {}
    a = f.get("alert")
    if isinstance(a, str) and ": " in a:
        level, desc = a.split(": ", 1)
        words = " ".join(_ALERT_WORDS.get(w, w.capitalize()) for w in desc.split("_"))
        return f"Alert (Level: {level.capitalize()}, Description: {words})"
    if f.get("encrypted") and not f.get("decrypted"):
        return "Encrypted Alert"
    return "Alert"


def hrr_packets(analysis: Analysis) -> set[int]:
    """Packets of the first ServerHello of each connection that had a HelloRetryRequest."""
    frames = analysis.frames
    memo = analysis.__dict__.get("_wf_hrr")
    if memo is not None and memo[0] == len(frames):
        return memo[1]
    conns = analysis.connections
    seen: dict[int, int] = {}
    for fr in frames:
        if fr.protocol != "tls" or fr.connection in seen or not 0 <= fr.connection < len(conns):
            continue
        t = conns[fr.connection].tls
        msgs = (fr.fields or {}).get("messages") or ()
        if t is not None and t.hello_retry and any(str(m).upper().replace("_", "") == "SERVERHELLO" for m in msgs):
            seen[fr.connection] = fr.packet
    out = set(seen.values())
    analysis.__dict__["_wf_hrr"] = (len(frames), out)
    return out


# ---------------------------------------------------------------- DNS

_DNS_OPCODES = {0: "Standard query", 1: "Inverse query", 2: "Server status request", 4: "Zone change notification", 5: "Dynamic update"}
_DNS_RCODES = {1: "Format error", 2: "Server failure", 3: "No such name", 4: "Not implemented", 5: "Refused"}
_DNS_TYPES = {1: "A", 2: "NS", 5: "CNAME", 6: "SOA", 12: "PTR", 13: "HINFO", 15: "MX", 16: "TXT", 28: "AAAA", 33: "SRV", 35: "NAPTR",
              39: "DNAME", 41: "OPT", 43: "DS", 46: "RRSIG", 47: "NSEC", 48: "DNSKEY", 64: "SVCB", 65: "HTTPS", 255: "ANY", 257: "CAA"}


def _dns_name(name: str) -> str:
    return name if name else "<Root>"


def dns_info(payload: bytes) -> str | None:
    """tshark's Info of a DNS message (None: dpkt cannot parse it)."""
    import socket

    import dpkt

    try:
        m = dpkt.dns.DNS(payload)
    except Exception:  # noqa: BLE001 - dpkt raises many kinds on bad input; the caller keeps its own text
        return None
    s = _DNS_OPCODES.get(m.opcode, f"Unknown operation ({m.opcode})") + (" response" if m.qr else "") + f" 0x{m.id:04x}"
    if m.qr and m.rcode:
        s += " " + _DNS_RCODES.get(m.rcode, f"Unknown error ({m.rcode})")
    for q in m.qd:
        s += f" {_DNS_TYPES.get(q.type, f'Unknown ({q.type})')} {_dns_name(q.name)}"
    for rr in list(m.an) + list(m.ns) + list(m.ar):
        t = rr.type
        s += " " + _DNS_TYPES.get(t, f"Unknown ({t})")
        try:
            if t == 1 and len(rr.rdata) == 4:
                s += " " + socket.inet_ntoa(rr.rdata)
            elif t == 28 and len(rr.rdata) == 16:
                s += " " + socket.inet_ntop(socket.AF_INET6, rr.rdata)
            elif t == 5:
                s += " " + _dns_name(rr.cname)
            elif t == 2:
                s += " " + _dns_name(rr.nsname)
            elif t == 12:
                s += " " + _dns_name(rr.ptrname)
            elif t == 6:
                s += " " + _dns_name(rr.mname)
            elif t == 15:
                s += f" {rr.preference} {_dns_name(rr.mxname)}"
            elif t == 33:
                s += f" {rr.priority} {rr.weight} {rr.port} {_dns_name(rr.srvname)}"
        except AttributeError:
            pass
    return s


# ---------------------------------------------------------------- QUIC

# tshark's short frame names in the Info column (packet-quic.c)
QUIC_SHORT = {
    "RESET_STREAM": "RS", "STOP_SENDING": "SS", "NEW_TOKEN": "NT", "MAX_DATA": "MD", "MAX_STREAM_DATA": "MSD",
    "MAX_STREAMS": "MS", "DATA_BLOCKED": "DB", "STREAM_DATA_BLOCKED": "SDB", "STREAMS_BLOCKED": "SB",
    "NEW_CONNECTION_ID": "NCI", "RETIRE_CONNECTION_ID": "RCI", "PATH_CHALLENGE": "PC", "PATH_RESPONSE": "PR",
    "CONNECTION_CLOSE": "CC", "HANDSHAKE_DONE": "DONE", "DATAGRAM": "DG",
}
# HTTP/3 frames tshark 4.0 names in the Info column where they begin (DATA mostly not, reserved types not)
H3_NAMED = {"HEADERS", "SETTINGS", "PRIORITY_UPDATE", "MAX_PUSH_ID", "GOAWAY", "CANCEL_PUSH", "PUSH_PROMISE"}
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
    if kind == "vn":
        return "Version Negotiation"
    if kind == "long":
        return name + (f", DCID={dcid.hex()}" if dcid else "") + (f", SCID={scid.hex()}" if scid else "")
    row = next((r for r in rows if r[0] == off), None)
    s = f"Protected Payload (KP{row[3] if row is not None else 0})"
    cid_len = row[1] - 1 - row[2] if row is not None else short_cid
    if cid_len and cid_len > 0:
        s += f", DCID={payload[off + 1 : off + 1 + cid_len].hex()}"
    return s


def quic_info(analysis: Analysis, n: int, payload: bytes, frames: list[Frame], spanning: list[Frame] | None = None) -> str | None:
    """tshark's Info of a QUIC datagram (None: not a datagram wirefall decoded as QUIC).
    ``frames``: the frames completing on packet ``n``; ``spanning``: every frame with a byte
    on it (HTTP/3 frames are named where they begin, as tshark does)."""
    from .detail import quic_packets_on_packet

    rows = quic_packets_on_packet(analysis, n)
    recs = getattr(analysis, "quic_packets", None) or {}
    info_rows = []
    for cid, d, i in rows:
        tab = recs[(cid, d)]
        info_rows.append((tab.offset[i], tab.hdr_len[i], tab.pn_len(i), (tab.flags[i] >> 4) & 1, tab.pn[i]))
    short_cid = None
    if frames and not info_rows:  # none decrypted here: the DCID length of this direction's other 1-RTT packets
        tab = recs.get((frames[0].connection, frames[0].direction))
        if tab is not None:
            k = next((i for i in range(min(len(tab), 64)) if tab.epoch(i) == 3), None)
            if k is not None:
                short_cid = tab.hdr_len[k] - 1 - tab.pn_len(k)
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
          if fr.protocol == "h3" and fr.first_packet == n and fr.type in H3_NAMED and (fr.type != "DATA" or fr.packet == n)]
    for fr in mine:
        if fr.type in ("PROTECTED", "RETRY"):
            continue
        if fr.type == "STREAM":
            parts.append(f"STREAM({fr.stream_id})" if fr.stream_id is not None else "STREAM")
            for h in [h for h in h3 if h.stream_id == fr.stream_id]:
                parts.append("Unknown" if h.type in H3_UNKNOWN else h.type)
                h3.remove(h)
        else:
            parts.append(QUIC_SHORT.get(fr.type, fr.type))
    return ", ".join(parts)


# ---------------------------------------------------------------- one TCP packet's frames

def stream_info(analysis: Analysis, n: int, done: list[Frame], frames: list[Frame], prefix: str) -> tuple[str | None, bool]:
    """(Info of the frames completing on TCP packet ``n`` in tshark's words, or None when
    they show nothing; whether a message continues past the packet).  ``frames``: every
    frame with a byte on the packet; ``prefix``: the TCP analysis's ``[TCP …] ``."""
    from .detail import frame_summary

    if any(fr.protocol != "tls" for fr in done):
        # decrypted application frames replace the TLS records in the Info column (as in Wireshark)
        done = [fr for fr in done if fr.protocol != "tls" or fr.type != "APPLICATION_DATA"]
    parts: list[str] = []
    h1 = [fr for fr in done if fr.protocol.startswith("http/")]
    conns = analysis.connections
    over_tls = bool(done or frames) and 0 <= (done or frames)[0].connection < len(conns) and conns[(done or frames)[0].connection].tls is not None
    h1_text, pending = (http1_info(analysis, n, h1, frames, over_tls) if h1 or any(fr.protocol.startswith("http/") for fr in frames)
                        else ("", False))
    if over_tls and not h1_text and done and any(fr.protocol != "tls" and fr.packet > n for fr in frames) and all(fr.protocol == "tls" and fr.type == "APPLICATION_DATA" and (fr.fields or {}).get("decrypted")
                                                  for fr in done):
        return TLS_SEGMENT, False  # decrypted records carrying part of a message that ends later
    h1_at = None
    h2_first = False
    hrr = None
    for fr in done:
        p = fr.protocol
        if p.startswith("http/"):
            if h1_at is None:
                h1_at = len(parts)
                parts.append(h1_text)
            continue
        if p == "tls":
            if fr.type == "ALERT":
                parts.append(tls_alert_text(fr))
                continue
            s = frame_summary(fr).replace("End Of Early Data", "End of Early Data")
            if s.startswith("Server Hello"):
                if hrr is None:
                    hrr = hrr_packets(analysis)
                if n in hrr:
                    s = "Hello Retry Request" + s[len("Server Hello"):]
            parts.append(s)
        elif p in ("h2", "h2c"):
            if not h2_first and fr.direction == 0 and n in h2_first_client_packets(analysis):
                parts.append("Magic")
            h2_first = True
            parts.append(h2_summary(analysis, fr))
        else:
            parts.append(frame_summary(fr))
    parts = [x for x in parts if x]
    if not parts:
        return None, pending
    info = ", ".join(parts)  # (after an HTTP/1 line's trailing space too: "HTTP/1.1 101 Switching Protocols , SETTINGS[0]")
    if prefix and h2_first:
        return prefix + ", " + info, pending
    return prefix + info, pending
