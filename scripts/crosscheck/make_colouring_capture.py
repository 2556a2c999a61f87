"""A small capture that reaches every colouring rule wirefall evaluates (analyzer/colouring.py)
besides TCP's: ARP, ICMP and ICMPv6 (echo and errors), IGMP and OSPF (Routing), a low TTL,
link-local multicast with a wrong TTL, a non-IP Ethernet multicast (Broadcast), plain UDP —
and a normal HTTP/1.1 exchange on port 80 (SYN, request, response, FIN, an RST) that must still
decode.  tests/test_colouring.py compares the rule of each packet with tshark's.

    python scripts/crosscheck/make_colouring_capture.py OUT.pcap
"""
from __future__ import annotations

import socket
import sys

import dpkt

CLIENT, SERVER = "10.9.0.1", "10.9.0.2"
C6, S6 = "fd00::1", "fd00::2"
MAC_C, MAC_S = b"\x02\x00\x00\x00\x00\x01", b"\x02\x00\x00\x00\x00\x02"
REQUEST = b"GET /index.html HTTP/1.1\r\nHost: example.test\r\nUser-Agent: colouring-test\r\n\r\n"
BODY = b"<html>colouring</html>\n"
RESPONSE = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n%s" % (len(BODY), BODY)


def _eth(dst: bytes, src: bytes, etype: int, payload) -> bytes:
    return bytes(dpkt.ethernet.Ethernet(dst=dst, src=src, type=etype, data=payload))


def _ip(src: str, dst: str, proto: int, payload, ttl: int = 64) -> dpkt.ip.IP:
    ip = dpkt.ip.IP(src=socket.inet_aton(src), dst=socket.inet_aton(dst), p=proto, ttl=ttl, data=payload)
    ip.len = 20 + len(bytes(payload))
    return ip


def _ip6(src: str, dst: str, nxt: int, payload) -> dpkt.ip6.IP6:
    ip6 = dpkt.ip6.IP6(src=socket.inet_pton(socket.AF_INET6, src), dst=socket.inet_pton(socket.AF_INET6, dst), nxt=nxt, hlim=64,
                       data=payload)
    ip6.plen = len(bytes(payload))
    return ip6


def _tcp(sport: int, dport: int, seq: int, ack: int, flags: int, data: bytes = b"") -> dpkt.tcp.TCP:
    return dpkt.tcp.TCP(sport=sport, dport=dport, seq=seq, ack=ack, flags=flags, win=65535, data=data)


def _v4(src, dst, proto, payload, ttl=64, dst_mac=None) -> bytes:
    return _eth(dst_mac or (MAC_S if src == CLIENT else MAC_C), MAC_C if src == CLIENT else MAC_S, 0x0800,
                _ip(src, dst, proto, payload, ttl))


def packets() -> list[bytes]:
    out: list[bytes] = []
    A = dpkt.tcp
    # ARP request to the broadcast address and its reply
    arp = dpkt.arp.ARP(sha=MAC_C, spa=socket.inet_aton(CLIENT), tha=b"\x00" * 6, tpa=socket.inet_aton(SERVER), op=dpkt.arp.ARP_OP_REQUEST)
    out.append(_eth(b"\xff" * 6, MAC_C, 0x0806, arp))
    out.append(_eth(MAC_C, MAC_S, 0x0806, dpkt.arp.ARP(sha=MAC_S, spa=socket.inet_aton(SERVER), tha=MAC_C,
                                                       tpa=socket.inet_aton(CLIENT), op=dpkt.arp.ARP_OP_REPLY)))
    # the HTTP/1.1 exchange on port 80
    cs, ss = 1000, 5000
    out.append(_v4(CLIENT, SERVER, 6, _tcp(40000, 80, cs, 0, A.TH_SYN)))
    out.append(_v4(SERVER, CLIENT, 6, _tcp(80, 40000, ss, cs + 1, A.TH_SYN | A.TH_ACK)))
    out.append(_v4(CLIENT, SERVER, 6, _tcp(40000, 80, cs + 1, ss + 1, A.TH_ACK)))
    out.append(_v4(CLIENT, SERVER, 6, _tcp(40000, 80, cs + 1, ss + 1, A.TH_ACK | A.TH_PUSH, REQUEST)))
    out.append(_v4(SERVER, CLIENT, 6, _tcp(80, 40000, ss + 1, cs + 1 + len(REQUEST), A.TH_ACK | A.TH_PUSH, RESPONSE)))
    out.append(_v4(CLIENT, SERVER, 6, _tcp(40000, 80, cs + 1 + len(REQUEST), ss + 1 + len(RESPONSE), A.TH_ACK)))
    out.append(_v4(CLIENT, SERVER, 6, _tcp(40000, 80, cs + 1 + len(REQUEST), ss + 1 + len(RESPONSE), A.TH_ACK | A.TH_FIN)))
    out.append(_v4(SERVER, CLIENT, 6, _tcp(80, 40000, ss + 1 + len(RESPONSE), cs + 2 + len(REQUEST), A.TH_ACK | A.TH_FIN)))
    out.append(_v4(CLIENT, SERVER, 6, _tcp(40000, 80, cs + 2 + len(REQUEST), ss + 2 + len(RESPONSE), A.TH_ACK)))
    # a reset on another port (TCP RST), then plain TCP on a port that is not HTTP's
    out.append(_v4(CLIENT, SERVER, 6, _tcp(40001, 8443, 7000, 0, A.TH_SYN)))
    out.append(_v4(SERVER, CLIENT, 6, _tcp(8443, 40001, 0, 7001, A.TH_RST | A.TH_ACK)))
    # ICMP echo, ICMP port unreachable quoting a UDP datagram, time exceeded
    echo = dpkt.icmp.ICMP(type=8, code=0, data=dpkt.icmp.ICMP.Echo(id=1, seq=1, data=b"ping"))
    out.append(_v4(CLIENT, SERVER, 1, echo))
    udp = dpkt.udp.UDP(sport=50000, dport=443, data=b"x" * 8)
    udp.ulen = 16
    quoted = bytes(_ip(CLIENT, SERVER, 17, udp))
    out.append(_v4(SERVER, CLIENT, 1, dpkt.icmp.ICMP(type=3, code=3, data=dpkt.icmp.ICMP.Unreach(data=quoted))))
    out.append(_v4(SERVER, CLIENT, 1, dpkt.icmp.ICMP(type=11, code=0, data=dpkt.icmp.ICMP.TimeExceed(data=quoted))))
    # ICMPv6 echo request and destination unreachable
    out.append(_eth(MAC_S, MAC_C, 0x86DD, _ip6(C6, S6, 58, dpkt.icmp6.ICMP6(type=128, code=0, data=b"\x00\x01\x00\x01ping"))))
    out.append(_eth(MAC_C, MAC_S, 0x86DD, _ip6(S6, C6, 58, dpkt.icmp6.ICMP6(type=1, code=4, data=b"\x00" * 4 + b"\x60" + b"\x00" * 39))))
    # IGMP membership report, OSPF hello to 224.0.0.5 (TTL 1), a multicast with a wrong TTL
    out.append(_v4(CLIENT, "224.0.0.22", 2, b"\x22\x00\xfa\x01\x00\x00\x00\x00", ttl=1, dst_mac=b"\x01\x00\x5e\x00\x00\x16"))
    out.append(_v4(CLIENT, "224.0.0.5", 89, b"\x02\x01\x00\x2c" + b"\x00" * 40, ttl=1, dst_mac=b"\x01\x00\x5e\x00\x00\x05"))
    mc = dpkt.udp.UDP(sport=5000, dport=5000, data=b"hello")
    mc.ulen = 13
    out.append(_v4(CLIENT, "224.0.0.99", 17, mc, ttl=4, dst_mac=b"\x01\x00\x5e\x00\x00\x63"))
    # a unicast UDP datagram with TTL 2 (TTL low), and a plain one
    for ttl in (2, 64):
        u = dpkt.udp.UDP(sport=50001, dport=9999, data=b"data")
        u.ulen = 12
        out.append(_v4(CLIENT, SERVER, 17, u, ttl=ttl))
    # a non-IP Ethernet multicast (LLDP's address and EtherType): Broadcast
    out.append(_eth(b"\x01\x80\xc2\x00\x00\x0e", MAC_C, 0x88B5, b"\x00" * 46))
    return out


def write(path: str) -> int:
    pk = packets()
    with open(path, "wb") as f:
        w = dpkt.pcap.Writer(f, linktype=dpkt.pcap.DLT_EN10MB)
        for i, p in enumerate(pk):
            w.writepkt(p, ts=1_800_000_000 + i * 0.001)
    return len(pk)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    print(write(sys.argv[1]), "packets written to", sys.argv[1])
