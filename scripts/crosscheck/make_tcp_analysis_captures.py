"""Captures for the TCP analysis tests (tests/test_tcp_analysis.py), made on demand, not committed.

    PYTHONPATH=. python scripts/crosscheck/make_tcp_analysis_captures.py OUTDIR

- ``derive(src, dst, drop_every=, swap_every=, dup_every=)``: a real capture made lossy: every
  Nth TCP packet deleted (as ``editcap`` deletes listed packets), every Nth pair of TCP packets
  swapped (timestamps kept in place, so the later one arrives first, as a reordering network
  delivers them), every Nth TCP packet sent twice (the copy 0.2 ms later, as a duplicating
  link does).  Written as classic pcap with the input's link type.
- ``scenarios(dst)``: hand-built Ethernet/IPv4/TCP connections, one per behaviour tshark's
  analysis names, with known timing (10 ms RTT): an HTTP/1.1 exchange (which must still
  decode), then a lost segment, three duplicate ACKs and a fast retransmission, a spurious
  and a timeout retransmission, out-of-order segments, ACKed unseen data, zero window, zero
  window probe and its ACK, window update, window full, keep-alive and its ACK, FIN and RST;
  a retransmitted SYN and a second connection on the same ports with another ISN (ports
  reused); a one-way flow of more than 10 000 unacknowledged segments ending in a FIN sent
  twice (tshark's cap on the unacknowledged list).
"""
from __future__ import annotations

import struct
import sys
from pathlib import Path

FIN, SYN, RST, PSH, ACK = 0x01, 0x02, 0x04, 0x08, 0x10


def write_pcap(path, linktype: int, packets) -> None:
    """``packets``: iterable of (ts float, bytes)."""
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, linktype))
        for ts, data in packets:
            sec = int(ts)
            usec = int(round((ts - sec) * 1e6))
            if usec >= 1_000_000:
                sec, usec = sec + 1, usec - 1_000_000
            f.write(struct.pack("<IIII", sec, usec, len(data), len(data)))
            f.write(data)


def _records(src: str):
    from wirefall.analyzer.capture import read_capture

    return [(r.ts, r.linktype, bytes(r.data)) for r in read_capture(src)]


def _is_tcp(linktype: int, data: bytes) -> bool:
    from wirefall.analyzer.packet import Decoder

    d = Decoder().decode(linktype, data)
    return d is not None and not isinstance(d, str) and d.proto == 6


def derive(src: str, dst, drop_every: int = 0, swap_every: int = 0, dup_every: int = 0) -> Path:
    recs = _records(src)
    lt = recs[0][1] if recs else 1
    out: list[tuple[float, bytes]] = []
    k = 0  # TCP packets seen
    i = 0
    while i < len(recs):
        ts, l, data = recs[i]
        tcp = _is_tcp(l, data)
        if tcp:
            k += 1
            if drop_every and k % drop_every == 0:
                i += 1
                continue
            if swap_every and k % swap_every == 0 and i + 1 < len(recs) and _is_tcp(recs[i + 1][1], recs[i + 1][2]):
                nts, _, ndata = recs[i + 1]
                out.append((ts, ndata))
                out.append((nts, data))
                k += 1
                i += 2
                continue
        out.append((ts, data))
        if tcp and dup_every and k % dup_every == 0:
            out.append((ts + 0.0002, data))
        i += 1
    out.sort(key=lambda x: x[0])  # a duplicate goes after packets of the same 0.2 ms
    write_pcap(dst, lt, out)
    return Path(dst)


# ------------------------------------------------------------------ hand-built connections

def _csum(b: bytes) -> int:
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack(f"!{len(b) // 2}H", b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def tcp_frame(src: bytes, dst: bytes, sport: int, dport: int, seq: int, ack: int, flags: int, win: int,
              payload: bytes = b"", opts: bytes = b"") -> bytes:
    """Ethernet + IPv4 + TCP with correct checksums."""
    if len(opts) % 4:
        opts += b"\x01" * (4 - len(opts) % 4)
    thl = 20 + len(opts)
    tcp = struct.pack("!HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, (thl // 4) << 4, flags, win, 0, 0) + opts + payload
    pseudo = src + dst + struct.pack("!BBH", 0, 6, len(tcp))
    tcp = tcp[:16] + struct.pack("!H", _csum(pseudo + tcp)) + tcp[18:]
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 0, 0x4000, 64, 6, 0, src, dst)
    ip = ip[:10] + struct.pack("!H", _csum(ip)) + ip[12:]
    return b"\x02\x00\x00\x00\x00\x02" + b"\x02\x00\x00\x00\x00\x01" + b"\x08\x00" + ip + tcp


def _opts_syn(ws: int | None) -> bytes:
    o = struct.pack("!BBH", 2, 4, 1460) + b"\x04\x02"
    if ws is not None:
        o += b"\x01" + struct.pack("!BBB", 3, 3, ws)
    return o


class _Conn:
    """One TCP connection built packet by packet; ``send`` appends (ts, frame) to ``out``."""

    def __init__(self, out: list, t: float, cport: int, sport: int = 80, cisn: int = 1000, sisn: int = 500000,
                 cli: bytes = bytes([10, 0, 0, 1]), srv: bytes = bytes([10, 0, 0, 2])):
        self.out, self.t = out, t
        self.ep = {0: (cli, cport), 1: (srv, sport)}
        self.nxt = {0: cisn, 1: sisn}  # next sequence number each side sends
        self.win = {0: 502, 1: 509}

    def send(self, side: int, flags: int, payload: bytes = b"", dt: float = 0.001, seq: int | None = None,
             ack: int | None = None, win: int | None = None, opts: bytes = b"", write: bool = True) -> int:
        """Send from ``side`` (0 client, 1 server); returns the segment's sequence number."""
        self.t += dt
        s = self.nxt[side] if seq is None else seq
        a = self.nxt[1 - side] if ack is None else ack
        w = self.win[side] if win is None else win
        (src, sp), (dst, dp) = self.ep[side], self.ep[1 - side]
        if write:
            self.out.append((self.t, tcp_frame(src, dst, sp, dp, s, a if flags & ACK else 0, flags, w, payload, opts)))
        end = s + len(payload) + (1 if flags & (SYN | FIN) else 0)
        if seq is None or end > self.nxt[side]:
            self.nxt[side] = end
        return s


REQUEST = b"GET / HTTP/1.1\r\nHost: example.test\r\nUser-Agent: wirefall-test\r\n\r\n"
RESPONSE = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 13\r\n\r\nhello, world\n"
REQUEST2 = b"GET /big HTTP/1.1\r\nHost: example.test\r\n\r\n"


def scenarios(dst) -> Path:
    out: list[tuple[float, bytes]] = []
    t0 = 1_700_000_000.0
    c = _Conn(out, t0, 40001)
    rtt = 0.010
    # handshake with window scale 7 both ways, then a normal HTTP/1.1 exchange
    c.send(0, SYN, win=64240, opts=_opts_syn(7))
    c.send(1, SYN | ACK, win=65160, opts=_opts_syn(7), dt=rtt / 2)
    c.send(0, ACK, dt=rtt / 2)
    c.send(0, PSH | ACK, REQUEST)
    c.send(1, ACK, dt=rtt / 2)
    c.send(1, PSH | ACK, RESPONSE, dt=0.002)
    c.send(0, ACK, dt=rtt / 2)
    # a second request; its response body is long, with losses and reordering
    body = bytes(range(256)) * 64  # 16 KiB
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: %d\r\n\r\n" % len(body)
    data = head + body
    segs = [data[i : i + 1000] for i in range(0, len(data), 1000)]
    c.send(0, PSH | ACK, REQUEST2, dt=0.005)
    c.send(1, ACK, dt=rtt / 2)
    base = c.nxt[1]
    c.send(1, ACK, segs[0], dt=0.001)
    c.send(1, ACK, segs[1], dt=0.0005)
    lost = c.send(1, ACK, segs[2], dt=0.0005, write=False)  # lost before the capture point
    c.send(1, ACK, segs[3], dt=0.0005)  # previous segment not captured
    c.send(0, ACK, ack=lost, dt=rtt / 2)  # acks up to the hole
    c.send(0, ACK, ack=lost, dt=0.0003)  # duplicate ACK 1
    c.send(0, ACK, ack=lost, dt=0.0003)  # duplicate ACK 2
    c.send(1, ACK, segs[2], seq=lost, dt=0.002)  # fast retransmission (within 20 ms)
    c.send(0, ACK, dt=rtt / 2)
    c.send(1, ACK, segs[0], seq=base, dt=0.001)  # spurious retransmission (acked already)
    s4 = c.send(1, ACK, segs[4], dt=0.001)
    c.send(1, ACK, segs[4], seq=s4, dt=0.2)  # retransmission after a timeout
    c.send(0, ACK, dt=rtt / 2)
    s5 = c.nxt[1]
    c.send(1, ACK, segs[6], seq=s5 + len(segs[5]), dt=0.001)  # overtakes segs[5]: previous not captured
    c.send(1, ACK, segs[5], seq=s5, dt=0.0005)  # out-of-order (within the RTT)
    c.nxt[1] = s5 + len(segs[5]) + len(segs[6])
    c.send(0, ACK, dt=rtt / 2)
    # the server sends a segment the capture misses; the client acks it: ACKed unseen segment
    c.send(1, ACK, segs[7], write=False, dt=0.001)
    c.send(0, ACK, dt=rtt / 2)
    # zero window: the client's buffer is full; the server probes with one byte
    c.send(1, ACK, segs[8], dt=0.001)
    c.send(0, ACK, win=0, dt=rtt / 2)  # zero window
    probe = c.nxt[1]
    c.send(1, ACK, segs[9][:1], dt=0.05)  # zero window probe
    c.nxt[1] = probe
    c.send(0, ACK, win=0, dt=rtt / 2)  # zero window probe ACK (and zero window)
    c.send(0, ACK, win=16, dt=0.03)  # window update: 16 << 7 = 2048 bytes
    # window full: the server fills the 2048 bytes the client offers
    rest = b"".join(segs[10:])
    c.send(1, ACK, segs[9], dt=rtt / 2)
    c.send(1, ACK, rest[:1048], dt=0.0005)  # reaches the edge of the window
    c.send(0, ACK, win=502, dt=rtt / 2)  # window update
    for i in range(1048, len(rest), 1000):
        c.send(1, ACK, rest[i : i + 1000], dt=0.0005)
    c.send(0, ACK, dt=rtt / 2)
    # keep-alive from the client (one byte before its next sequence number), and its ACK
    c.send(0, ACK, seq=c.nxt[0] - 1, dt=2.0)
    c.send(1, ACK, dt=rtt / 2)
    # close: FIN both ways, then a RST
    c.send(0, FIN | ACK, dt=0.01)
    c.send(1, FIN | ACK, dt=rtt / 2)
    c.send(0, ACK, dt=rtt / 2)
    c.send(0, RST | ACK, dt=0.001)

    # a retransmitted SYN, a short exchange, then the same ports again with another ISN
    r = _Conn(out, c.t + 0.1, 40002, cisn=7000, sisn=900000)
    r.send(0, SYN, win=64240, opts=_opts_syn(None))
    r.send(0, SYN, seq=7000, win=64240, opts=_opts_syn(None), dt=1.0)  # retransmitted SYN
    r.nxt[0] = 7001
    r.send(1, SYN | ACK, win=65160, opts=_opts_syn(None), dt=0.005)
    r.send(0, ACK, dt=0.005)
    r.send(0, PSH | ACK, REQUEST)
    r.send(1, PSH | ACK, RESPONSE, dt=0.005)
    r.send(0, FIN | ACK, dt=0.005)
    r.send(1, FIN | ACK, dt=0.005)
    r.send(0, ACK, dt=0.005)
    r2 = _Conn(out, r.t + 0.5, 40002, cisn=123456789, sisn=77777)
    r2.send(0, SYN, win=64240, opts=_opts_syn(8))
    r2.send(1, SYN | ACK, win=65160, opts=_opts_syn(None), dt=0.005)  # no WS: scaling off both ways
    r2.send(0, ACK, dt=0.005)
    r2.send(0, PSH | ACK, REQUEST, dt=0.001)
    r2.send(1, PSH | ACK, RESPONSE, dt=0.005)
    r2.send(0, RST | ACK, dt=0.005)

    # one way: more than 10 000 unacknowledged segments, then a FIN sent twice
    u = _Conn(out, r2.t + 1.0, 40003, cisn=0xFFFFF000, sisn=4000)  # the sequence numbers wrap too
    u.send(0, SYN, opts=_opts_syn(2))
    u.send(1, SYN | ACK, opts=_opts_syn(2), dt=0.001)
    u.send(0, ACK, dt=0.001)
    for _ in range(10_010):
        u.send(0, ACK, b"0123456789", dt=0.0001)
    fin = u.send(0, FIN | ACK, dt=0.001)
    u.send(0, FIN | ACK, seq=fin, dt=0.3)
    write_pcap(dst, 1, sorted(out, key=lambda x: x[0]))
    return Path(dst)


def main(argv: list[str]) -> int:
    root = Path(__file__).resolve().parents[2]
    out = Path(argv[0] if argv else "/tmp/wirefall-tcp-analysis")
    out.mkdir(parents=True, exist_ok=True)
    print(scenarios(out / "tcp-scenarios.pcap"))
    for name in ("lossy/page-h2.pcapng", "lossy/page-h1.pcapng", "page/page-h2.pcapng", "http/http1-nginx.pcap"):
        src = root / "sample_captures" / name
        stem = name.replace("/", "-").rsplit(".", 1)[0]
        print(derive(src, out / f"{stem}-drop7.pcap", drop_every=7))
        print(derive(src, out / f"{stem}-swap5.pcap", swap_every=5))
        print(derive(src, out / f"{stem}-dup6.pcap", dup_every=6))
        print(derive(src, out / f"{stem}-mixed.pcap", drop_every=11, swap_every=4, dup_every=9))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
