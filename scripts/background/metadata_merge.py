"""A page load with unrelated traffic beside it, built from two real samples: a cloud VM
agent's HTTP/1.1 traffic to the link-local metadata server (169.254.169.254:80) merged into
a browser's page load.

``make(page, http1, out, address="169.254.169.254")`` rewrites the IPv4 addresses and the
server port of the HTTP/1 capture ``http1`` (dpkt; checksums recomputed) so that its client
is ``10.20.0.3`` and its server ``address:80``, stretches its timestamps so that it starts
``lead`` seconds before the page capture's first packet and ends ``tail`` seconds after its
last one (a long-poll open before the page and answered after it), and merges both into
``out`` (pcapng) with ``mergecap``.  With ``orphan`` the packets of the first HTTP/1
connection before its first response byte are left out: the capture joins it mid-way and
shows a response without its request (an orphan: no method, no URL).  Returns
``{"background_requests": N (requests left in), "first": t, "last": t}``.

    python scripts/background/metadata_merge.py PAGE.pcapng HTTP1.pcap OUT.pcapng
"""
from __future__ import annotations

import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import dpkt


def _times(path: str) -> tuple[float, float]:
    with open(path, "rb") as f:
        r = dpkt.pcapng.Reader(f) if _is_pcapng(path) else dpkt.pcap.Reader(f)
        ts = [float(t) for t, _ in r]
    return ts[0], ts[-1]


def _on_port(buf: bytes, port: int) -> bool:
    ip = dpkt.ethernet.Ethernet(buf).data
    return isinstance(ip, dpkt.ip.IP) and isinstance(ip.data, dpkt.tcp.TCP) and port in (ip.data.sport, ip.data.dport)


def _is_pcapng(path: str) -> bool:
    with open(path, "rb") as f:
        return f.read(4) == b"\x0a\x0d\x0d\x0a"


def make(page: str, http1: str, out: str, address: str = "169.254.169.254", client: str = "10.20.0.3",
         lead: float = 0.1, tail: float = 2.0, orphan: bool = False) -> dict:
    p0, p1 = _times(page)
    with open(http1, "rb") as f:
        r = dpkt.pcapng.Reader(f) if _is_pcapng(http1) else dpkt.pcap.Reader(f)
        if r.datalink() != dpkt.pcap.DLT_EN10MB:
            raise ValueError(f"{http1}: Ethernet captures only")
        pkts = [(float(t), bytes(b)) for t, b in r]
    b0, b1 = pkts[0][0], pkts[-1][0]
    span = max(b1 - b0, 1e-6)
    # ports of the server side: the SYN's destination
    server_ports = set()
    for _, buf in pkts:
        ip = dpkt.ethernet.Ethernet(buf).data
        if isinstance(ip, dpkt.ip.IP) and isinstance(ip.data, dpkt.tcp.TCP):
            tcp = ip.data
            if tcp.flags & dpkt.tcp.TH_SYN and not tcp.flags & dpkt.tcp.TH_ACK:
                server_ports.add(tcp.dport)
    if orphan:  # the first connection's packets before its first response byte are not captured
        first_port = cut = None
        for i, (_, buf) in enumerate(pkts):
            ip = dpkt.ethernet.Ethernet(buf).data
            if isinstance(ip, dpkt.ip.IP) and isinstance(ip.data, dpkt.tcp.TCP):
                tcp = ip.data
                if first_port is None and tcp.dport in server_ports:
                    first_port = tcp.sport
                if first_port is not None and tcp.dport == first_port and tcp.data:
                    cut = i
                    break
        if cut is not None:
            pkts = [(t, b) for i, (t, b) in enumerate(pkts) if i >= cut or not _on_port(b, first_port)]
    srv, cli = socket.inet_aton(address), socket.inet_aton(client)
    requests = 0
    with tempfile.TemporaryDirectory() as d:
        bg = Path(d) / "bg.pcap"
        with open(bg, "wb") as f:
            w = dpkt.pcap.Writer(f, linktype=dpkt.pcap.DLT_EN10MB, nano=False)
            for t, buf in pkts:
                eth = dpkt.ethernet.Ethernet(buf)
                ip = eth.data
                if isinstance(ip, dpkt.ip.IP) and isinstance(ip.data, dpkt.tcp.TCP):
                    tcp = ip.data
                    to_server = tcp.dport in server_ports
                    ip.src, ip.dst = (cli, srv) if to_server else (srv, cli)
                    if to_server:
                        tcp.dport = 80
                        if tcp.data[:4] in (b"GET ", b"POST", b"HEAD", b"PUT "):
                            requests += 1
                    else:
                        tcp.sport = 80
                    tcp.sum = 0
                    ip.sum = 0
                    ip.data = tcp
                    eth.data = ip
                nt = (p0 - lead) + (t - b0) / span * ((p1 + tail) - (p0 - lead))
                w.writepkt(bytes(eth), ts=nt)
        subprocess.run(["mergecap", "-F", "pcapng", "-w", out, page, str(bg)], check=True, capture_output=True, timeout=60)
    return {"background_requests": requests, "first": p0 - lead, "last": p1 + tail}


if __name__ == "__main__":
    print(make(*sys.argv[1:4]))
