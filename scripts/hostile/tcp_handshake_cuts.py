"""TCP handshakes the sample captures do not have, made from a real capture's packets (review 24,
A2: ``tcp.window_size`` where a window scale is known for one direction only, or known late).

- ``drop-synack``: the capture without its first SYN-ACK — the client announced its window
  scale, the server's is never seen (tshark scales the client's windows, not the server's).
- ``swap-syn``: the second connection's SYN moved after that connection's handshake ACK (the
  packets keep their places' timestamps): the client's first segment is an ACK, its scale
  unknown until the SYN arrives late.

``build(name, pcap_bytes)`` gives the new classic pcap; ``python
scripts/hostile/tcp_handshake_cuts.py IN.pcap OUTDIR`` writes ``drop-synack.pcap`` and
``swap-syn.pcap`` (tests/test_filter_parity24.py makes them from
``sample_captures/http/http1-nginx.pcap`` at test time; nothing made is committed).
"""
from __future__ import annotations

import io
import sys
from pathlib import Path

import dpkt

NAMES = ("drop-synack", "swap-syn")


def _tcp(buf: bytes, linktype: int):
    """(4-tuple, flags) of an Ethernet/IPv4 or null/loopback TCP packet, else None."""
    try:
        if linktype == dpkt.pcap.DLT_EN10MB:
            ip = dpkt.ethernet.Ethernet(buf).data
        elif linktype in (dpkt.pcap.DLT_NULL, dpkt.pcap.DLT_LOOP):
            ip = dpkt.loopback.Loopback(buf).data
        else:
            return None
    except (dpkt.UnpackError, IndexError):
        return None
    tcp = getattr(ip, "data", None)
    if not isinstance(tcp, dpkt.tcp.TCP):
        return None
    return (bytes(ip.src), tcp.sport, bytes(ip.dst), tcp.dport), tcp.flags


def build(name: str, data: bytes) -> bytes:
    rd = dpkt.pcap.Reader(io.BytesIO(data))
    lt = rd.datalink()
    pkts = list(rd)
    info = [_tcp(b, lt) for _, b in pkts]
    syn, ack = dpkt.tcp.TH_SYN, dpkt.tcp.TH_ACK
    if name == "drop-synack":
        i = next(k for k, x in enumerate(info) if x and x[1] & (syn | ack) == syn | ack)
        pkts = pkts[:i] + pkts[i + 1 :]
    elif name == "swap-syn":
        syns = [k for k, x in enumerate(info) if x and x[1] & (syn | ack) == syn]
        i = syns[1]
        key = info[i][0]  # type: ignore[index]
        j = next(k for k in range(i + 1, len(info)) if (x := info[k]) and x[0] == key and x[1] & (syn | ack) == ack)
        order = list(range(i + 1, j + 1)) + [i]  # the SYN after the ACK; timestamps stay with the places
        moved = [(pkts[p][0], pkts[q][1]) for p, q in zip(range(i, j + 1), order, strict=True)]
        pkts = pkts[:i] + moved + pkts[j + 1 :]
    else:
        raise ValueError(f"unknown cut {name!r} (one of {', '.join(NAMES)})")
    out = io.BytesIO()
    w = dpkt.pcap.Writer(out, linktype=lt, nano=False)
    for ts, b in pkts:
        w.writepkt(b, ts)
    return out.getvalue()


if __name__ == "__main__":
    src, outdir = Path(sys.argv[1]), Path(sys.argv[2])
    outdir.mkdir(parents=True, exist_ok=True)
    for n in NAMES:
        (outdir / f"{n}.pcap").write_bytes(build(n, src.read_bytes()))
        print(outdir / f"{n}.pcap")
