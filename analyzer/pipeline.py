"""One streaming pass over a capture: packet index, flows, reassembly, sessions.

``analyze(path, keylogs=[...])`` returns an ``Analysis``.  Nothing per packet is kept but
a few numbers in the packet index; packet bytes are re-read on demand through
``analyzer.capture.PacketSource``.
"""
from __future__ import annotations

import gc
import os
from itertools import chain
import time as _time
from collections.abc import Callable, Iterator
from typing import Any

from .capture import DSB_TLS_KEYLOG, PCAP_MAGICS, PCAPNG_SHB, CaptureInfo, Record, read_batches
from .flows import TcpDirection, TcpFlow, UdpFlow, app_failed, choose_client
from .keylog import KeyLog, load_keylog
from .model import PROTO_CODE, Analysis, Connection, PacketIndex
from .gcpause import gc_paused
from .packet import _ETH_IP4_TCP, _ETH_IP4_UDP, ACK, FIN, PROTO_TCP, PROTO_UDP, RST, SYN, Decoded, Decoder, addr_str, layers, wscale_option
from .sessions import CAPTURE_ID, KINDS, Context

P_IPV4, P_IPV6, P_TCP, P_UDP, P_ICMP = PROTO_CODE["IPv4"], PROTO_CODE["IPv6"], PROTO_CODE["TCP"], PROTO_CODE["UDP"], PROTO_CODE["ICMP"]
P_DNS = PROTO_CODE["DNS"]
# The pass's young-generation collection (checked every 4096 packets) runs only once the young
# generation holds YOUNG_MAX objects (gc.get_count()[0]: those made since the last one and
# alive, cyclic garbage included) or YOUNG_BYTES of the file were read since the last one (what
# dead cycles can hold: a finished connection's session, its buffers of the bytes it read). A
# collection walks every object made since the last, the model's own too, which live to the
# end: run every 4096 packets, it cost 0.03-0.09 s CPU on each request-heavy capture of the
# corpus, whose passes leave little cyclic garbage (a finished connection's session) before
# their end.
YOUNG_MAX = 1 << 20
YOUNG_BYTES = 256 << 20

Progress = Callable[[int, int, int], None]  # (packets, bytes read, total bytes)


def analyze(*args, workers: int | str | None = None, **kw) -> Analysis:
    """Analyse the capture at ``path``; see ``_analyze``.  ``workers`` (a number, or
    "auto"): shard the capture's connections across that many processes
    (``analyzer.parallel``; the result is identical to the serial one).  The cyclic garbage collector is
    paused for the pass: the model holds millions of tracked objects that live to the end,
    and its generational collections walked them again and again (a quarter of the CPU time
    on many-request captures).  The pass runs a young-generation collection itself, checked
    every 4096 packets, once ``YOUNG_MAX`` objects or ``YOUNG_BYTES`` of the file have come
    since the last one, so the cycles some dissectors make still go while memory stays bounded.

    A browser log (HAR, Chrome NetLog, qlog; chosen by content) is read into the same model
    instead, without packets (``analyzer.browserlog``): every view opens it as a capture."""
    path = args[0] if args else kw.get("path")
    if isinstance(path, str) and not _capture_magic(path):
        from .browserlog.detect import kind_of

        if kind_of(path) is not None:
            from .browserlog import open_log

            return open_log(path, limits=kw.get("limits"), progress=kw.get("progress"))
    with gc_paused():
        if workers is not None and workers != 1:
            from .parallel import analyze_parallel

            an = analyze_parallel(_analyze, workers, *args, **kw)
        else:
            an = _analyze(*args, **kw)
        from .authority import fill  # hosts of requests that do not name theirs (SNI, DNS), on the whole model

        fill(an)
        _undecrypted_errors(an)
        return an


def _undecrypted_errors(an: Analysis) -> None:
    """An exchange whose response a TLS record that did not decrypt cut off says so in its
    ``error`` (``completeness.undecrypted_error``: "no response decrypted: a TLS record did not
    decrypt (…)"), not "no response in the capture": its bytes may be there, encrypted (the
    JSON's ``error``, the HAR's ``_error``).  Only where such a record was met (a damaged capture,
    a wrong key): the check costs a look at each connection."""
    from .model import ReasonKind

    failed = {c.id: c for c in an.connections
              if c.quic is None and c.tls is not None and getattr(c.tls.reason, "kind", None) is ReasonKind.DECRYPTION_FAILED}
    if not failed:
        return
    from .completeness import undecrypted_error

    for e in an.exchanges:
        c = failed.get(e.connection)
        if c is not None:
            why = undecrypted_error(c, e)
            if why is not None:
                e.error = why


def _capture_magic(path: str) -> bool:
    """Whether the file at ``path`` opens with an uncompressed pcap or pcapng magic: no browser
    log then (``browserlog.detect.kind_of`` says None for it), and the two browserlog modules
    stay unloaded (~0.5 ms of a small capture's run)."""
    try:
        with open(path, "rb") as f:
            head = f.read(4)
    except OSError:
        return False  # (kind_of reports it)
    return head in PCAP_MAGICS or head == PCAPNG_SHB


def _analyze(
    path: str,
    keylogs: list[str] | None = None,
    keylog: KeyLog | None = None,
    progress: Progress | None = None,
    limits: dict | None = None,
    tcp_session: Callable | None = None,
    on_start: Callable[[Analysis], None] | None = None,
    shard=None,
    opener=None,
    listing: bool = True,
) -> Analysis:
    """Analyse the capture at ``path``.  Raises ``CaptureError`` if it is not a capture.

    ``tcp_session(ctx, conn)``, if given, makes the session that receives each TCP
    connection's reassembled bytes instead of the protocol sniffer (raw stream export,
    tests).  ``on_start(analysis)`` receives the Analysis before the first packet, so a view
    can show packets while the pass goes on (the index only grows; connections, frames and
    exchanges are appended).  ``shard`` (``analyzer.parallel.Shard``): decode only this
    worker's connections.  ``opener``: how the capture file is opened (``read_capture``; a live
    capture follows its growing file).  ``listing=False``: no per-packet listing of frames
    (``sessions.Context.listing``), for a command that prints exchanges only."""
    if keylog is None:
        keylog = load_keylog(keylogs, limits=limits)
    index = PacketIndex()
    an = Analysis(path=path, index=index, keylog=keylog)
    info = CaptureInfo()
    info.secrets_room = keylog.bytes.room() + 1  # (secrets blocks past the key-log budget are not held)
    ctx = Context(an, keylog, limits)
    ctx.listing = listing
    marks = shard.setup(ctx, info) if shard is not None else None  # (packet, frames, exchanges) after each packet that made some
    frames_l, exch_l = an.frames, an.exchanges
    max_pending = ctx.limits["tcp_pending_bytes"]
    tcp_maps = ctx.shared.setdefault("tcp_maps", {})  # conn id -> its TcpDirections, whose .map gives offset -> carrier packet
    decoder = Decoder(ctx.limits.get("ipv4_fragment_datagrams", 1024), ctx.limits.get("ipv4_fragment_bytes", 32 << 20))
    # every flow, in the order of its first packet (finished in that order), by (IP protocol,
    # 4-tuple of its first packet): a UDP flow on the addresses and ports of a TCP connection
    # is a flow of its own (it once met the TCP flow here and stopped the pass)
    flows: dict[tuple, TcpFlow | UdpFlow] = {}
    udp_flows: dict[tuple, UdpFlow] = {}  # (src, sport, dst, dport) of a UDP datagram -> its flow
    tcp_dirs: dict[tuple, TcpDirection] = {}  # (src, sport, dst, dport) of a TCP packet -> its TcpDirection (.flow, .dir)
    retired: list[TcpFlow] = []  # connections ended by a new one on the same ports
    conns = an.connections
    undecoded = an.undecoded

    names: dict = {}  # packed address -> text, shared by the connections of one host (bounded)

    def addr(a) -> str:
        t = names.get(a)
        if t is None:
            t = addr_str(a)
            if len(names) < 65536:
                names[a] = t
        return t

    plain_udp = ctx.budget("udp_plain_flows")  # UDP flows no dissector reads that get a connection
    session_udp = ctx.budget("udp_session_flows")  # UDP flows that get a QUIC or DNS session
    udp_budgets = (plain_udp, session_udp)

    def new_sniffer(flow):
        sn = ctx.sniffer(flow.conn)
        sn.owner = flow
        return sn

    secrets_seen = 0
    # a compressed capture is read to max(limit, limit_per_byte x its file size) decompressed
    # bytes (Inflate, in the reader) and packets (counted here, every 4096): a bomb's output stays
    # linear in the file (docs/ROBUSTNESS.md, "compressed capture ... bombs")
    records: list = []  # [the inflated_records budget, the compressed size], for a compressed capture
    lim = ctx.limits

    def inflate_budget(size: int):
        records.extend((ctx.budget("inflated_records", cap=max(lim["inflated_records"], lim["inflated_records_per_byte"] * size)), size))
        return ctx.budget("inflated_bytes", cap=max(lim["inflated_bytes"], lim["inflated_bytes_per_byte"] * size))

    ts_a, off_a, cap_a, orig_a = index.ts.append, index.offset.append, index.caplen.append, index.origlen.append
    lt_a, conn_a, proto_a, if_a = index.linktype.append, index.conn.append, index.proto.append, index.interface.append
    try:
        total = os.path.getsize(path)
    except OSError:
        total = 0
    last_progress = _time.monotonic()
    if on_start is not None:  # a view of the capture while it is read (live): the offset maps as they stand now
        an.__dict__["live_maps"] = lambda: _maps_of(ctx, flows, retired)  # (dropped by _finish; analyzer.waterfall.maps_of)
        on_start(an)
    pkt = 0
    cut_short = first_cut = 0
    # the loop's variables, typed once (annotations cost nothing at run time): d is the
    # decoded packet of the slow path, set in every iteration that reaches the UDP/other branch
    d: Decoded
    payload: bytes | memoryview
    # a shard's packets (analyzer.parallel): all, or only its own with their numbers (shard.pkt)
    numbered = shard is not None and shard.source is not None
    # the serial pass reads lists of records (capture.read_batches), iterated in C
    reader: Any = (read_batches(path, info, opener, inflate_budget) if shard is None
                   else shard.records(path, info, opener, inflate_budget))
    records_in: Iterator[Record] = chain.from_iterable(reader) if shard is None else reader
    read = 0  # packets this pass read (a streamed shard's numbers skip the other shards')
    gc_at = 0  # file offset of the packet before which the last young collection ran
    for rec in records_in:
        if marks is not None and (len(frames_l) != marks[-1][1] or len(exch_l) != marks[-1][2]):
            marks.append((pkt, len(frames_l), len(exch_l)))
        if numbered:
            pkt = shard.pkt
        else:
            pkt += 1
        read += 1
        if not (read - 1) & 0xFFF:  # packets 1, 4097, 8193, ...
            # (the inflated_records budget: only a compressed capture, never read streamed)
            if records and not records[0].take(0x1000):  # this packet and the next 4095: past the budget
                pkt -= 1
                _stop_reading(info, path, pkt, *records)
                reader.close()  # (the reader's own warnings: now)
                break
            if gc.get_count()[0] > YOUNG_MAX or rec[4] - gc_at > YOUNG_BYTES:
                gc.collect(1)
                gc_at = rec[4]
        ts, caplen, origlen, linktype, roff, rdata, iface = rec  # one unpack, not seven lookups
        ts_a(ts)
        off_a(roff)
        cap_a(caplen)
        orig_a(origlen)
        if caplen < origlen:  # cut by the snap length: the rest of its bytes are not in the file
            if not cut_short:
                first_cut = pkt
            cut_short += 1
        lt_a(linktype)
        if_a(iface)
        if len(info.secrets) > secrets_seen:  # pcapng DSB before this packet
            for stype, data in info.secrets[secrets_seen:]:
                if stype == DSB_TLS_KEYLOG:
                    keylog.add_text(data.decode("utf-8", "replace"), "pcapng secrets block")
            secrets_seen = len(info.secrets)
        if progress is not None and not pkt & 0x3FFF:
            now = _time.monotonic()
            if now - last_progress > 0.1:
                last_progress = now
                progress(pkt, roff, total)
        # Ethernet + IPv4 (no options) + TCP or UDP, the bulk of most captures: Decoder.decode's
        # own fast paths, inlined (no call, no Decoded tuple); everything else goes through decode()
        tcp = udp = False
        n = len(rdata)
        if linktype == 1 and n >= 42 and rdata[14] == 0x45:
            if rdata[23] == 6 and n >= 54:
                etype, _, iptotal, _, frag, _, src, dst, sport, dport, seq, ackno, doff, flags, _ = _ETH_IP4_TCP(rdata, 0)
                end = 14 + iptotal if iptotal >= 20 else n
                if end > n:
                    end = n
                if etype == 0x0800 and not frag & 0x3FFF and doff >= 0x50 and end >= 54:
                    payload = rdata[34 + (doff >> 4) * 4 : end]
                    flags |= (doff & 1) << 8
                    tcp = True
            elif rdata[23] == 17:  # (QUIC: a session per datagram, the UDP header is all there is to read)
                etype, _, iptotal, _, frag, _, src, dst, sport, dport, ulen = _ETH_IP4_UDP(rdata, 0)
                end = 14 + iptotal if iptotal >= 20 else n
                if end > n:
                    end = n
                if etype == 0x0800 and not frag & 0x3FFF and end >= 42:
                    payload = rdata[42 : 34 + ulen if 8 <= ulen <= end - 34 else end]
                    udp = True
        if not tcp and not udp:
            dd = decoder.decode(linktype, rdata)
            if dd is None:  # IPv4 fragment held for reassembly
                conn_a(-1)
                proto_a(P_IPV4)
                continue
            if isinstance(dd, str):  # (narrows the type; type(dd) is str could not exclude subclasses)
                undecoded[dd] = undecoded.get(dd, 0) + 1
                conn_a(-1)
                proto_a(0)
                continue
            d = dd
            proto = d.proto
            if proto == PROTO_TCP:
                _, src, dst, _, sport, dport, payload, seq, ackno, flags, _, _, _, _ = d
                tcp = True
            elif proto == PROTO_UDP:
                _, src, dst, _, sport, dport, payload, _, _, _, _, _, _, _ = d
                udp = True
        if tcp:
            key = (src, sport, dst, dport)
            hit = tcp_dirs.get(key)
            if hit is None and shard is not None and shard.foreign(key, pkt, rec):  # another worker's connection
                conn_a(-2)
                proto_a(0)
                continue
            if hit is not None:
                flow, direction = hit.flow, hit.dir
                if flags & SYN and not flags & ACK and direction == 0:
                    cd = flow.dirs[0]
                    if cd.syn_seq is not None:  # (its SYN seen: another SYN, not a retransmission of it, after it carried data or closed)
                        reused = cd.syn_seq != seq and (flow.closed or cd.next > 0 or flow.dirs[1].next > 0)
                    else:  # joined mid-way (no SYN seen): a SYN that is not its own (its own is one before its first byte), as
                        # tshark's base sequence number decides (the connection after it was merged into it: its requests lost,
                        # and the gap between the two sequence spaces counted as megabytes lost; review 26)
                        reused = cd.isn is not None and (seq + 1) & 0xFFFFFFFF != cd.isn
                    if reused:
                        flow.finish()  # port reused: a new connection
                        retired.append(flow)  # its offset maps still go into the analysis
                        rkey = (dst, dport, src, sport)
                        flows.pop((PROTO_TCP, key), None)
                        flows.pop((PROTO_TCP, rkey), None)
                        tcp_dirs.pop(key, None)
                        tcp_dirs.pop(rkey, None)
                        hit = None
            if hit is None:
                is_client = choose_client(sport, dport, flags)
                if is_client:
                    ckey, ca, sa = (src, sport), (addr(src), sport), (addr(dst), dport)
                else:
                    ckey, ca, sa = (dst, dport), (addr(dst), dport), (addr(src), sport)
                conn = Connection(id=len(conns), transport="tcp", client=ca, server=sa, start=ts, first_packet=pkt)
                conns.append(conn)
                if tcp_session:
                    flow = TcpFlow(conn, ckey, max_pending)
                    flow.app = tcp_session(ctx, conn)
                else:  # the sniffer is made by the first byte (none for a connection without payload)
                    flow = TcpFlow(conn, ckey, max_pending, new_sniffer)
                tcp_maps[conn.id] = flow.dirs  # their carrier maps (made at the first payload), for sessions.tls.wire_packet
                flows[(PROTO_TCP, key)] = flow
                direction = 0 if is_client else 1
                rkey = (dst, dport, src, sport)
                if rkey == key:  # a connection to itself: its client's address is both keys
                    direction = 0
                else:
                    tcp_dirs[rkey] = flow.dirs[1 - direction]
                tcp_dirs[key] = flow.dirs[direction]
            conn = flow.conn
            st = conn.stats[direction]
            st.packets += 1
            st.bytes += origlen
            st.payload += len(payload)
            conn.end = ts
            conn.last_packet = pkt
            conn_a(conn.id)
            proto_a(P_TCP)
            if flags & SYN:
                if flow.dirs[direction].isn is None and conn.tcp is not None:  # the direction's first segment:
                    lay = layers(linktype, rdata)  # the window scale its SYN offers (detail, filters)
                    if lay.payload >= 0:
                        conn.tcp.set_wscale(direction, wscale_option(rdata[lay.transport + 20 : lay.payload]))
                if not flags & ACK:
                    if conn.connect_start is None:
                        conn.connect_start = ts
                else:
                    flow.syn_seen = True  # SYN/ACK: the client's next ACK ends the handshake
                    if direction == 1 and conn.rtt is None and conn.connect_start is not None:
                        # the handshake RTT: SYN → SYN/ACK (docs/JSON.md), as QUIC's is the client's
                        # Initial → the server's answer; the client's ACK after it is the connect's end
                        conn.rtt = ts - conn.connect_start
            elif direction == 0 and flow.syn_seen and conn.connect_end is None and flags & ACK:
                conn.connect_end = ts
            if flags & (FIN | RST):
                if flags & RST:
                    conn.closed = "rst"
                    flow.closed = True
                elif conn.closed is None:
                    conn.closed = "fin"
                if flags & FIN and flow.dirs[1 - direction].fin_off is not None:
                    flow.closed = True
            dr = flow.dirs[direction]
            if flags & ACK:
                rev = flow.dirs[1 - direction]
                isn = rev.isn
                if isn is not None:  # rev.ack(rev.offset_of(ackno), pkt), inlined: most ACKs move nothing
                    nx = rev.next
                    x = (ackno - isn - nx) & 0xFFFFFFFF
                    ao = nx + (x - 0x100000000 if x & 0x80000000 else x)
                    if ao > rev.acked:
                        rev.ack(ao, pkt)
            dr.segment(seq, flags, payload, pkt)
        elif shard is not None and shard.k:  # UDP and the rest: worker 0's
            conn_a(-2)
            proto_a(0)
        elif udp:
            _udp_datagram(ctx, src, sport, dst, dport, payload, pkt, ts, origlen, flows, udp_flows, udp_budgets, shard, addr)
        else:
            conn_a(-1)
            proto_a(P_ICMP if proto in (1, 58) else (P_IPV4 if d.ipver == 4 else P_IPV6))
    _finish(an, ctx, info, decoder, flows, retired, marks, shard, pkt, cut_short, first_cut)
    if progress is not None:
        progress(pkt, total, total)
    return an


def _udp_datagram(ctx: Context, src: bytes, sport: int, dst: bytes, dport: int, payload, pkt: int, ts: float, origlen: int,
                  flows: dict, udp_flows: dict, udp_budgets: tuple, shard, addr: Callable) -> None:
    """One UDP datagram of the pass (``_analyze``'s loop): its flow (a new one, or a known QUIC
    connection on a new path), the connection's statistics and index entry, its session."""
    index = ctx.analysis.index
    key = (src, sport, dst, dport)
    uflow = udp_flows.get(key)
    if uflow is None:
        uflow = udp_flows.get((dst, dport, src, sport))
        if uflow is None:
            uflow = _new_udp_flow(ctx, src, sport, dst, dport, payload, pkt, ts, flows, udp_flows, udp_budgets, shard, addr)
            if uflow is None:  # counted, not modelled
                index.conn.append(-1)
                index.proto.append(P_UDP)
                return
    conn = uflow.conn
    ck = uflow.client_key
    direction = 0 if ck[1] == sport and ck[0] == src else 1
    st = conn.stats[direction]
    st.packets += 1
    st.bytes += origlen
    st.payload += len(payload)
    conn.end = ts
    conn.last_packet = pkt
    index.conn.append(conn.id)
    index.proto.append(P_UDP)
    app = uflow.app
    if app is None and uflow.lazy and _quic_like(payload):
        uflow.lazy = False
        app = uflow.app = ctx.make("quic", conn)
    if app is not None:
        try:
            app.datagram(direction, payload, pkt)
        except Exception as e:  # noqa: BLE001 - a dissector bug must not stop the capture
            app_failed(uflow, e, pkt)
        if getattr(app, "flip_request", False):  # the session found the roles reversed
            setattr(app, "flip_request", False)  # noqa: B010 - an attribute of the QUIC session only
            uflow.client_key = (dst, dport) if uflow.client_key == (src, sport) else (src, sport)
            conn.client, conn.server = conn.server, conn.client
            conn.stats.reverse()


def _new_udp_flow(ctx: Context, src: bytes, sport: int, dst: bytes, dport: int, payload, pkt: int, ts: float,
                  flows: dict, udp_flows: dict, udp_budgets: tuple, shard, addr: Callable) -> UdpFlow | None:
    """The flow of a UDP datagram no known flow has: a known QUIC connection on a new path, or a
    new connection; None: past the UDP flow budgets (counted in ``analysis.undecoded``)."""
    key = (src, sport, dst, dport)
    if "quic_cids" in ctx.shared:
        hit = _quic_route(ctx, payload)
        if hit is not None:  # a known QUIC connection on a new path (migration, NAT rebinding)
            session, direction = hit
            uflow = UdpFlow(session.conn, (src, sport) if direction == 0 else (dst, dport))
            uflow.app = session
            udp_flows[key] = flows[(PROTO_UDP, key)] = uflow
            if shard is not None:
                shard.moved[(PROTO_UDP, key)] = pkt
            session.conn.notes.append(f"packet {pkt}: connection continues on a new path {addr_str(src)}:{sport} → {addr_str(dst)}:{dport}")
            return uflow
    undecoded, conns = ctx.analysis.undecoded, ctx.analysis.connections
    plain_udp, session_udp = udp_budgets  # (udp_plain_flows, udp_session_flows)
    kind = _udp_kind(sport, dport, payload)
    if kind is None and not plain_udp.take(1):  # past udp_plain_flows_capture: counted, not modelled
        undecoded[PLAIN_UDP] = undecoded.get(PLAIN_UDP, 0) + 1
        return None
    if kind is not None and not session_udp.take(1):  # a flood of QUIC- or DNS-looking flows
        undecoded[SESSION_UDP] = undecoded.get(SESSION_UDP, 0) + 1
        return None
    conn = Connection(id=len(conns), transport="udp", client=(addr(src), sport), server=(addr(dst), dport), start=ts, first_packet=pkt)
    if choose_client(sport, dport, None) is False:
        conn.client, conn.server = conn.server, conn.client
        uflow = UdpFlow(conn, (dst, dport))
    else:
        uflow = UdpFlow(conn, (src, sport))
    conns.append(conn)
    udp_flows[key] = flows[(PROTO_UDP, key)] = uflow
    if kind is not None:
        uflow.app = ctx.make(kind, conn) if kind in KINDS else None
        if kind == "dns":
            conn.protocol = "dns"
    elif sport in QUIC_PORTS or dport in QUIC_PORTS:
        uflow.lazy = True  # a QUIC session once a datagram looks like QUIC
    return uflow


def _finish(an: Analysis, ctx: Context, info: CaptureInfo, decoder: Decoder, flows: dict, retired: list, marks, shard,
            pkt: int, cut_short: int, first_cut: int) -> None:
    """The end of the pass (``_analyze``): every flow finished in the order of its first packet,
    the budgets reported, the capture's warnings, facts and offset maps on the analysis."""
    frames_l, exch_l, keylog = an.frames, an.exchanges, ctx.keylog
    if marks is not None:
        marks.append((pkt, len(frames_l), len(exch_l)))
    for fkey, fl in flows.items():
        if isinstance(fl, TcpFlow):
            fl.finish()
        elif fl.app is not None:
            try:
                fl.app.end()
            except Exception as e:  # noqa: BLE001
                app_failed(fl, e, fl.conn.last_packet)
        if marks is not None:  # ordered by the packet that made the flow's entry
            marks.append((shard.END + shard.moved.get(fkey, fl.conn.first_packet), len(frames_l), len(exch_l)))
    an.warnings.extend(info.warnings)
    ctx.report_budgets()
    if cut_short:
        an.warnings.append(f"{cut_short} packets (the first: packet {first_cut}) hold fewer bytes than were sent (snap length): "
                           f"their missing payload is a gap in its stream, and decoding resumes at the next frame boundary found")
    an.warnings.extend(keylog.warnings)
    for name in keylog.budgets_hit:  # read before the pass, one per capture: typed like the others
        an.budgets_hit.setdefault(name, []).append(CAPTURE_ID)
    if decoder.defrag.pending:
        an.warnings.append(f"{len(decoder.defrag.pending)} IPv4 datagrams left incomplete (fragments missing)")
    if decoder.defrag.dropped:
        an.warnings.append(f"{decoder.defrag.dropped} IPv4 datagrams dropped from fragment reassembly (ipv4_fragment_datagrams / ipv4_fragment_bytes limits, oversized or overlapping fragments)")
    an.quic_stats = ctx.shared.get("quic_stats", {})
    an.capture_format = info.format
    an.compression = info.compression
    an.interfaces = info.interfaces
    an.maps = _maps_of(ctx, flows, retired)
    an.__dict__.pop("live_maps", None)


def _maps_of(ctx: Context, flows: dict, retired: list) -> dict:
    """The TCP offset maps (conn id, direction) -> OffsetMap and the TLS plaintext maps (conn id,
    direction, "tls") -> decrypted offset -> packet that completed the record.  (Called from a
    view's thread while a live pass runs: the tuple and list copies of the pass's dicts are
    made under the GIL, never iterated as they grow.)"""
    # (a direction that carried no payload has no map: analysis.maps.get gives None)
    maps: dict = {(c.conn.id, i): c.dirs[i].map for c in (*retired, *flows.values()) if isinstance(c, TcpFlow)
            for i in (0, 1) if c.dirs[i].map is not None}
    for (cid, d), m in list(ctx.shared.get("tls_plaintext_maps", {}).items()):
        maps[(cid, d, "tls")] = m
    return maps


def _stop_reading(info: CaptureInfo, path: str, pkt: int, budget, size: int) -> None:
    info.truncated = True
    info.warnings.append(f"{path}: stopped reading after packet {pkt}: budget {budget.name} ({budget.cap} packets for this "
                         f"{size}-byte compressed file) ran out, the rest was not read (a decompression bomb? raise it "
                         f"with --limit {budget.name}=N)")


def _udp_kind(sport: int, dport: int, payload) -> str | None:
    """The session a new UDP flow gets from its first datagram: "dns" by port, "quic" when it
    looks like QUIC; None: no dissector reads it (yet: on a QUIC port, a later datagram that
    looks like QUIC (or gQUIC) still makes a QUIC session, see ``_quic_like``)."""
    if sport in (53, 5353) or dport in (53, 5353):
        return "dns"
    try:
        from wirefall.dissectors.quic import looks_like_quic
    except ImportError:
        return None
    return "quic" if looks_like_quic(payload) is not None else None


def _quic_like(payload) -> bool:
    """What QuicSession waits for before it decodes (IETF QUIC invariants or gQUIC)."""
    from wirefall.dissectors.gquic import is_gquic
    from wirefall.dissectors.quic import looks_like_quic

    return looks_like_quic(payload) is not None or is_gquic(payload)


QUIC_PORTS = (443, 4433, 8443)
PLAIN_UDP = "UDP flow no dissector reads, past udp_plain_flows_capture (counted, not modelled)"
SESSION_UDP = "QUIC or DNS flow past udp_session_flows_capture (counted, not modelled)"


def _quic_route(ctx: Context, payload):
    try:
        from .sessions.quic import route
    except ImportError:
        return None
    return route(ctx, payload)
