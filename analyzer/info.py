"""The packet list's Info column in tshark's words (``tshark -T fields -e _ws.col.Info``,
Wireshark 4.0).

``analyzer.detail.row_columns`` builds the row and calls ``stream_info`` (a TCP packet's frames)
or ``datagram_info`` (a UDP datagram's); each protocol's own wording is a hook of its module in
``analyzer/protocols`` (``info``, ``shown``, ``continues``, ``datagram_info``, ``summary``; named by its
registry descriptor), written there protocol by protocol (HTTP/1.x, HTTP/2, SPDY, TLS, QUIC/HTTP/3,
DNS; docs/PACKETS.md lists what still differs from tshark and why).  This module holds what
several protocols share: the media type tshark appends after a body, the status phrase, the
exchange of a frame, how the parts are joined, the column's length cap (``cap_info``, applied
once in ``row_columns``) and the TCP segments that arrived ahead of their PDU (``ahead_of_its_pdu``).
"""
from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

from wirefall.dissectors.registry import find

from .model import Analysis, Frame
from .protocols import hooks

SEGMENT = "[TCP segment of a reassembled PDU]"
TLS_SEGMENT = "[TLS segment of a reassembled PDU]"

# tshark's Info column is a buffer of this many bytes, its NUL included (COL_MAX_INFO_LEN,
# epan/column-info.h): what a dissector writes past 4095 bytes of UTF-8 is dropped, with no
# ellipsis (tshark 4.0.17 on a request line of 5,000 bytes: its first 4,095)
COL_MAX_INFO_LEN = 4096


def cap_info(text: str) -> str:
    """``text`` as tshark's Info column holds it: its first 4,095 bytes of UTF-8.  tshark cuts
    at the byte, inside a character if one straddles the limit (its column then ends with
    that character's first bytes, not text); a str holds no half character, so the cut here
    drops it (the column is then 1 to 3 bytes shorter than tshark's, the bytes before equal).
    Constant time past the first 4,095 characters (each is at least one byte)."""
    if len(text) < COL_MAX_INFO_LEN // 4:  # (at most 4 bytes a character: always within)
        return text
    b = text[:COL_MAX_INFO_LEN].encode("utf-8", "surrogatepass")
    if len(b) < COL_MAX_INFO_LEN:
        return text
    k = COL_MAX_INFO_LEN - 1
    while k > 0 and b[k] & 0xC0 == 0x80:  # (b[k] continues the character that straddles: drop it)
        k -= 1
    return b[:k].decode("utf-8", "surrogatepass")

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


def exchange_by_id(analysis: Analysis, ex_id: Any):
    """The exchange with id ``ex_id`` (a map kept on the analysis, rebuilt as exchanges grow)."""
    if not isinstance(ex_id, int):
        return None
    exs = analysis.exchanges
    memo = analysis.__dict__.get("_wf_ex_by_id")
    if memo is None or memo[0] != len(exs):
        memo = (len(exs), {e.id: e for e in exs})
        analysis.__dict__["_wf_ex_by_id"] = memo
    return memo[1].get(ex_id)


def header(headers, name: str) -> str | None:
    """The first value of header ``name`` (lower case) in a header list."""
    for k, v in headers or ():
        if isinstance(k, str) and k.lower() == name:
            return v
    return None


def frame_text(fr, name: str | None = None) -> str:
    """A frame's generic one-line form, ``analyzer.detail.frame_summary``'s when the protocol has
    no ``summary`` hook (``HEADERS[1]: GET /``, ``DATA[3]``, ``[error]`` after a frame that
    failed); ``name``: its type as the protocol's hook names it (HTTP/2: ``Unknown type (250)``)."""
    name = fr.type if name is None else name
    s = f"{name}[{fr.stream_id}]" if fr.stream_id is not None else name
    if fr.headers:
        m = p = st = None  # (the first of each, one pass)
        for k, v in fr.headers:
            if k == ":method" and m is None:
                m = v
            elif k == ":path" and p is None:
                p = v
            elif k == ":status" and st is None:
                st = v
        if m:
            s += f": {m} {p or ''}".rstrip()
        elif st:
            s += f": {st}"
    if fr.error:
        s += " [error]"
    return s


@dataclass(slots=True)
class InfoContext:
    """What a protocol's ``info`` hook sees of the TCP packet ``n`` it writes for."""

    analysis: Analysis
    n: int
    done: list[Frame]  # the frames completing on the packet, in order
    frames: list[Frame]  # every frame of the segment's direction with a byte on it
    over_tls: bool  # the connection is TLS (the frames were decrypted)
    pending: bool = False  # a message goes on past the packet (the hook says so)
    comma_after_prefix: bool = False  # tshark writes ", " after a TCP-analysis prefix (HTTP/2 does)
    memo: dict[str, Any] = field(default_factory=dict)  # per-protocol state across the packet's frames


# ---------------------------------------------------------------- one TCP packet's frames

def stream_info(analysis: Analysis, n: int, done: list[Frame], frames: list[Frame], prefix: str) -> tuple[str | None, bool]:
    """(Info of the frames completing on TCP packet ``n`` in tshark's words, or None when
    they show nothing; whether a message continues past the packet).  ``frames``: every
    frame with a byte on the packet; ``prefix``: the TCP analysis's ``[TCP …] ``."""
    from .detail import frame_summary

    for proto in dict.fromkeys(fr.protocol for fr in done):
        shown = hooks(proto).shown
        if shown is not None:  # a protocol whose tshark dissector clears the column (SPDY)
            done = shown(analysis, n, done)
    if any(fr.protocol != "tls" for fr in done):
        # decrypted application frames replace the TLS records in the Info column (as in Wireshark)
        done = [fr for fr in done if fr.protocol != "tls" or fr.type != "APPLICATION_DATA"]
    conns = analysis.connections
    first = done or frames
    over_tls = bool(first) and 0 <= first[0].connection < len(conns) and conns[first[0].connection].tls is not None
    if over_tls and done and any(fr.protocol != "tls" and fr.packet > n for fr in frames) and all(
            fr.protocol == "tls" and fr.type == "APPLICATION_DATA" and (fr.fields or {}).get("decrypted") for fr in done):
        return prefix + TLS_SEGMENT, False  # decrypted records carrying part of a message that ends later (a fast retransmission's prefix kept, as tshark's)
    ctx = InfoContext(analysis, n, done, frames, over_tls)
    parts: list[str] = []
    for fr in done:
        h = hooks(fr.protocol)
        s = h.info(ctx, fr) if h.info is not None else None
        parts.append(frame_summary(fr) if s is None else s)
    pending = ctx.pending
    if not pending:
        seen = set()
        for fr in frames:
            if fr.protocol not in seen:
                seen.add(fr.protocol)
                c = hooks(fr.protocol).continues
                if c is not None and c(ctx):
                    pending = True
                    break
    parts = [x for x in parts if x]
    if not parts:
        return None, pending
    info = ", ".join(parts)  # (after an HTTP/1 line's trailing space too: "HTTP/1.1 101 Switching Protocols , SETTINGS[0]")
    if prefix and ctx.comma_after_prefix:
        return prefix + ", " + info, pending
    return prefix + info, pending


# ---------------------------------------------------------------- one UDP datagram's frames

def datagram_info(analysis: Analysis, n: int, payload: bytes, frames: list[Frame], spanning: list[Frame]) -> str | None:
    """tshark's Info of a UDP datagram, from the first protocol on it with a ``datagram_info``
    hook (QUIC, DNS); None: no protocol writes one (the caller keeps wirefall's own text)."""
    for fr in frames:
        h = hooks(fr.protocol).datagram_info
        if h is not None:
            return h(analysis, n, payload, frames, spanning)
    return None


# ---------------------------------------------------------------- a segment ahead of its PDU

def ahead_of_its_pdu(analysis: Analysis, n: int, conn_id: int, sender: tuple[str, int], seq: int, plen: int) -> bool:
    """Whether TCP segment ``n`` (``plen`` bytes from sequence number ``seq``, sent by
    ``sender``) carries bytes of a frame that completes on a later packet, its first byte
    not captured before it: a segment that arrived after a hole and before the
    retransmission filling it.  tshark (out-of-order reassembly on) holds it until the hole is
    filled and writes ``[TCP segment of a reassembled PDU]``; the frame index does not have it
    (a frame is on the packets from its first byte's packet, here the retransmission, up to
    its last), so the stream offsets decide.  Only on a connection a dissector recognised."""
    conns = analysis.connections
    if not (plen and 0 <= conn_id < len(conns)):
        return False
    c = conns[conn_id]
    if c.transport != "tcp" or c.protocol is None or c.tcp is None:
        return False
    d = 0 if tuple(sender) == tuple(c.client) else 1
    isn = c.tcp.isn[d]
    if isn is None:
        return False
    g = _stream_spans(analysis).get((conn_id, d))
    if not g:
        return False
    if not g[3]:  # (a frame added out of offset order: sort once)
        rows = sorted(zip(g[0], g[1], g[2], strict=True))
        g[:] = [[r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows], True]
    starts, ends, packets = g[0], g[1], g[2]
    a = (seq - isn) & 0xFFFFFFFF
    b = a + plen
    i = max(bisect_right(starts, a) - 1, 0)
    while i < len(starts) and starts[i] < b:
        if ends[i] > a and packets[i] > n:
            return True
        i += 1
    return False


def _stream_spans(analysis: Analysis) -> dict[tuple[int, int], list]:
    """(connection, direction) -> ``[starts, ends, packets, sorted]``: the TCP stream's frames
    (first byte's offset, end offset, completing packet), sorted by offset when asked for:
    the frames of the byte stream itself (a TLS connection's records, a cleartext
    connection's HTTP/1, HTTP/2 and SPDY frames; not the frames inside decrypted records,
    whose offsets are the plaintext's).  Kept on the analysis and extended as frames are
    added (loading: frames are only appended)."""
    frames = analysis.frames
    nfr = len(frames)
    memo = analysis.__dict__.get("_wf_stream_spans")
    if memo is None:
        memo = analysis.__dict__["_wf_stream_spans"] = [0, {}]
    done, groups = memo
    if done < nfr:
        conns = analysis.connections
        for fr in frames[done:nfr]:
            cid = fr.connection
            if fr.offset < 0 or not 0 <= cid < len(conns):
                continue
            c = conns[cid]
            if c.transport != "tcp" or c.tls is not None and fr.protocol != "tls":
                continue
            g = groups.get((cid, fr.direction))
            if g is None:
                g = groups[(cid, fr.direction)] = [[], [], [], True]
            if g[0] and fr.offset < g[0][-1]:
                g[3] = False
            d = find(fr.protocol)
            g[0].append(fr.offset)
            g[1].append(fr.offset + (d.frame_header if d is not None else 0) + max(fr.length, 1))
            g[2].append(fr.packet)
        memo[0] = nfr
    return groups
