"""A big page load built as a model ``Analysis`` for the waterfall's scale tests and
benchmarks/waterfall_scale.py: ``n`` requests over ``n // per_conn`` connections, every
other connection HTTP/1.1 (one response at a time), the rest h2 (multiplexed), each
response carried by a few server packets (so every row has download chunks), a
retransmission now and then.  Built by the same arrays the pipeline fills (packet index,
TCP offset maps, frames), no capture file: 10 000 requests take about a second."""
from __future__ import annotations

import random

from wirefall.analyzer.model import Analysis, Connection, Exchange, Frame, OffsetMap, PacketIndex, TlsInfo

T0 = 1_700_000_000.0
HOSTS = ("www.example.test", "static.example-cdn.test", "images-na.ssl-images-example.test", "fonts.example.test",
         "api.example.test", "tracker.example-metrics.test")
KINDS = (("text/html", ".html"), ("text/css", ".css"), ("application/javascript", ".js"), ("image/png", ".png"),
         ("image/jpeg", ".jpg"), ("font/woff2", ".woff2"), ("application/json", ".json"))


def make_big_analysis(n: int = 10_000, per_conn: int = 50, seed: int = 1) -> Analysis:
    rnd = random.Random(seed)
    idx = PacketIndex()
    an = Analysis(path="/tmp/big-page-load.pcap", index=idx)

    def pkt(t: float, size: int, conn: int) -> int:
        idx.ts.append(t)
        idx.offset.append(0)
        idx.caplen.append(size)
        idx.origlen.append(size)
        idx.linktype.append(1)
        idx.conn.append(conn)
        idx.proto.append(0)
        idx.interface.append(0)
        return len(idx.ts)

    # packets must be in time order: lay each connection's events out, then number them
    events: list[tuple[float, int, int, tuple]] = []  # (time, conn, size, what)
    n_conn = max(1, -(-n // per_conn))
    made = 0
    for c in range(n_conn):
        cid = c + 1
        h2 = c % 2 == 1
        start = c * 0.004 + rnd.random() * 0.002
        events += [(start, cid, 74, ("syn",)), (start + 0.010, cid, 66, ("ack",)), (start + 0.011, cid, 583, ("hello",)),
                   (start + 0.030, cid, 1500, ("shello",))]
        t = start + 0.031
        for k in range(min(per_conn, n - made)):
            ctype, ext = KINDS[rnd.randrange(len(KINDS))]
            rq = t + (rnd.random() * 0.001 if h2 else 0.0)
            rs = rq + 0.005 + rnd.random() * 0.040
            npk = 1 + rnd.randrange(6)
            gap = 0.0002 + (rnd.random() * 0.004 if rnd.random() < 0.3 else 0.0)
            events.append((rq, cid, 120 if h2 else 400, ("req", made, k, ext, ctype)))
            for j in range(npk):
                events.append((rs + j * gap, cid, 1400, ("data", made, j, npk)))
            if rnd.random() < 0.01:
                events.append((rs + 0.0001, cid, 1400, ("retx", made)))
            made += 1
            t = rq + 0.0002 if h2 else rs + npk * gap + 0.001
    events.sort(key=lambda e: (e[0], e[1]))

    conns: dict[int, Connection] = {}
    maps: dict[tuple[int, int], OffsetMap] = {}
    off = {}
    exs: dict[int, Exchange] = {}
    for c in range(n_conn):
        cid = c + 1
        h2 = c % 2 == 1
        conns[cid] = Connection(id=cid, transport="tcp", client=("10.0.0.1", 40000 + cid), server=(f"192.0.2.{1 + c % 250}", 443),
                                protocol="h2" if h2 else "http/1.1",
                                tls=TlsInfo(version="TLS 1.3", sni=HOSTS[c % len(HOSTS)], alpn="h2" if h2 else "http/1.1",
                                            decrypted=True))
        maps[(cid, 0)], maps[(cid, 1)] = OffsetMap(), OffsetMap()
        off[(cid, 0)] = off[(cid, 1)] = 0
    for t, cid, size, what in events:
        p = pkt(t, size, cid)
        c = conns[cid]
        c.first_packet = c.first_packet or p
        c.last_packet = p
        if c.start is None or t < c.start:
            c.start = t
        c.end = t
        kind = what[0]
        if kind == "syn":
            c.connect_start = t
        elif kind == "ack":
            c.connect_end = t
        elif kind in ("hello", "shello"):
            d = 0 if kind == "hello" else 1
            maps[(cid, d)].add(off[(cid, d)], p)
            off[(cid, d)] += size - 66
            if kind == "hello":
                c.tls_start = t
            else:
                c.tls_end = t
        elif kind == "req":
            _, i, k, ext, ctype = what
            maps[(cid, 0)].add(off[(cid, 0)], p)
            off[(cid, 0)] += size - 66
            host = HOSTS[(cid - 1) % len(HOSTS)]
            path = f"/assets/v{i % 7}/{'long-name-' * (i % 3)}item{i}{ext}" + ("?cb=12345&x=y" if i % 5 == 0 else "")
            h2 = c.protocol == "h2"
            e = Exchange(id=i + 1, connection=cid, protocol=c.protocol, stream_id=2 * k + 1 if h2 else None, method="GET",
                         url=f"https://{host}{path}", scheme="https", authority=host, path=path, status=200, content_type=ctype,
                         request_start=t, request_end=t, request_start_packet=p, request_end_packet=p,
                         request_header_bytes_wire=size - 66, request_header_bytes_decoded=400, response_header_bytes_wire=40,
                         response_header_bytes_decoded=200, response_body_bytes=0)
            exs[i] = e
            if h2:
                an.frames.append(Frame(p, p, t, cid, 0, "h2", e.stream_id, "HEADERS", length=size - 75))
        elif kind in ("data", "retx"):
            i = what[1]
            e = exs[i]
            maps[(cid, 1)].add(off[(cid, 1)], p)
            off[(cid, 1)] += size - 66
            if kind == "retx":
                c.notes.append(f"packet {p}: retransmitted")
                continue
            j, npk = what[2], what[3]
            if j == 0:
                e.response_start, e.response_start_packet = t, p
            e.response_end, e.response_end_packet = t, p
            e.response_body_bytes = (e.response_body_bytes or 0) + size - 66 - (40 if j == 0 else 0)
            if c.protocol == "h2":
                if j == 0:
                    an.frames.append(Frame(p, p, t, cid, 1, "h2", e.stream_id, "HEADERS", length=40))
                an.frames.append(Frame(p, p, t, cid, 1, "h2", e.stream_id, "DATA", length=size - 66 - 9 - (49 if j == 0 else 0)))
    for c in conns.values():
        c.stats[0].packets = c.stats[1].packets = 1
    an.connections = list(conns.values())
    an.exchanges = [exs[i] for i in sorted(exs)]
    an.maps = dict(maps)
    return an
