"""Hostile capture files and key logs for the capture and key-log readers (issue 18, round 2).

Each builder writes a file into a folder and returns its path.  Every capture holds the real
HTTP/1 exchange of ``sample_captures/http/http1-nginx.pcap`` (its packets as captured), so a
test can check that good data survives next to the hostile part.

    python scripts/hostile/capture_inputs.py OUTDIR            # writes every input
    python scripts/hostile/capture_inputs.py --measure OUTDIR  # and measures the readers on them

Inputs (the finding of issue 18 each reproduces):

- ``padded(out)``: the plain pcap the compressed ones are made of: the normal exchange, then
  UDP datagrams of log-like text (compressible, so damage is found where it is) (1).
- ``compressed(out, fmt)`` / ``cut(out, fmt)`` / ``damaged(out, fmt)``: it compressed with
  gzip, xz, bzip2 or zstd; cut short at 80 % of its compressed size; or with 64 bytes
  overwritten at 60 % (1).
- ``keylog_gzip_bomb(out)``: a gzip key log of a few MB that inflates to 2 GiB (6).
- ``keylog_junk(out)``: the TLS sample's key log lines, then 40 MB of lines that are not
  key log lines (6).
- ``many_interfaces(out)``: a pcapng declaring 70 000 interfaces, the normal exchange on
  interface 69 999 (7).
- ``odd_timestamps(out)``: a pcapng with the normal exchange on an ordinary interface and two
  copies of it (other addresses) on interfaces whose ``if_tsresol`` is 0 (seconds: the
  microsecond values become 10^15 s) and whose ``if_tsoffset`` is -2^62 s (7).
- ``short_blocks(out)``: a pcapng whose Enhanced Packet, Interface Description and Interface
  Statistics blocks are shorter than their fixed fields (12 bytes) between the normal
  exchange's packets (struct errors escaped as "error: unpack_from requires…", the packets
  lost).
- ``bz2_bomb(out)``: a bzip2 pcap of ~13 KB: the normal exchange, a record header whose
  captured length is implausible (where reading stops), then 2 GiB of zeros (10).
"""
from __future__ import annotations

import bz2
import gzip
import lzma
import os
import random
import socket
import struct
import sys
from pathlib import Path

import dpkt

ROOT = Path(__file__).resolve().parents[2]
NORMAL = ROOT / "sample_captures" / "http" / "http1-nginx.pcap"
TLS_CAPTURE = ROOT / "sample_captures" / "tls" / "curl_http11.pcap"
TLS_KEYS = ROOT / "sample_captures" / "tls" / "curl_http11.keys"
T0 = 1_900_000_000.0  # after the normal exchange's packets
FORMATS = ("gzip", "xz", "bzip2", "zstd")
SUFFIX = {"gzip": ".gz", "xz": ".xz", "bzip2": ".bz2", "zstd": ".zst"}
MAC_C, MAC_S = b"\x02\x00\x00\x00\x00\x01", b"\x02\x00\x00\x00\x00\x02"


def normal_packets() -> list[tuple[float, bytes]]:
    with open(NORMAL, "rb") as f:
        return [(ts, bytes(buf)) for ts, buf in dpkt.pcap.Reader(f)]


def pcap_bytes(packets: list[tuple[float, bytes]], linktype: int = 1) -> bytes:
    out = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, linktype)]
    for ts, data in packets:
        sec = int(ts)
        out.append(struct.pack("<IIII", sec, int(round((ts - sec) * 1e6)), len(data), len(data)) + data)
    return b"".join(out)


def udp_packet(src: str, dst: str, sport: int, dport: int, payload: bytes) -> bytes:
    u = dpkt.udp.UDP(sport=sport, dport=dport, data=payload)
    u.ulen = 8 + len(payload)
    ip = dpkt.ip.IP(src=socket.inet_aton(src), dst=socket.inet_aton(dst), p=dpkt.ip.IP_PROTO_UDP, ttl=64, data=u)
    ip.len = 20 + len(bytes(u))
    return bytes(dpkt.ethernet.Ethernet(src=MAC_C, dst=MAC_S, type=dpkt.ethernet.ETH_TYPE_IP, data=ip))


def filler_packets(n: int = 1500, seed: int = 18) -> list[tuple[float, bytes]]:
    """``n`` syslog-like UDP datagrams (port 514, ~1 KB of text each, compressible ~3x)."""
    rnd = random.Random(seed)
    words = ["GET", "POST", "/index.html", "200", "404", "upstream", "timeout", "client", "closed", "keepalive",
             "bytes", "ms", "cache", "hit", "miss", "gzip", "br", "tls", "h2", "quic"]
    out = []
    for i in range(n):
        text = " ".join(f"{rnd.choice(words)}={rnd.randrange(1 << 30):x}" for _ in range(70)).encode()[:1000]
        out.append((T0 + i * 0.001, udp_packet("10.9.0.1", "10.9.0.2", 40514, 514, text)))
    return out


def padded(out: str | Path) -> Path:
    """The normal exchange, then 1.5 MB of UDP text datagrams (plain pcap)."""
    p = Path(out) / "padded.pcap"
    p.write_bytes(pcap_bytes(normal_packets() + filler_packets()))
    return p


def compress(data: bytes, fmt: str) -> bytes:
    if fmt == "gzip":
        return gzip.compress(data, 6, mtime=0)
    if fmt == "xz":
        return lzma.compress(data)
    if fmt == "bzip2":
        return bz2.compress(data, 1)  # 100 kB blocks: damage is found block by block
    import zstandard

    return zstandard.ZstdCompressor(level=3, write_checksum=True).compress(data)


def compressed(out: str | Path, fmt: str) -> Path:
    p = Path(out) / f"padded.pcap{SUFFIX[fmt]}"
    p.write_bytes(compress(padded(out).read_bytes(), fmt))
    return p


def cut(out: str | Path, fmt: str, fraction: float = 0.8) -> Path:
    """The compressed padded capture cut short at ``fraction`` of its size."""
    data = compressed(out, fmt).read_bytes()
    p = Path(out) / f"cut.pcap{SUFFIX[fmt]}"
    p.write_bytes(data[: int(len(data) * fraction)])
    return p


def damage_offset(size: int) -> int:
    return int(size * 0.6)


def damaged(out: str | Path, fmt: str) -> Path:
    """The compressed padded capture with 64 bytes overwritten at 60 % of its size."""
    data = bytearray(compressed(out, fmt).read_bytes())
    at = damage_offset(len(data))
    data[at : at + 64] = bytes(random.Random(7).randrange(256) for _ in range(64))
    p = Path(out) / f"damaged.pcap{SUFFIX[fmt]}"
    p.write_bytes(bytes(data))
    return p


# ------------------------------------------------------------------ key logs

def keylog_gzip_bomb(out: str | Path, inflated: int = 2 << 30) -> Path:
    """A gzip key log inflating to ``inflated`` bytes: the TLS sample's key log lines, then one
    line of 'A' as gzip members of 8 MiB each, concatenated (gzip allows it; gzip(1) and
    Python's gzip.decompress inflate them all)."""
    member = gzip.compress(b"A" * (8 << 20), 9, mtime=0)
    p = Path(out) / "bomb.keys.gz"
    with open(p, "wb") as f:
        f.write(gzip.compress(TLS_KEYS.read_bytes(), mtime=0))
        for _ in range(inflated // (8 << 20)):
            f.write(member)
    return p


def keylog_junk(out: str | Path, size: int = 40 << 20) -> Path:
    """The TLS sample's key log, then ``size`` bytes of two-byte lines that are not key log lines."""
    p = Path(out) / "junk.keys"
    with open(p, "wb") as f:
        f.write(TLS_KEYS.read_bytes())
        block = b"x\n" * (1 << 19)
        for _ in range(size // len(block)):
            f.write(block)
    return p


# ------------------------------------------------------------------ pcapng

def _block(btype: int, body: bytes) -> bytes:
    body += b"\0" * (-len(body) % 4)
    n = 12 + len(body)
    return struct.pack("<II", btype, n) + body + struct.pack("<I", n)


def _option(code: int, value: bytes) -> bytes:
    return struct.pack("<HH", code, len(value)) + value + b"\0" * (-len(value) % 4)


def shb() -> bytes:
    return _block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))


def idb(linktype: int = 1, tsresol: int | None = None, tsoffset: int | None = None) -> bytes:
    opts = b""
    if tsresol is not None:
        opts += _option(9, bytes([tsresol]))
    if tsoffset is not None:
        opts += _option(14, struct.pack("<q", tsoffset))
    if opts:
        opts += _option(0, b"")
    return _block(1, struct.pack("<HHI", linktype, 0, 262144) + opts)


def epb(iid: int, ticks: int, data: bytes) -> bytes:
    return _block(6, struct.pack("<IIIII", iid, ticks >> 32, ticks & 0xFFFFFFFF, len(data), len(data)) + data)


def many_interfaces(out: str | Path, n: int = 70000) -> Path:
    """``n`` Interface Description Blocks, the normal exchange on the last one."""
    p = Path(out) / "many-interfaces.pcapng"
    one = idb()
    parts = [shb(), one * n]
    parts += [epb(n - 1, int(round(ts * 1e6)), data) for ts, data in normal_packets()]
    p.write_bytes(b"".join(parts))
    return p


def short_blocks(out: str | Path) -> Path:
    """The normal exchange in a pcapng, with a 12-byte EPB (type 6), IDB (1) and ISB (5)
    after its third packet and five more 12-byte EPBs before its last."""
    p = Path(out) / "short-blocks.pcapng"
    pk = [epb(0, int(round(ts * 1e6)), data) for ts, data in normal_packets()]
    runt = lambda t: struct.pack("<III", t, 12, 12)  # noqa: E731
    parts = [shb(), idb(), *pk[:3], runt(6), runt(1), runt(5), *pk[3:-1], runt(6) * 5, pk[-1]]
    p.write_bytes(b"".join(parts))
    return p


def _readdress(data: bytes, a: str, b: str) -> bytes:
    """The packet with 127.0.0.1 on each side replaced: the client port decides which is which."""
    eth = dpkt.ethernet.Ethernet(data)
    ip = eth.data
    tcp = ip.data
    client_first = tcp.sport > tcp.dport  # the server is port 18085, the clients' ports are higher
    ip.src, ip.dst = (socket.inet_aton(a), socket.inet_aton(b)) if client_first else (socket.inet_aton(b), socket.inet_aton(a))
    ip.sum = 0
    tcp.sum = 0
    return bytes(eth)


def odd_timestamps(out: str | Path) -> Path:
    """Interface 0: ordinary (microseconds), the normal exchange.  Interface 1: if_tsresol 0,
    i.e. seconds, the same packets' microsecond values (10^15 s, beyond year 9999) at
    10.1.0.1/2.  Interface 2: if_tsoffset -2^62 s, the same at 10.2.0.1/2."""
    p = Path(out) / "odd-timestamps.pcapng"
    pk = normal_packets()
    parts = [shb(), idb(), idb(tsresol=0), idb(tsoffset=-(1 << 62))]
    parts += [epb(0, int(round(ts * 1e6)), data) for ts, data in pk]
    parts += [epb(1, int(round(ts * 1e6)), _readdress(data, "10.1.0.1", "10.1.0.2")) for ts, data in pk]
    parts += [epb(2, int(round(ts * 1e6)), _readdress(data, "10.2.0.1", "10.2.0.2")) for ts, data in pk]
    p.write_bytes(b"".join(parts))
    return p


def bz2_bomb(out: str | Path, zeros: int = 2 << 30) -> Path:
    """bzip2: the normal exchange, a record header claiming 0xFFFFFF00 bytes (implausible: the
    reader stops there), then ``zeros`` zero bytes, as 8 MiB bzip2 streams concatenated."""
    head = pcap_bytes(normal_packets()) + struct.pack("<IIII", int(T0), 0, 0xFFFFFF00, 0xFFFFFF00)
    zero = bz2.compress(b"\0" * (8 << 20), 9)
    p = Path(out) / "bomb.pcap.bz2"
    with open(p, "wb") as f:
        f.write(bz2.compress(head, 9))
        for _ in range(zeros // (8 << 20)):
            f.write(zero)
    return p


def zero_records(out: str | Path, zeros: int = 64 << 20) -> Path:
    """bzip2: the normal exchange, then ``zeros`` zero bytes: 16-byte records of no data, 4 Mi
    empty packets from ~2 KB of bzip2 (the ratio is not bounded yet: issue 18 round 2 report)."""
    zero = bz2.compress(b"\0" * (8 << 20), 9)
    p = Path(out) / "zero-records.pcap.bz2"
    with open(p, "wb") as f:
        f.write(bz2.compress(pcap_bytes(normal_packets()), 9))
        for _ in range(zeros // (8 << 20)):
            f.write(zero)
    return p


def all_inputs(out: str | Path) -> list[Path]:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = [padded(out)]
    for fmt in FORMATS:
        paths += [compressed(out, fmt)]
        c = cut(out, fmt)
        c = c.rename(out / f"cut-{fmt}{SUFFIX[fmt]}")
        d = damaged(out, fmt)
        d = d.rename(out / f"damaged-{fmt}{SUFFIX[fmt]}")
        paths += [c, d]
    paths += [keylog_gzip_bomb(out), keylog_junk(out), many_interfaces(out), odd_timestamps(out), bz2_bomb(out), zero_records(out)]
    return paths


# ------------------------------------------------------------------ measurement (docs/ROBUSTNESS.md capacity)

_MEASURE = r"""
import resource, sys, time
resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
kind, path = sys.argv[1], sys.argv[2]
import wirefall.analyzer.capture, wirefall.analyzer.keylog, gzip, lzma, bz2, zlib, zstandard
rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t = time.process_time()
if kind == "capture":
    from wirefall.analyzer.capture import CaptureInfo, read_capture
    info = CaptureInfo()
    n = sum(1 for _ in read_capture(path, info))
else:
    from wirefall.analyzer.keylog import KeyLog
    kl = KeyLog()
    n = kl.add_file(path)
    w = len(kl.warnings)
cpu = time.process_time() - t
print(n, cpu, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0)
"""


def measure(path: Path, kind: str) -> tuple[int, float, int, int]:
    """(file bytes, CPU seconds, peak RSS growth during the read (after imports), items) of one reader run."""
    import subprocess

    env = dict(os.environ, PYTHONPATH=str(ROOT))

    def run(p):
        r = subprocess.run([sys.executable, "-c", _MEASURE, kind, str(p)], capture_output=True, text=True, env=env, timeout=120)
        n, cpu, rss = r.stdout.split()
        return int(n), float(cpu), int(rss) * 1024

    n, cpu, heap = run(path)
    return Path(path).stat().st_size, cpu, heap, n


def main(argv: list[str]) -> int:
    measure_too = "--measure" in argv
    args = [a for a in argv if a != "--measure"]
    if len(args) != 1:
        print(__doc__)
        return 2
    paths = all_inputs(args[0])
    for p in paths:
        print(p)
    if measure_too:
        print(f"{'input':34} {'bytes':>12} {'items':>8} {'cpu s':>7} {'+rss MB':>7} {'ns/B':>8} {'rss B/B':>8}")
        for p in paths:
            kind = "keylog" if ".keys" in p.name else "capture"
            size, cpu, rss, n = measure(p, kind)
            print(f"{p.name:34} {size:>12,} {n:>8} {cpu:>7.2f} {rss / 1e6:>7.1f} {cpu * 1e9 / size:>8.1f} {rss / size:>8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
