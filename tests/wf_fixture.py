"""A small page load built by hand as a model ``Analysis`` (the input of the waterfall,
stats and export layers), for tests of those layers that must not depend on dissectors.

Connection 0: DNS lookup of example.test (packets 1-2).
Connection 1: HTTP/1.1 over TLS: GET / (html), GET /style.css.
Connection 2: h2 over TLS: script, image, font, a pushed /pushed.js (pushed by stream 1),
a reset stream, a priority, a flow-control stall (DATA fills the 65535-byte window,
WINDOW_UPDATE 40 ms later) and a 1000-byte capture gap.
"""
from __future__ import annotations

from wirefall.analyzer.model import Analysis, Connection, Exchange, Frame, Note, NoteKind, PacketIndex, TlsInfo

T0 = 1_700_000_000.0


def make_analysis(n_extra_rows: int = 0) -> Analysis:
    idx = PacketIndex()
    for i in range(400):
        idx.ts.append(T0 + i * 0.001)
        idx.offset.append(0)
        idx.caplen.append(100)
        idx.origlen.append(100)
        idx.linktype.append(1)
        idx.conn.append(-1)
        idx.proto.append(0)
        idx.interface.append(0)
    t = lambda p: T0 + (p - 1) * 0.001  # packet p's time
    an = Analysis(path="/tmp/handmade.pcap", index=idx)
    dns = Connection(id=0, transport="udp", client=("10.0.0.1", 5000), server=("10.0.0.53", 53), start=t(1), end=t(9),
                     first_packet=1, last_packet=9, protocol="dns")
    dns.stats[0].packets = dns.stats[1].packets = 1
    an.connections.append(dns)
    an.frames.append(Frame(1, 1, t(1), 0, 0, "dns", 7, "QUERY", fields={"id": 7, "qname": "example.test", "qtype": "A", "rcode": "NOERROR", "answers": []}))
    an.frames.append(Frame(9, 9, t(9), 0, 1, "dns", 7, "RESPONSE", fields={
        "id": 7, "qname": "example.test", "qtype": "A", "rcode": "NOERROR",
        "answers": [["example.test", "CNAME", 60, "cdn.example.test"], ["cdn.example.test", "A", 60, "192.0.2.10"]]}))

    c1 = Connection(id=1, transport="tcp", client=("10.0.0.1", 40000), server=("192.0.2.10", 443), start=t(10), end=t(200),
                    first_packet=10, last_packet=200, protocol="http/1.1", connect_start=t(10), connect_end=t(30),
                    tls_start=t(31), tls_end=t(80), tls=TlsInfo(version="TLS 1.3", sni="example.test", alpn="http/1.1", decrypted=True))
    c1.tls.record_overhead = [44, 300]
    c1.stats[0].packets, c1.stats[1].packets = 20, 30
    c1.stats[0].bytes, c1.stats[1].bytes = 3000, 40000
    c1.stats[0].payload, c1.stats[1].payload = 1500, 36000
    an.connections.append(c1)
    c2 = Connection(id=2, transport="tcp", client=("10.0.0.1", 40002), server=("192.0.2.10", 443), start=t(100), end=t(390),
                    first_packet=100, last_packet=390, protocol="h2", connect_start=t(100), connect_end=t(110),
                    tls_start=t(111), tls_end=t(130), tls=TlsInfo(version="TLS 1.3", sni="example.test", alpn="h2", decrypted=True))
    c2.stats[0].packets, c2.stats[1].packets = 40, 120
    c2.stats[0].bytes, c2.stats[1].bytes = 5000, 150000
    c2.stats[1].retransmissions = 2
    c2.stats[1].gaps = 1
    c2.notes.append(Note(NoteKind.GAP, 250, 1, 5000, 1000))  # "packet 250: 1000 bytes missing … server→client at stream offset 5000"
    an.connections.append(c2)

    def ex(conn, proto, sid, path, ctype, rq, rqe, rs, rse, status=200, **kw):
        e = Exchange(id=len(an.exchanges) + 1, connection=conn, protocol=proto, stream_id=sid, method=kw.pop("method", "GET"),
                     url=f"https://example.test{path}", scheme="https", authority="example.test", path=path, status=status,
                     content_type=ctype, request_start=t(rq), request_end=t(rqe), response_start=t(rs), response_end=t(rse),
                     request_start_packet=rq, request_end_packet=rqe, response_start_packet=rs, response_end_packet=rse, **kw)
        e.request_headers = [(":method", "GET"), (":path", path), ("cookie", "sid=secret"), ("user-agent", "test")]
        e.response_headers = [(":status", str(status)), ("content-type", ctype or ""), ("set-cookie", "a=b; Path=/")]
        an.exchanges.append(e)
        return e

    ex(1, "http/1.1", None, "/", "text/html; charset=utf-8", 81, 81, 120, 150, request_header_bytes_wire=400,
       request_header_bytes_decoded=400, response_header_bytes_wire=300, response_header_bytes_decoded=300,
       response_body_bytes=20000, response_body_decoded_bytes=60000, content_encoding="gzip")
    ex(1, "http/1.1", None, "/style.css", "text/css", 155, 155, 170, 190, request_header_bytes_wire=380,
       request_header_bytes_decoded=380, response_header_bytes_wire=250, response_header_bytes_decoded=250, response_body_bytes=5000)
    ex(2, "h2", 1, "/app.js", "application/javascript", 131, 131, 160, 300, request_header_bytes_wire=120,
       request_header_bytes_decoded=400, response_header_bytes_wire=60, response_header_bytes_decoded=200,
       response_body_bytes=70000, priority={"weight": 220, "depends_on": 0, "exclusive": True})
    ex(2, "h2", 3, "/img.png", "image/png", 132, 132, 200, 260, request_header_bytes_wire=20, request_header_bytes_decoded=390,
       response_header_bytes_wire=15, response_header_bytes_decoded=190, response_body_bytes=30000)
    ex(2, "h2", 5, "/font.woff2", "font/woff2", 133, 133, 210, 220, request_header_bytes_wire=22, request_header_bytes_decoded=395,
       response_header_bytes_wire=14, response_header_bytes_decoded=180, response_body_bytes=9000)
    p = ex(2, "h2", 2, "/pushed.js", "application/javascript", 165, 165, 170, 180, pushed=True, push_parent=1,
           response_body_bytes=1000)
    p.method = "GET"
    ex(2, "h2", 7, "/cancelled", "text/plain", 134, 134, 140, 141, status=None, reset="CANCEL")
    for i in range(n_extra_rows):
        ex(2, "h2", 9 + 2 * i, f"/extra/{i}.png", "image/png", 135 + i % 100, 135 + i % 100, 240 + i % 100, 260 + i % 130,
           request_header_bytes_wire=20, request_header_bytes_decoded=390)

    F = lambda pkt, d, sid, typ, length=0, fields=None: an.frames.append(
        Frame(pkt, pkt, t(pkt), 2, d, "h2", sid, typ, length=length, fields=fields))
    F(131, 0, 1, "HEADERS", 100)
    F(140, 1, 7, "HEADERS", 20)
    F(141, 0, 7, "RST_STREAM", 4, {"error_code": "CANCEL"})
    F(165, 1, 1, "PUSH_PROMISE", 40, {"promised_stream_id": 2})
    F(180, 1, 1, "DATA", 65535)  # fills the default stream window and the connection window
    F(220, 0, 1, "WINDOW_UPDATE", 4, {"increment": 65535})
    F(221, 0, 0, "WINDOW_UPDATE", 4, {"increment": 65535})
    return an
