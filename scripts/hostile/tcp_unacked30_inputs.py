"""Hostile TCP flows for tshark's list of unacknowledged segments (analyzer/tcp_analysis.py:
``tcp.analysis.acks_frame``, ``ack_rtt``, ``bytes_in_flight``, ``push_bytes_sent``, ``rto``,
``rto_frame``), each built to make a walk of the whole list per ACK cost quadratic time.

Every input is a function of a scale ``s`` (packets grow linearly with it; ``s = 1`` is small
enough for tshark, which walks its list on every ACK and every data segment) returning
``[(timestamp, Ethernet frame)]``:

- ``nibble``: 1,000·s segments of 10 bytes with 10-byte gaps sent in reverse order, then
  2,000·s ACKs whose numbers "nibble" inside them (each cuts a segment a byte shorter);
- ``backforth``: the same reversed segments, ACKs going forward and jumping back, old segments
  sent again (they join the list out of order);
- ``sack``: a bulk flow sent in a shuffled order with losses and retransmissions, the receiver
  answering every other segment with three SACK blocks;
- ``many_flows``: s flows, each of 9,990 segments sent with neighbours swapped (near the
  10,000-segment cap), then 100 ACKs cutting into them;
- ``wrap``: sequence numbers wrapping past 2^32 in the middle of a shuffled list, with segments
  before the flow's base (relative numbers wrapping too) and nibbling ACKs;
- ``dup_nibble``: the list in order but each segment sent 50·s times (a retransmission
  storm), then ACKs nibbling inside them (every copy is cut by every ACK);
- ``spread``: reversed segments, then 1,000·s times a segment 2^31 past them (the one shape
  the list cannot be ordered in: walked, under a budget) and an ACK nibbling inside them;
  then 200·s new segments, each followed by an ACK of a whole one;
- ``spread_fin`` (``EXTRA``): ``spread`` at the 10,000-segment cap until the walk budget runs
  out, then a FIN (tshark's list full: it does not count it; ``spread_fin_room``: it does;
  ``spread_fin_short``: 2,000 segments, far from the cap: it does, and that is known).

``python scripts/hostile/tcp_unacked30_inputs.py OUTDIR [SCALE]`` writes ``NAME.pcap`` for each
(tests/test_tcp_hostile30.py builds them at test time; nothing made is committed).
"""
from __future__ import annotations

import random
import struct
import sys
from pathlib import Path
from collections.abc import Callable

M32 = 0xFFFFFFFF
FIN, SYN, RST, PSH, ACK = 0x01, 0x02, 0x04, 0x08, 0x10
C_IP, S_IP = bytes([10, 30, 0, 1]), bytes([10, 30, 0, 2])
T0 = 1_700_000_000.0
_ETH = b"\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01\x08\x00"

Frames = list[tuple[float, bytes]]


def frame(src: bytes, dst: bytes, sport: int, dport: int, seq: int, ack: int, flags: int, n: int = 0,
          opts: bytes = b"", win: int = 65535) -> bytes:
    """An Ethernet/IPv4/TCP frame with ``n`` zero bytes of data (checksums 0: tshark does not check them)."""
    while len(opts) % 4:
        opts += b"\x01"
    tcp = struct.pack("!HHIIBBHHH", sport, dport, seq & M32, ack & M32 if flags & ACK else 0,
                      (5 + len(opts) // 4) << 4, flags, win, 0, 0) + opts + bytes(n)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 0, 0, 64, 6, 0, src, dst)
    return _ETH + ip + tcp


def sack_opt(*blocks: tuple[int, int]) -> bytes:
    return b"\x01\x01" + bytes([5, 2 + 8 * len(blocks)]) + b"".join(struct.pack("!II", a & M32, b & M32) for a, b in blocks)


class _Conv:
    """One conversation: client port ``cp`` to server port 80, the server sending the data."""

    def __init__(self, out: Frames, cp: int, ci: int, si: int, t: float, sack_ok: bool = False):
        self.out, self.cp, self.ci, self.si = out, cp, ci, si
        self.t = t
        self.sent = 0
        self.last = si + 1  # the client's last ACK number
        so = b"\x04\x02" if sack_ok else b""
        self.c(ci, 0, SYN, opts=so)
        self.s(si, ci + 1, SYN | ACK, opts=so)
        self.c(ci + 1, si + 1, ACK)

    def _tick(self) -> float:
        self.t += 1e-5
        return self.t

    def c(self, seq: int, ack: int, flags: int = ACK, n: int = 0, opts: bytes = b"") -> None:
        self.out.append((self._tick(), frame(C_IP, S_IP, self.cp, 80, seq, ack, flags, n, opts)))

    def s(self, seq: int, ack: int, flags: int = ACK, n: int = 0, opts: bytes = b"") -> None:
        self.out.append((self._tick(), frame(S_IP, C_IP, 80, self.cp, seq, ack, flags, n, opts)))

    def data(self, off: int, n: int, flags: int = ACK | PSH) -> None:
        """Server data at offset ``off`` from its ISN + 1; every 7th is followed by the client's
        last ACK again (tshark counts no bytes in flight from a segment after a gap to the
        peer's next ACK: without it the reversed lists would show none)."""
        self.s(self.si + 1 + off, self.ci + 1, flags, n)
        self.sent += 1
        if self.sent % 7 == 0:
            self.c(self.ci + 1, self.last, ACK)

    def ack(self, off: int, opts: bytes = b"") -> None:
        """A client ACK of the server's stream up to offset ``off``."""
        self.last = self.si + 1 + off
        self.c(self.ci + 1, self.last, ACK, opts=opts)


def _nibbles(cv: _Conv, m: int, start: int = 1) -> None:
    """``m`` ACKs, each a byte further inside the 10-byte segments (skipping the 10-byte gaps)."""
    a = start
    for _ in range(m):
        cv.ack(a)
        a += 1
        if a % 20 >= 10:
            a += 20 - a % 20


def nibble(s: float = 1) -> Frames:
    out: Frames = []
    n, m = int(1000 * s), int(2000 * s)
    cv = _Conv(out, 40000, 1000, 5000, T0)
    for k in reversed(range(n)):
        cv.data(20 * k, 10)
    _nibbles(cv, m)
    return out


def backforth(s: float = 1) -> Frames:
    out: Frames = []
    n, m = int(1000 * s), int(2000 * s)
    cv = _Conv(out, 40001, 2000, 70000, T0)
    for k in reversed(range(n)):
        cv.data(20 * k, 10)
    a = 1
    for k in range(m):
        if k % 5 == 4:
            cv.ack(max(a - 337, 0))  # back
        else:
            a += 7
            cv.ack(a)
        if k % 4 == 3:
            cv.data(20 * max(a // 20 - 9, 0), 10)  # an old segment again: it joins out of order
    cv.ack(20 * n)
    return out


def sack(s: float = 1, seed: int = 30) -> Frames:
    rnd = random.Random(seed)
    out: Frames = []
    n = int(1200 * s)
    cv = _Conv(out, 40002, 3000, 90000, T0, sack_ok=True)
    order = list(range(n))
    for b in range(0, n, 40):  # shuffled within windows of 40 segments
        w = order[b : b + 40]
        rnd.shuffle(w)
        order[b : b + 40] = w
    lost = set(rnd.sample(range(n), n // 15))
    got: set[int] = set()
    cum = 0  # segments received contiguously
    later: list[int] = []
    for i, k in enumerate(order):
        cv.data(100 * k, 100)
        if k in lost:
            lost.discard(k)
            later.append(k)  # (sent again some segments on)
        else:
            got.add(k)
        if i % 7 == 6 and later:
            r = later.pop(0)
            cv.data(100 * r, 100)
            got.add(r)
        while cum in got:
            cum += 1
        if i % 2:
            # three SACK blocks: runs received above the cumulative ACK, newest first
            runs: list[tuple[int, int]] = []
            k2 = cum + 1
            while k2 < n and len(runs) < 3:
                if k2 in got:
                    e = k2
                    while e in got:
                        e += 1
                    runs.append((100 * k2, 100 * e))
                    k2 = e
                k2 += 1
            a0 = cv.si + 1
            cv.ack(100 * cum, sack_opt(*[(a0 + x, a0 + y) for x, y in runs]) if runs else b"")
    for r in later:
        cv.data(100 * r, 100)
    cv.ack(100 * n)
    return out


def many_flows(s: float = 1) -> Frames:
    out: Frames = []
    for f in range(max(1, int(s))):
        cv = _Conv(out, 41000 + f, 4000 + f, 100000 * f, T0 + 10 * f)
        n = 9990
        for k in range(0, n, 2):  # neighbours swapped
            cv.data(20 * (k + 1), 10)
            cv.data(20 * k, 10)
        _nibbles(cv, 100)
        cv.ack(20 * n // 2)
        _nibbles(cv, 60, 20 * n // 2 + 1)
    return out


def wrap(s: float = 1, seed: int = 31) -> Frames:
    rnd = random.Random(seed)
    out: Frames = []
    n, m = int(1000 * s), int(1500 * s)
    si = (1 << 32) - 20 * (n // 2)  # the server's numbers wrap half way through
    cv = _Conv(out, 40003, 5000, si, T0)
    ks = list(range(n))
    rnd.shuffle(ks)
    for i, k in enumerate(ks):
        cv.data(20 * k, 10)
        if i % 97 == 0:
            cv.data(-20 * (i // 97 + 1), 10)  # before the base: relative numbers wrap as well
    a = 1
    for k in range(m):
        cv.ack(a)
        a += 1 if k % 3 else 13
        if k % 50 == 49:
            cv.data(20 * rnd.randrange(n), 10)
    cv.ack(20 * n)
    return out


def dup_nibble(s: float = 1) -> Frames:
    out: Frames = []
    copies, segs = int(50 * s), 20
    cv = _Conv(out, 40004, 6000, 200000, T0)
    for k in range(segs):
        for _ in range(copies):
            cv.data(500 * k, 500)
    a = 1
    for _ in range(int(2000 * s)):
        cv.ack(a)
        a += 5 if s <= 1 else 1
        if a % 500 == 0:
            a += 1
    cv.ack(500 * segs)
    return out


def spread(s: float = 1) -> Frames:
    out: Frames = []
    n, m = int(1000 * s), int(1000 * s)
    cv = _Conv(out, 40005, 7000, 300000, T0)
    for k in reversed(range(n)):
        cv.data(20 * k, 10)
    a = 1
    for _ in range(m):
        cv.data(a + (1 << 31) + 1000, 10)  # 2^31 past the list: the next ACK removes it, walking the list
        cv.ack(a)
        a += 1
        if a % 20 >= 10:
            a += 20 - a % 20
    for i in range(int(200 * s)):  # then new segments, and ACKs of whole ones
        cv.data(20 * (n + i), 10)
        cv.ack(20 * (a // 20 + i) + 10)
    return out


def spread_fin(s: float = 1, full: bool = True, n: int = 9_999) -> Frames:
    """``spread`` at tshark's 10,000-segment cap: ``n`` segments in order, then (60·s times) a
    segment 2^31 past them (the flow's highest next seq is then there) and an ACK nibbling
    inside them, each walking the full list, until the walk budget runs out (WALK_BUDGET_FLOW)
    and the list is no longer followed; then, with ``full``, segments sent again that fill
    tshark's list to its cap, so that it does not count the FIN that follows at the highest
    next seq (without: the list still has room and it does); then the close (the client's ACK
    of the FIN, the FIN again — a retransmission only if the first one counted —, the client's
    FIN and the server's ACK of it — "previous segment not captured" only if neither counted)."""
    out: Frames = []
    cv = _Conv(out, 40006, 8000, 400000, T0)
    for k in range(n):
        cv.data(20 * k, 10)
    a = 1
    top = 0
    for _ in range(int(60 * s)):
        cv.data(a + (1 << 31) + 1000, 10)
        top = a + (1 << 31) + 1010
        cv.ack(a)
        a += 1
        if a % 20 >= 10:
            a += 20 - a % 20
    for i in range(40 if full else 0):  # (more than the segments the nibbling ACKs removed)
        cv.data(20 * (n + i), 10)
    cv.s(cv.si + 1 + top, cv.ci + 1, FIN | ACK)
    cv.ack(top + 1)
    cv.s(cv.si + 1 + top, cv.ci + 1, FIN | ACK)  # (the FIN again)
    cv.c(cv.ci + 1, cv.last, FIN | ACK)
    cv.s(cv.si + 2 + top, cv.ci + 2, ACK)
    cv.ack(top + 1)
    return out


INPUTS: dict[str, Callable[..., Frames]] = {
    "nibble": nibble, "backforth": backforth, "sack": sack, "many_flows": many_flows,
    "wrap": wrap, "dup_nibble": dup_nibble, "spread": spread,
}
# inputs of tests/test_tcp_budget31.py (not of the linearity test: their lists are at the cap)
EXTRA: dict[str, Callable[..., Frames]] = {
    "spread_fin": spread_fin, "spread_fin_room": lambda s=1: spread_fin(s, full=False),
    "spread_fin_short": lambda s=1: spread_fin(3 * s, full=False, n=2_000),
}


def write(path: Path, frames: Frames) -> int:
    """A classic pcap of ``frames``; returns the number of packets."""
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for ts, fr in frames:
            sec = int(ts)
            f.write(struct.pack("<IIII", sec, round((ts - sec) * 1e6), len(fr), len(fr)))
            f.write(fr)
    return len(frames)


def main(argv: list[str]) -> int:
    out = Path(argv[1])
    scale = float(argv[2]) if len(argv) > 2 else 1.0
    out.mkdir(parents=True, exist_ok=True)
    for name, fn in {**INPUTS, **EXTRA}.items():
        n = write(out / f"{name}.pcap", fn(scale))
        print(f"{name}.pcap: {n} packets")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
