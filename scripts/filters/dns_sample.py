"""A small Ethernet capture for the display-filter tests (tests/test_filter.py): DNS over
IPv4 and IPv6 (A, AAAA and CNAME answers, an NXDOMAIN, a CHAOS-class TXT query), and a whole
HTTP/1.1 exchange over TCP (handshake, GET, 200 with a body, FIN) so that the test also
checks ordinary traffic.
No sample capture of the project carries DNS.  ``python scripts/filters/dns_sample.py OUT``
writes it; ``build()`` returns the bytes."""
from __future__ import annotations

import io
import socket
import sys

import dpkt

MAC_C = b"\x02\x00\x00\x00\x00\x01"
MAC_S = b"\x02\x00\x00\x00\x00\x02"
C4, S4, R4 = "192.0.2.10", "192.0.2.80", "192.0.2.53"
C6, R6 = "2001:db8::10", "2001:db8::53"


def _eth(src, dst, ip, v6=False) -> bytes:
    return bytes(dpkt.ethernet.Ethernet(src=src, dst=dst, type=0x86DD if v6 else 0x0800, data=ip))


def _ip4(src, dst, l4, proto) -> dpkt.ip.IP:
    ip = dpkt.ip.IP(src=socket.inet_aton(src), dst=socket.inet_aton(dst), p=proto, ttl=64, data=l4)
    ip.len = 20 + len(bytes(l4))
    return ip


def _ip6(src, dst, l4, nxt) -> dpkt.ip6.IP6:
    ip = dpkt.ip6.IP6(src=socket.inet_pton(socket.AF_INET6, src), dst=socket.inet_pton(socket.AF_INET6, dst), nxt=nxt, hlim=64, data=l4)
    ip.plen = len(bytes(l4))
    return ip


def _udp(sport, dport, data) -> dpkt.udp.UDP:
    u = dpkt.udp.UDP(sport=sport, dport=dport, data=data)
    u.ulen = 8 + len(data)
    return u


def _dns(ident, name, qtype, answers=(), response=False, rcode=0, cls=1) -> bytes:
    d = dpkt.dns.DNS(id=ident)
    d.qd = [dpkt.dns.DNS.Q(name=name, type=qtype, cls=cls)]
    if response:
        d.op = dpkt.dns.DNS_QR | dpkt.dns.DNS_RD | dpkt.dns.DNS_RA
        d.rcode = rcode
        d.an = []
        for rname, rtype, value in answers:
            rr = dpkt.dns.DNS.RR(name=rname, type=rtype, cls=cls, ttl=300)
            if rtype == dpkt.dns.DNS_A:
                rr.ip = socket.inet_aton(value)
            elif rtype == dpkt.dns.DNS_AAAA:
                rr.ip6 = socket.inet_pton(socket.AF_INET6, value)
            elif rtype == dpkt.dns.DNS_CNAME:
                rr.cname = value
            elif rtype == dpkt.dns.DNS_TXT:
                rr.text = [value.encode()]
            d.an.append(rr)
    else:
        d.op = dpkt.dns.DNS_RD
    return bytes(d)


def _tcp(sport, dport, seq, ack, flags, data=b"") -> dpkt.tcp.TCP:
    return dpkt.tcp.TCP(sport=sport, dport=dport, seq=seq, ack=ack, flags=flags, win=64240, data=data)


def packets() -> list[bytes]:
    A, AAAA, CNAME = dpkt.dns.DNS_A, dpkt.dns.DNS_AAAA, dpkt.dns.DNS_CNAME
    out = []

    def dns4(sport, payload, to_server):
        src, dst = (C4, R4) if to_server else (R4, C4)
        u = _udp(sport, 53, payload) if to_server else _udp(53, sport, payload)
        out.append(_eth(MAC_C if to_server else MAC_S, MAC_S if to_server else MAC_C, _ip4(src, dst, u, 17)))

    def dns6(sport, payload, to_server):
        src, dst = (C6, R6) if to_server else (R6, C6)
        u = _udp(sport, 53, payload) if to_server else _udp(53, sport, payload)
        out.append(_eth(MAC_C if to_server else MAC_S, MAC_S if to_server else MAC_C, _ip6(src, dst, u, 17), v6=True))

    dns4(40001, _dns(0x1111, "www.example.test", A), True)
    dns4(40001, _dns(0x1111, "www.example.test", A, [("www.example.test", CNAME, "cdn.example.test"),
                                                      ("cdn.example.test", A, S4)], response=True), False)
    dns4(40002, _dns(0x2222, "www.example.test", AAAA), True)
    dns4(40002, _dns(0x2222, "www.example.test", AAAA, [("www.example.test", AAAA, "2001:db8::80")], response=True), False)
    dns6(40003, _dns(0x3333, "missing.example.test", A), True)
    dns6(40003, _dns(0x3333, "missing.example.test", A, response=True, rcode=3), False)
    # an HTTP/1.1 exchange: good data next to the DNS
    F = dpkt.tcp
    cs, ss = 1000, 5000
    req = b"GET /index.html HTTP/1.1\r\nHost: www.example.test\r\nUser-Agent: wirefall-test\r\n\r\n"
    body = b"<html>" + b"x" * 200 + b"</html>"
    resp = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n" % len(body) + body

    def tcp(to_server, seq, ack, flags, data=b""):
        src, dst = (C4, S4) if to_server else (S4, C4)
        t = _tcp(50000, 80, seq, ack, flags, data) if to_server else _tcp(80, 50000, seq, ack, flags, data)
        out.append(_eth(MAC_C if to_server else MAC_S, MAC_S if to_server else MAC_C, _ip4(src, dst, t, 6)))

    tcp(True, cs, 0, F.TH_SYN)
    tcp(False, ss, cs + 1, F.TH_SYN | F.TH_ACK)
    tcp(True, cs + 1, ss + 1, F.TH_ACK)
    tcp(True, cs + 1, ss + 1, F.TH_ACK | F.TH_PUSH, req)
    tcp(False, ss + 1, cs + 1 + len(req), F.TH_ACK | F.TH_PUSH, resp)
    tcp(True, cs + 1 + len(req), ss + 1 + len(resp), F.TH_ACK | F.TH_FIN)
    tcp(False, ss + 1 + len(resp), cs + 2 + len(req), F.TH_ACK | F.TH_FIN)
    tcp(True, cs + 2 + len(req), ss + 2 + len(resp), F.TH_ACK)
    # a CHAOS-class query (dns.qry.class, dns.resp.class other than IN)
    TXT = dpkt.dns.DNS_TXT
    dns4(40004, _dns(0x4444, "version.bind", TXT, cls=3), True)
    dns4(40004, _dns(0x4444, "version.bind", TXT, [("version.bind", TXT, "wirefall")], response=True, cls=3), False)
    return out


def build(pkts: list[bytes] | None = None) -> bytes:
    buf = io.BytesIO()
    w = dpkt.pcap.Writer(buf, linktype=1)
    for i, p in enumerate(packets() if pkts is None else pkts):
        w.writepkt(p, ts=1_700_000_000.0 + i * 0.01)
    return buf.getvalue()


def mangled(seed: int = 1) -> bytes:
    """Hostile input for the filters: the whole sample first (its HTTP/1 exchange intact), then
    every packet cut at every length, then copies with random bytes changed (header lengths,
    versions, ports, DNS counts…)."""
    import random

    rnd = random.Random(seed)
    good = packets()
    out = list(good)
    for p in good:
        out += [p[:k] for k in range(len(p))]
    for _ in range(400):
        p = bytearray(rnd.choice(good))
        for _ in range(rnd.randint(1, 6)):
            p[rnd.randrange(len(p))] = rnd.randrange(256)
        out.append(bytes(p))
    return build(out)


if __name__ == "__main__":
    with open(sys.argv[1], "wb") as f:
        f.write(build())
