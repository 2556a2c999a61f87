"""Fast paths of the packet loop and the HTTP/1 session keep the behaviour they replace."""
from __future__ import annotations

from wirefall.analyzer.flows import TcpDirection, TcpFlow
from wirefall.analyzer.model import Connection, NoteKind
from wirefall.analyzer.packet import SYN


def _direction() -> tuple[TcpDirection, Connection]:
    conn = Connection(id=0, transport="tcp", client=("a", 1), server=("b", 2), start=0.0, first_packet=1)
    f = TcpFlow(conn, ("a", 1), 1 << 20)

    class App:
        def data(self, *a):
            pass

        def gap(self, *a):
            pass

        def end(self):
            pass

    f.app = App()
    return f.dirs[0], conn


def _stream(d: TcpDirection, total: int, seg: int = 1448) -> bytes:
    """``total`` bytes in ``seg``-byte segments after a SYN at seq 999 (offset 0 = seq 1000)."""
    d.segment(999, SYN, b"", 1)
    data = bytes(i * 7 % 251 for i in range(total))
    for i, off in enumerate(range(0, total, seg)):
        d.segment(1000 + off, 0, data[off : off + seg], i + 2)
    return data


def _differs(conn: Connection) -> list:
    return [n for n in conn.notes if getattr(n, "kind", None) == NoteKind.RETRANSMISSION_DIFFERS]


def test_retransmission_compared_with_the_last_tail_bytes_only():
    """The retransmission tail holds whole segments (more than TAIL bytes), yet only the last
    TAIL delivered bytes are compared, as when it was cut at every segment: a changed
    retransmission of older bytes is counted, not reported as different."""
    d, conn = _direction()
    total = 2 * TcpDirection.TAIL + 5000
    data = _stream(d, total)
    assert d.tail_start < total - TcpDirection.TAIL  # kept beyond TAIL (whole segments)
    old = total - TcpDirection.TAIL - 3000  # wholly before the compared window
    d.segment(1000 + old, 0, bytes(b ^ 0xFF for b in data[old : old + 1000]), 900)
    assert _differs(conn) == []
    assert conn.stats[0].retransmissions == 1
    # straddling the window's start: only the part inside it is compared (and reported)
    edge = total - TcpDirection.TAIL - 500
    d.segment(1000 + edge, 0, bytes(b ^ 0xFF for b in data[edge : edge + 1000]), 901)
    (n,) = _differs(conn)
    assert (n.packet, n.offset, n.length) == (901, total - TcpDirection.TAIL, 500)
    # inside it: a same-bytes copy is not reported, a changed one is
    recent = total - 2000
    d.segment(1000 + recent, 0, data[recent : recent + 1000], 902)
    d.segment(1000 + recent, 0, b"x" * 1000, 903)
    assert [(n.packet, n.offset, n.length) for n in _differs(conn)][1:] == [(903, recent, 1000)]


def test_tail_is_bounded():
    for seg in (1448, 1, 70000):  # MTU segments; a chunk per byte (joined); a TSO frame (a copy of its end)
        d, _ = _direction()
        _stream(d, 40 * TcpDirection.TAIL if seg > 1 else 3 * TcpDirection.TAIL, seg)
        assert d.tail is not None and len(d.tail) <= TcpDirection.TAIL_CHUNKS
        held = min(seg, TcpDirection.BIG)  # (of a TSO frame, its last TAIL bytes only)
        assert d.tail_len == sum(map(len, d.tail)) <= TcpDirection.TAIL + max(held, TcpDirection.TAIL_CHUNKS * seg if seg < 64 else 0)
        assert d.tail_len >= TcpDirection.TAIL
        assert d.tail_start + d.tail_len == d.next


def _h1_exchange(want_body):
    from wirefall.dissectors.http1 import H1Body, H1Connection, H1End, H1Head

    p = H1Connection()
    p.want_body = want_body
    ev = p.receive(0, b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n", 1, 0)
    head = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\nContent-Type: text/plain\r\n\r\n"
    ev += p.receive(1, head + b"abc", 2, 0)
    ev += p.gap(1, 4, 3)  # 4 body bytes the capture lost
    ev += p.receive(1, b"xyz", 4, len(head) + 7)
    heads = [e for e in ev if type(e) is H1Head]
    bodies = [e for e in ev if type(e) is H1Body]
    (end,) = [e for e in ev if type(e) is H1End]
    return heads, bodies, end


def test_http1_body_bytes_counted_without_events_when_nobody_reads_them():
    heads, bodies, end = _h1_exchange(None)
    assert [e.data for e in bodies] == [b"abc", b"xyz"]
    assert (end.payload, end.seen, end.packet) == (10, 6, 4)
    # the decoded header size: name + value lengths, as HPACK/QPACK sizes are counted, the start
    # line as the pseudo-header fields HTTP/2 would carry (RFC 9113 §8.3.1)
    assert [h.decoded for h in heads] == [len(":method") + 3 + len(":path") + 2 + len("Host") + 1,
                                          len(":status") + 3 + len("Content-Length") + 2 + len("Content-Type") + 10]
    asked = []
    heads2, bodies2, end2 = _h1_exchange(lambda h: asked.append(h.status) or False)
    assert asked == [200] and bodies2 == []
    assert (end2.payload, end2.seen, end2.wire, end2.packet) == (end.payload, end.seen, end.wire, end.packet)


def test_http1_repeated_heads_parse_alike():
    """A head met again comes from the connection's cache with the same facts as the first."""
    from wirefall.dissectors.http1 import H1Connection, H1Head

    p = H1Connection()
    req = b"POST /u HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nab"
    out = p.receive(0, req + req, 1, 0)
    a, b = [e for e in out if type(e) is H1Head]
    assert a is not b and a.headers is b.headers
    for h in (a, b):
        assert (h.method, h.target, h.version, h.body, h.content_length) == ("POST", "/u", "HTTP/1.1", "length", 2)
        assert h.error == "conflicting Content-Length values"
    assert (a.offset, b.offset) == (0, len(req))
