"""Outside truth for tests/test_truth20.py (issue 20: wire-true phases), from tshark alone.

**The TLS records of a TCP connection** (``tls_records``): one tshark pass over the capture
(``-T fields``) lists, per frame, the TLS records that *complete* in it (tshark shows a record
where its last byte arrives) with their content type (the inner one for TLS 1.3) and length,
and — when the frame completes a record reassembled from several segments — that record's
``tcp.segment`` list.  A record's first packet is the first listed segment if it is the frame's
reassembled record (always the first one the frame lists), else the frame itself.

**The decrypted bytes** (``tls_plaintext``): ``tshark -z follow,tls,raw,N`` prints each
decrypted application-data record as one chunk, in order, the server's indented.  The k-th
chunk of a direction is the k-th application-data record of that direction from the first
pass (their counts must agree, else the truth is not trusted and the test fails).

**Where each message begins and ends in those bytes** follows each protocol's framing (its
frame headers, or HTTP/1's Content-Length / chunked / no-body rules): ``http2_heads``,
``spdy_heads``, ``http1_heads`` give, per message that starts a request or response, the offset
of its first byte and of the last byte of its header block.  The record holding the first byte
gives the message's first packet (wirefall's ``request_start_packet`` /
``response_start_packet``); the record holding the header block's last byte, the packet where
tshark shows that record (``response_headers_end_packet``).

**QUIC** (``quic_stream_starts``): the first packet carrying byte 0 of each stream in a STREAM
frame, from tshark's decrypted QUIC frames.
"""
from __future__ import annotations

import bisect
import os
import subprocess
from dataclasses import dataclass

ENV = {"LC_ALL": "C", "PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp")}
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def _tshark(cap: str, keys: list[str], *args: str) -> str:
    opts = ["-o", "tcp.reassemble_out_of_order:TRUE"]
    if keys:
        opts += ["-o", f"tls.keylog_file:{keys[0]}"]
    r = subprocess.run(["tshark", "-r", cap, *opts, *args], capture_output=True, text=True, timeout=600, env=ENV)
    if r.returncode != 0:
        raise RuntimeError(f"tshark {' '.join(args)}: {r.stderr[-400:]}")
    return r.stdout


@dataclass
class Record:
    start: int  # offset of its first byte (header included) in the direction's TCP payload stream
    length: int  # TLSCiphertext length (header excluded)
    last: int  # packet that completed it (where tshark shows it)
    ctype: int  # content type (TLS 1.3: the inner one)
    segments: list[int]  # tshark's tcp.segment list, when the record is the frame's reassembled one


@dataclass
class TcpConn:
    stream: int
    client: tuple[str, int]  # the side that sent the SYN (else the first packet's sender)
    server: tuple[str, int]
    records: tuple[list[Record], list[Record]]  # per direction (0: client → server)
    segments: tuple[list[tuple[int, int, int]], list[tuple[int, int, int]]]  # (packet, seq, len) in file order
    undecrypted: bool = False  # tshark did not decrypt all its records (no content type for some)

    def first_packet(self, d: int, offset: int) -> int:
        """The first packet (file order) whose TCP payload holds stream byte ``offset``."""
        for pkt, seq, n in self.segments[d]:
            if seq <= offset < seq + n:
                return pkt
        raise AssertionError(("no segment holds the byte", d, offset))


def tls_records(cap: str, keys: list[str]) -> tuple[dict[int, TcpConn], dict[int, float]]:
    """The TLS records of every TCP stream, and every packet's time (tshark's epoch)."""
    out = _tshark(cap, keys, "-T", "fields", "-E", "occurrence=a", "-E", "aggregator=|", "-e", "frame.number",
                  "-e", "frame.time_epoch", "-e", "tcp.stream", "-e", "ip.src", "-e", "ipv6.src", "-e", "tcp.srcport",
                  "-e", "ip.dst", "-e", "ipv6.dst", "-e", "tcp.dstport", "-e", "tcp.flags.syn", "-e", "tcp.flags.ack",
                  "-e", "tcp.seq", "-e", "tcp.len", "-e", "tcp.segment", "-e", "tls.record.content_type",
                  "-e", "tls.record.length")
    conns: dict[int, TcpConn] = {}
    times: dict[int, float] = {}
    nxt: dict[tuple[int, int], int] = {}
    for line in out.splitlines():
        f = line.split("\t")
        f += [""] * (16 - len(f))
        fnum = int(f[0])
        times[fnum] = float(f[1])
        if not f[2]:
            continue
        stream = int(f[2])
        src = ((f[3] or f[4]).split("|")[0], int(f[5]))
        dst = ((f[6] or f[7]).split("|")[0], int(f[8]))
        c = conns.get(stream)
        if c is None:
            client, server = (dst, src) if (f[9] == "1" and f[10] == "1") else (src, dst)
            c = conns[stream] = TcpConn(stream, client, server, ([], []), ([], []))
        d = 0 if src == c.client else 1
        n = int(f[12] or 0)
        if n:
            c.segments[d].append((fnum, int(f[11]), n))
        if not f[14]:
            continue
        segs = [int(x) for x in f[13].split("|") if x]
        types = [int(x) for x in f[14].split("|")]
        lens = [int(x) for x in f[15].split("|")]
        if len(types) != len(lens):  # records tshark could not decrypt (a connection without its keys)
            c.undecrypted = True
            continue
        for i, (t, ln) in enumerate(zip(types, lens)):
            if (stream, d) not in nxt:  # the first record starts at the direction's first payload byte
                nxt[(stream, d)] = min(s for _, s, _ in c.segments[d])
            start = nxt[(stream, d)]
            c.records[d].append(Record(start, ln, fnum, t, segs if i == 0 else []))
            nxt[(stream, d)] = start + 5 + ln
    return conns, times


def tls_plaintext(cap: str, keys: list[str], stream: int, client: tuple[str, int]) -> tuple[bytes, bytes]:
    """The decrypted application data of TCP stream ``stream`` per direction (0: from
    ``client``) — ``tshark -z follow,tls,raw``, whose Node 0 is the side it decrypted first
    (its chunks unindented)."""
    out = _tshark(cap, keys, "-q", "-z", f"follow,tls,raw,{stream}")
    chunks: tuple[list[bytes], list[bytes]] = ([], [])
    node0_is_client = True
    for ln in out.splitlines():
        if ln.startswith("Node 0: "):
            a, _, p = ln[8:].strip().rpartition(":")
            node0_is_client = (a.strip("[]"), int(p)) == client
            continue
        if not ln.strip() or ln.startswith(("Follow:", "Filter:", "Node ", "=")):
            continue
        indented = ln.startswith("\t")
        d = (1 if indented else 0) if node0_is_client else (0 if indented else 1)
        chunks[d].append(bytes.fromhex(ln.strip()))
    return b"".join(chunks[0]), b"".join(chunks[1])


def plaintext_starts(records: list[Record], total: int) -> tuple[list[Record], list[int] | None]:
    """The application-data records and where each one's plaintext starts in the direction's
    decrypted bytes.  An AEAD record's plaintext is its length less a constant per connection
    (TLS 1.3: tag + inner type, 17, or 9 with CCM_8; TLS 1.2 GCM/CCM: explicit nonce + tag, 24;
    ChaCha20: 16): the constant is the one that makes the records' lengths add up to tshark's
    decrypted bytes.  With CBC (padding varies) no constant does: None."""
    app = [r for r in records if r.ctype == 23]
    for overhead in (17, 24, 16, 9):
        if sum(r.length - overhead for r in app) == total:
            break
    else:
        return app, None
    starts, pos = [], 0
    for r in app:
        starts.append(pos)
        pos += r.length - overhead
    return app, starts


# ------------------------------------------------------------------ framing of each protocol


@dataclass
class Head:
    direction: int
    stream: int | None  # HTTP/2 / SPDY stream id; None for HTTP/1 (then ``index``: k-th message)
    index: int
    start: int  # offset of the message's first byte in the direction's plaintext
    headers_end: int  # offset of the last byte of its header block


def http2_heads(data: bytes, direction: int) -> list[Head]:
    """The first HEADERS (with its CONTINUATIONs) of each stream, and PUSH_PROMISEs."""
    out: list[Head] = []
    i = len(PREFACE) if direction == 0 and data.startswith(PREFACE) else 0
    seen: set[int] = set()
    open_block: Head | None = None
    while i + 9 <= len(data):
        n = int.from_bytes(data[i:i + 3], "big")
        t, flags = data[i + 3], data[i + 4]
        sid = int.from_bytes(data[i + 5:i + 9], "big") & 0x7FFFFFFF
        end = i + 9 + n - 1
        if t == 1 and sid not in seen:
            seen.add(sid)
            open_block = Head(direction, sid, len(out), i, end)
            out.append(open_block)
            if flags & 0x4:
                open_block = None
        elif t == 9 and open_block is not None and sid == open_block.stream:
            open_block.headers_end = end
            if flags & 0x4:
                open_block = None
        i += 9 + n
    assert i == len(data), ("HTTP/2 framing does not end at the stream's end", i, len(data))
    return out


def spdy_heads(data: bytes, direction: int) -> list[Head]:
    """SYN_STREAM (client) / SYN_REPLY (server) of each stream (SYN_STREAMs the server sends
    are pushes: their first byte starts the pushed response)."""
    out: list[Head] = []
    i = 0
    while i + 8 <= len(data):
        n = int.from_bytes(data[i + 5:i + 8], "big")
        if data[i] & 0x80:
            t = int.from_bytes(data[i + 2:i + 4], "big")
            if t in (1, 2):
                sid = int.from_bytes(data[i + 8:i + 12], "big") & 0x7FFFFFFF
                out.append(Head(direction, sid, len(out), i, i + 8 + n - 1))
        i += 8 + n
    assert i == len(data), ("SPDY framing does not end at the stream's end", i, len(data))
    return out


def _h1_head(data: bytes, i: int) -> tuple[str, dict[str, str], int]:
    j = data.index(b"\r\n\r\n", i)
    lines = data[i:j].decode("latin-1").split("\r\n")
    hdrs: dict[str, str] = {}
    for ln in lines[1:]:
        k, _, v = ln.partition(":")
        hdrs[k.strip().lower()] = v.strip()
    return lines[0], hdrs, j + 4


def _h1_body_end(data: bytes, i: int, hdrs: dict[str, str], none: bool) -> int:
    if none:
        return i
    if "chunked" in hdrs.get("transfer-encoding", "").lower():
        while True:
            j = data.index(b"\r\n", i)
            n = int(data[i:j].split(b";")[0], 16)
            if n:
                i = j + 2 + n + 2
                continue
            if data[j + 2:j + 4] == b"\r\n":  # the last chunk, no trailers
                return j + 4
            return data.index(b"\r\n\r\n", j + 2) + 4
    if "content-length" in hdrs:
        return i + int(hdrs["content-length"])
    return len(data)  # (a response without a length: to the connection's end)


def http1_heads(req: bytes, resp: bytes) -> tuple[list[Head], list[Head]]:
    """Each request and each final response (1xx skipped: wirefall's response is the final
    one... its start is the first byte of the first response message, so 1xx count)."""
    rq: list[Head] = []
    methods = []
    i = 0
    while i < len(req):
        line, hdrs, body = _h1_head(req, i)
        assert line.split(" ")[-1].startswith("HTTP/1."), line
        methods.append(line.split(" ", 1)[0])
        rq.append(Head(0, None, len(rq), i, body - 1))
        i = _h1_body_end(req, body, hdrs, "content-length" not in hdrs and "transfer-encoding" not in hdrs)
    rs: list[Head] = []
    i = 0
    k = 0
    while i < len(resp):
        line, hdrs, body = _h1_head(resp, i)
        assert line.startswith("HTTP/1."), line
        code = int(line.split(" ")[1])
        if 100 <= code < 200:  # interim: the exchange's response starts here, its headers end later
            if len(rs) == k:
                rs.append(Head(1, None, k, i, body - 1))
            i = body
            continue
        if len(rs) == k:
            rs.append(Head(1, None, k, i, body - 1))
        else:
            rs[-1].headers_end = body - 1
        m = methods[k] if k < len(methods) else "GET"
        i = _h1_body_end(resp, body, hdrs, m == "HEAD" or code in (204, 304))
        k += 1
    return rq, rs


# ------------------------------------------------------------------ records → packets


def locate(conn: TcpConn, d: int, total: int, offsets: list[int]) -> list[tuple[int, int] | None]:
    """(first packet, completing packet) of the application-data record holding each
    plaintext offset of direction ``d``: the first packet is the first that carried the
    record's first byte on the wire (TCP sequence numbers), the completing one where tshark
    shows the record.  Where the records' plaintext lengths are not known (CBC) only offset 0
    is placed (in the first application-data record, none of which is empty here); None for
    the others."""
    app, starts = plaintext_starts(conn.records[d], total)
    out: list[tuple[int, int] | None] = []
    for off in offsets:
        if starts is None:
            k = 0 if off == 0 and app else None
        else:
            k = bisect.bisect_right(starts, off) - 1
        if k is None:
            out.append(None)
            continue
        r = app[k]
        out.append((conn.first_packet(d, r.start), r.last))
    return out


def quic_stream_starts(cap: str, keys: list[str]) -> dict[tuple[int, int, int], int]:
    """{(udp src port, dst port, stream id): first packet carrying the stream's byte 0}."""
    out = _tshark(cap, keys, "-T", "fields", "-E", "occurrence=a", "-E", "aggregator=|", "-e", "frame.number",
                  "-e", "udp.srcport", "-e", "udp.dstport", "-e", "quic.frame_type", "-e", "quic.stream.stream_id",
                  "-e", "quic.stream.offset", "-e", "quic.stream.off", "-Y", "quic.stream.stream_id")
    res: dict[tuple[int, int, int], int] = {}
    for line in out.splitlines():
        f = line.split("\t") + [""] * 7
        fnum, sp, dp = int(f[0]), int(f[1]), int(f[2])
        types = [int(x) for x in f[3].split("|") if x]
        sids = [int(x) for x in f[4].split("|") if x]
        offs = [int(x) for x in f[5].split("|") if x]
        offbits = [x in ("1", "True") for x in f[6].split("|") if x]
        stream_types = [t for t in types if 8 <= t <= 15]
        assert len(stream_types) == len(sids) == len(offbits), line
        oi = 0
        for sid, has_off in zip(sids, offbits):
            off = 0
            if has_off:
                off = offs[oi]
                oi += 1
            if off == 0:
                res.setdefault((sp, dp, sid), fnum)
    return res
