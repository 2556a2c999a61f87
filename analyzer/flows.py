"""TCP connections and UDP flows, and TCP reassembly per direction.

Every reassembled byte keeps the packet that carried it (``OffsetMap``), so frames
decoded above know their first and last packet.  Bytes are handed to the connection's
application session in stream order and are not kept here (bounded memory); the
packet map lets any later view re-read them from the capture.
"""
from __future__ import annotations

import heapq
from typing import Protocol

from .model import C2S, S2C, Connection, Note, NoteKind, OffsetMap, TcpInfo
from .packet import ACK, FIN, RST, SYN

WELL_KNOWN_SERVER_PORTS = {80, 443, 8080, 8443, 8000, 8008, 8888, 3000, 4433, 5000, 9000, 53, 853, 1080}


class AppSession(Protocol):
    """What a connection hands its reassembled bytes to (see analyzer.sessions)."""

    def data(self, direction: int, data: bytes | memoryview, offset: int, packet: int) -> None: ...

    def gap(self, direction: int, offset: int, length: int, packet: int) -> None: ...

    def end(self) -> None: ...

    # optional: ``close(direction, packet)`` — the direction's stream ended where the sender
    # closed it (TCP: its FIN reached in order; a TLS session tells its inner one of a
    # close_notify too), at ``packet``; what ends with the stream (an HTTP/1 body delimited by
    # the close) ends there.  Sessions without it ignore it (``TcpFlow.close``).


class DatagramSession(Protocol):
    """What a UDP flow hands its datagrams to (see analyzer.sessions).  A session that finds
    client and server reversed sets ``flip_request`` (QUIC), which the pipeline clears."""

    def datagram(self, direction: int, data: bytes | memoryview, packet: int) -> None: ...

    def end(self) -> None: ...


def _signed32(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - 0x100000000 if x & 0x80000000 else x


class TcpDirection:
    """Reassembly of one direction of a TCP connection.  Its buffers (the packet map, the
    tail kept for retransmission checks, the out-of-order heap) are made by the first
    segment with payload: a direction that carries none (a SYN flood, a port scan) costs
    only this object's slots."""

    __slots__ = ("dir", "isn", "next", "pending", "pending_bytes", "map", "fin_off", "acked",
                 "tail", "tail_start", "tail_len", "flow", "max_pending", "syn_seq", "unseen_acked", "fin_pkt")

    TAIL = 16384  # delivered bytes kept to tell identical from different retransmissions
    # The tail is the delivered segments themselves (immutable bytes, held, not copied into a
    # buffer and cut again): whole segments go from its front while the rest holds TAIL bytes
    # (bytes before next - TAIL are never compared, see _retransmission).  Bounded: more than
    # TAIL_CHUNKS small segments are joined and cut to TAIL bytes, and of a segment longer than
    # BIG (a TSO frame's) only its last TAIL bytes are kept, as a copy.
    TAIL_CHUNKS = 64
    BIG = 65536

    def __init__(self, flow: TcpFlow, direction: int, max_pending: int):
        self.flow = flow
        self.dir = direction
        self.isn: int | None = None  # sequence number of stream offset 0
        self.next = 0  # next expected stream offset
        self.pending: list | None = None  # heap of (offset, -len, packet, data), once needed
        self.pending_bytes = 0
        self.map: OffsetMap | None = None  # stream offset -> packet, from the first payload
        self.fin_off: int | None = None
        # the packet of the FIN (set with fin_off); -1 once the session was told the stream
        # closed there (``_closed``: when every byte before the FIN is in)
        self.fin_pkt = 0
        self.acked = 0  # highest offset the peer acknowledged
        self.tail: list | None = None  # the delivered segments [tail_start, next), oldest first
        self.tail_start = 0
        self.tail_len = 0  # bytes in tail (tail_start + tail_len == next)
        self.max_pending = max_pending
        self.syn_seq: int | None = None
        self.unseen_acked: int | None = None  # packet whose ACK covered bytes not seen (yet)

    def offset_of(self, seq: int) -> int:
        """Stream offset of ``seq`` (inlined where it runs per packet; asked once ``isn`` is set)."""
        isn = self.isn
        assert isn is not None
        return self.next + _signed32(seq - isn - self.next)

    def segment(self, seq: int, flags: int, data: bytes | memoryview, pkt: int) -> None:
        if self.isn is None or (flags & SYN and self.syn_seq is None and self.next == 0 and not self.pending
                                and self.map is None and (seq + 1) & 0xFFFFFFFF != self.isn):
            # the direction's first segment; or its first SYN after stray segments that carried no byte
            # (a FIN or an ACK of the connection before on these ports), of another sequence space (its
            # own ACK seen before it — a capture's swapped packets — changes nothing): the stream starts at the SYN,
            # as tshark's base sequence number (the stray FIN's kept the new connection's data 'lost'; review 26)
            if self.isn is not None:
                self.fin_off = None
                self.fin_pkt = 0
            self.isn = (seq + 1) & 0xFFFFFFFF if flags & SYN else seq
            tcp = self.flow.conn.tcp
            if tcp is not None:
                tcp.first_segment(self.dir, seq, bool(flags & SYN))
        if flags & SYN:
            self.syn_seq = seq
            seq = (seq + 1) & 0xFFFFFFFF
        n = len(data)
        if n or flags & FIN:
            nxt = self.next  # offset_of(seq), inlined
            x = (seq - self.isn - nxt) & 0xFFFFFFFF
            off = nxt + (x - 0x100000000 if x & 0x80000000 else x)
        else:
            off = 0
        if flags & FIN and self.fin_off is None:
            self.fin_off = off + n
            self.fin_pkt = pkt
        if not n:
            if flags & FIN and self.fin_off is not None and self.next >= self.fin_off:
                self._closed(pkt)
            return
        end = off + n
        if off < 0:  # bytes before the first one seen (capture started mid-stream)
            if end <= 0:
                return
            data = data[-off:]
            off = 0
        nxt = self.next
        if end <= nxt:
            self._retransmission(off, data, pkt)
            return
        if off < nxt:
            self._retransmission(off, data[: nxt - off], pkt)
            data = data[nxt - off :]
            off = nxt
        if off == nxt:
            # _deliver(off, data, pkt) and TcpFlow.deliver, inlined (once per in-order segment)
            m = self.map
            tail = self.tail
            if m is None or tail is None:  # both made at the first payload
                m = self.map = OffsetMap()
                tail = self.tail = []
            pp = m.packets
            if not pp or pp[-1] != pkt:
                m.starts.append(off)
                pp.append(pkt)
            self.next = end
            if type(data) is not bytes:
                data = bytes(data)  # (held in the tail: only an immutable copy may be)
            n = end - off  # (data may have been cut above)
            tl = self.tail_len + n
            if n > self.BIG or len(tail) >= self.TAIL_CHUNKS:
                tl = self._tail_cut(data, tl)
            else:
                tail.append(data)
                TAIL = self.TAIL
                while tl - len(tail[0]) >= TAIL:  # (steady state: one segment in, about one out)
                    k = len(tail.pop(0))
                    self.tail_start += k
                    tl -= k
            self.tail_len = tl
            flow = self.flow
            app = flow.app
            if app is None and flow.make is not None:
                app = flow._app()
            if app is not None:
                try:
                    app.data(self.dir, data, off, pkt)
                except Exception as e:  # noqa: BLE001 - see app_failed
                    app_failed(flow, e, pkt)
            if self.pending:
                self._drain(pkt)
            fo = self.fin_off
            if fo is not None and self.next >= fo:
                self._closed(pkt)
        else:
            if self.pending is None:
                self.pending = []
            heapq.heappush(self.pending, (off, -len(data), pkt, data))
            self.pending_bytes += len(data)
            if self.acked > self.next or self.pending_bytes > self.max_pending:
                self.force_gap(pkt)

    def _retransmission(self, off: int, data: bytes | memoryview, pkt: int) -> None:
        st = self.flow.conn.stats[self.dir]
        if len(data) <= 1 and off == self.next - 1:
            return  # keep-alive
        st.retransmissions += 1
        st.retransmitted_bytes += len(data)
        if len(st.retransmission_packets) < st.MAX_LISTED:
            st.retransmission_packets.append(pkt)
        ts = self.tail_start
        # the tail holds [ts, next); its last TAIL bytes are compared
        a, b = max(off, ts, self.next - self.TAIL), min(off + len(data), ts + self.tail_len)
        if a < b and self._tail_bytes(a, b) != data[a - off : b - off]:
            self.flow.conn.notes.append(Note(NoteKind.RETRANSMISSION_DIFFERS, pkt, self.dir, a, b - a))

    def _tail_bytes(self, a: int, b: int) -> bytes:
        """The delivered bytes [a, b) (within the tail)."""
        out = []
        p = self.tail_start
        for c in self.tail or ():
            q = p + len(c)
            if q > a and p < b:
                out.append(c[max(a - p, 0) : b - p])
            if q >= b:
                break
            p = q
        return b"".join(out)

    def _tail_cut(self, data: bytes, tl: int) -> int:
        """Add ``data`` to the tail the bounded way (``TAIL_CHUNKS``, ``BIG``); its new length."""
        tail = self.tail
        assert tail is not None
        tail.append(data)
        if len(data) <= self.BIG:
            whole = b"".join(tail)
        else:
            whole = data
        keep = whole[-self.TAIL :]
        tail[:] = [keep]
        self.tail_start += tl - len(keep)
        return len(keep)

    def _deliver(self, off: int, data: bytes | memoryview, pkt: int, ready: int | None = None) -> None:
        """``pkt`` carried the bytes (kept in the packet map); ``ready`` is the packet at which
        they became readable in order — later than ``pkt`` for bytes that arrived before a
        hole was filled.  Sessions place frames at ``ready``, as tshark and the receiving
        application see them."""
        m = self.map  # map.add(off, pkt), inlined (segment inlines all of this for in-order bytes)
        tail = self.tail
        if m is None or tail is None:  # both made at the first payload
            m = self.map = OffsetMap()
            tail = self.tail = []
        if not m.packets or m.packets[-1] != pkt:
            m.starts.append(off)
            m.packets.append(pkt)
        n = len(data)
        self.next = off + n
        if type(data) is not bytes:
            data = bytes(data)
        tl = self.tail_len + n
        if n > self.BIG or len(tail) >= self.TAIL_CHUNKS:
            tl = self._tail_cut(data, tl)
        else:
            tail.append(data)
            while tl - len(tail[0]) >= self.TAIL:
                k = len(tail.pop(0))
                self.tail_start += k
                tl -= k
        self.tail_len = tl
        self.flow.deliver(self.dir, data, off, pkt if ready is None else ready)

    def _drain(self, ready: int | None = None) -> None:
        pend = self.pending
        while pend and pend[0][0] <= self.next:
            off, _, pkt, data = heapq.heappop(pend)
            self.pending_bytes -= len(data)
            end = off + len(data)
            if end <= self.next:
                self._retransmission(off, data, pkt)
                continue
            if off < self.next:
                data = data[self.next - off :]
                off = self.next
            self._deliver(off, data, pkt, None if ready is None else max(ready, pkt))
        fo = self.fin_off
        if fo is not None and self.next >= fo and ready is not None:
            self._closed(ready)

    def _closed(self, ready: int) -> None:
        """Every byte before the FIN is in: the session is told the stream closed, once, at
        the FIN's packet or, where the FIN came before a hole was filled, at the packet that
        filled it (``ready``), as the receiving application learns of it."""
        fp = self.fin_pkt
        if fp < 0:
            return
        self.fin_pkt = -1
        self.flow.close(self.dir, max(fp, ready))

    def ack(self, ack_off: int, pkt: int | None = None) -> None:
        if ack_off > self.acked:
            self.acked = ack_off
            if self.pending and ack_off > self.next:
                self.force_gap(self.pending[0][2] if pkt is None else pkt)
            elif ack_off > self.next + 1 and pkt is not None and self.next:
                # the peer acknowledges bytes the capture has not shown, and none came after them:
                # lost by the capture, or merely captured after the ACK (reordered). They are a
                # gap only if nothing fills them before the connection ends (see finish); one
                # byte more is a FIN, not data
                self.unseen_acked = pkt

    def _lost(self, upto: int, pkt: int) -> None:
        """Bytes from ``next`` to ``upto`` are not in the capture: counted, noted at ``pkt``, and
        the session told; the stream goes on at ``upto``."""
        start = self.next
        st = self.flow.conn.stats[self.dir]
        st.gaps += 1
        st.gap_bytes += upto - start
        self.flow.conn.notes.append(Note(NoteKind.GAP, pkt, self.dir, start, upto - start))
        self.next = upto
        if self.tail is not None:
            self.tail.clear()
        self.tail_start = upto
        self.tail_len = 0
        self.flow.gap(self.dir, start, upto - start, pkt)
        fo = self.fin_off
        if fo is not None and upto >= fo:
            self._closed(pkt)

    def force_gap(self, pkt: int) -> None:
        """Declare the bytes before the first pending segment lost by the capture."""
        if not self.pending:
            return
        self._lost(self.pending[0][0], self.pending[0][2])
        self._drain(pkt)

    def finish(self) -> None:
        while self.pending:
            self.force_gap(self.pending[0][2])
        if self.unseen_acked is not None:  # acknowledged, never seen: lost by the capture
            upto = min(self.acked, self.fin_off) if self.fin_off is not None else self.acked - 1  # (less a FIN)
            if upto > self.next:
                self._lost(upto, self.unseen_acked)


class TcpFlow:
    """One TCP connection: two directions and the application session.  With ``make`` the
    session is made by ``make(flow)`` when the first byte or gap is delivered, so that a
    connection that never carries payload holds no session (a sniffer with nothing to sniff
    decides nothing)."""

    __slots__ = ("conn", "dirs", "app", "client_key", "closed", "syn_seen", "make")

    def __init__(self, conn: Connection, client_key: tuple, max_pending: int, make=None):
        self.conn = conn
        if conn.tcp is None:
            conn.tcp = TcpInfo()
        self.client_key = client_key  # (src, sport) of the client
        self.dirs = (TcpDirection(self, C2S, max_pending), TcpDirection(self, S2C, max_pending))
        self.app: AppSession | None = None
        self.make = make
        self.closed = False
        self.syn_seen = False

    def _app(self):
        make, self.make = self.make, None
        if make is not None:
            self.app = make(self)
        return self.app

    def deliver(self, direction: int, data: bytes | memoryview, offset: int, pkt: int) -> None:
        app = self.app
        if app is None and self.make is not None:
            app = self._app()
        if app is not None:
            try:
                app.data(direction, data, offset, pkt)
            except Exception as e:  # noqa: BLE001 - see app_failed
                app_failed(self, e, pkt)

    def gap(self, direction: int, offset: int, length: int, pkt: int) -> None:
        if self.app is None and self.make is not None:
            self._app()
        if self.app is not None:
            try:
                self.app.gap(direction, offset, length, pkt)
            except Exception as e:  # noqa: BLE001
                app_failed(self, e, pkt)

    def close(self, direction: int, pkt: int) -> None:
        """The direction's stream closed (its FIN in order) at ``pkt``: the session told, if it
        listens (``AppSession``'s optional ``close``)."""
        close = getattr(self.app, "close", None)
        if close is not None:
            try:
                close(direction, pkt)
            except Exception as e:  # noqa: BLE001 - see app_failed
                app_failed(self, e, pkt)

    def finish(self) -> None:
        for d in self.dirs:
            d.finish()
        if self.app is not None:
            try:
                self.app.end()
            except Exception as e:  # noqa: BLE001
                app_failed(self, e, self.conn.last_packet)


def app_failed(flow, e: Exception, pkt: int) -> None:
    """Last line of defence: a session or dissector raised on bad input (a bug — the
    dissectors are meant to mark bad input, not raise).  The capture goes on: frames
    already decoded stay, this connection's decoding stops and its notes say where and
    why.  The message names the exception type and its first words only (no payload)."""
    msg = str(e).replace("\n", " ")[:120]
    flow.conn.notes.append(Note(NoteKind.INTERNAL_ERROR, pkt, detail=f"{type(e).__name__}: {msg}"))
    flow.app = None


class UdpFlow:
    __slots__ = ("conn", "client_key", "app", "lazy")

    def __init__(self, conn: Connection, client_key: tuple):
        self.conn = conn
        self.client_key = client_key
        self.app: DatagramSession | None = None
        self.lazy = False  # on a QUIC port: the QUIC session is made by the first QUIC-like datagram


def client_by_ports(sport: int, dport: int) -> bool | None:
    """True if the ports say the ``sport`` end is the client (the other end's is a server's
    well-known port, or only ``sport`` is ephemeral), False if they say the other end is,
    None if they do not tell (both well-known, both ephemeral: two lab servers' random ports)."""
    s_srv = sport in WELL_KNOWN_SERVER_PORTS or sport < 1024
    d_srv = dport in WELL_KNOWN_SERVER_PORTS or dport < 1024
    if s_srv != d_srv:
        return d_srv
    s_eph, d_eph = sport >= 32768, dport >= 32768  # ephemeral (client) port ranges
    if s_eph != d_eph:
        return s_eph
    return None


def choose_client(sport: int, dport: int, flags: int | None) -> bool:
    """True if the sender of the first packet seen is the client."""
    if flags is not None:
        if flags & SYN and not flags & ACK:
            return True
        if flags & SYN and flags & ACK:
            return False
    by_ports = client_by_ports(sport, dport)
    return True if by_ports is None else by_ports  # (None: the first sender)


__all__ = ["TcpFlow", "TcpDirection", "UdpFlow", "AppSession", "DatagramSession", "choose_client", "client_by_ports", "FIN", "RST",
           "SYN", "ACK"]
