"""The link conditions one page load met, measured from its capture (taken in the client
namespace, lab/net.py), and the check against what was asked.

- **RTT**: per connection, the client's first SYN → the server's SYN/ACK (the kernels answer: no
  application time in it), or for QUIC the client's first datagram → the server's first one
  (the server's handshake work is in it: an upper bound of the RTT; with the excess over the
  asked RTT recorded as what the server took). The load's RTT is the shortest handshake (the
  first one meets empty queues); the median is recorded too.
- **Rate each way**: IP bytes in the busiest second (a sliding window of 1 s over the packets'
  times), in Mbit/s. Server→client packets are captured after the downlink's bottleneck, so this
  is the rate the link delivered; client→server packets are captured before the uplink's, so it
  is what the client sent in a second (at most the rate plus what the queue holds). A load that
  never fills a link for a second shows less than the rate: *unsaturated*, not a miss.
- **Queueing delay** (downlink): TCP timestamps. For each server→client segment,
  capture time − TSval / (TSval clock rate, fitted per connection, 1 kHz on Linux) is the
  one-way delay plus a constant; minus its minimum over the connection it is the time the segment
  spent queued (behind the bottleneck, or in the server's own stack). The load's figure is the
  largest over its connections (1 ms granularity). QUIC has no clear timestamps: the relay's own
  per-load queue peaks (``relay``) are then the only figure.

``check`` compares asked and measured: a condition is missed when the measurement is more than
``TOLERANCE`` (10 %) off (RTT below or, over TCP, above; rate above; queueing beyond the buffer),
with absolute slack for what the instruments cannot resolve (1 ms for RTT, 2 ms for the 1 ms
TSval clock). Loss is checked on the relay's counters for the load (binomial, 4 σ): at 1 % of
~400 packets a 10 % criterion would be noise.
"""
from __future__ import annotations

import statistics
from collections.abc import Iterable
from typing import Any

import dpkt

TOLERANCE = 0.10
WINDOW_S = 1.0
DNS_PORT = 53
QUIC_FLIGHT_BYTES = 1200  # a server's datagram with an ack-eliciting Initial is padded to 1200 (RFC 9000 §14.1)

# capture link types whose packets start with the IP header (tcpdump on a TUN device: RAW)
RAW_IP = {12, 14, 101, 228, 229}
ETHERNET = 1
SLL, SLL2 = 113, 276


def _ip(linktype: int, data: bytes):
    try:
        if linktype in RAW_IP:
            return dpkt.ip.IP(data) if data[:1] and data[0] >> 4 == 4 else dpkt.ip6.IP6(data)
        if linktype == ETHERNET:
            return dpkt.ethernet.Ethernet(data).data
        if linktype == SLL:
            return dpkt.sll.SLL(data).data
        if linktype == SLL2:
            return dpkt.sll2.SLL2(data).data
    except (dpkt.UnpackError, IndexError, ValueError):
        return None
    return None


def _addr(ip) -> str:
    import socket

    fam = socket.AF_INET if isinstance(ip, dpkt.ip.IP) else socket.AF_INET6
    return socket.inet_ntop(fam, ip.src)


def _tsval(tcp) -> int | None:
    try:
        for kind, val in dpkt.tcp.parse_opts(tcp.opts):
            if kind == dpkt.tcp.TCP_OPT_TIMESTAMP and len(val) == 8:
                return int.from_bytes(val[:4], "big")
    except (ValueError, IndexError):
        return None
    return None


def packets(records: Iterable, client_ip: str) -> list[dict]:
    """One dict per IP packet: time, direction (``c2s`` from ``client_ip``), IP length, transport,
    the flow key (client port, server port), TCP flags and TSval."""
    out = []
    for r in records:
        ip = _ip(r.linktype, r.data)
        if ip is None or not isinstance(ip, (dpkt.ip.IP, dpkt.ip6.IP6)):
            continue
        c2s = _addr(ip) == client_ip
        length = ip.len if isinstance(ip, dpkt.ip.IP) else 40 + ip.plen
        t = ip.data
        p: dict[str, Any] = {"ts": r.ts, "c2s": c2s, "len": length}
        if isinstance(t, dpkt.tcp.TCP):
            p.update(proto="tcp", flow=(t.sport, t.dport) if c2s else (t.dport, t.sport), flags=t.flags, tsval=_tsval(t))
        elif isinstance(t, dpkt.udp.UDP):
            p.update(proto="udp", flow=(t.sport, t.dport) if c2s else (t.dport, t.sport))
        else:
            p.update(proto="other", flow=None)
        out.append(p)
    return out


def handshake_rtts(pkts: list[dict]) -> tuple[str | None, list[float]]:
    """(``tcp``|``quic``|None, RTT of each connection's handshake in ms) as defined above."""
    first: dict[tuple, float] = {}
    tcp, quic = [], []
    answered: set[tuple] = set()
    for p in pkts:
        f = p.get("flow")
        if f is None or DNS_PORT in f:  # the page's DNS lookups are not handshakes
            continue
        key = (p["proto"], f)
        if p["proto"] == "tcp":
            syn, ack = p["flags"] & dpkt.tcp.TH_SYN, p["flags"] & dpkt.tcp.TH_ACK
            if p["c2s"] and syn and not ack:
                first.setdefault(key, p["ts"])  # the first SYN (a retransmitted SYN is not a new RTT)
            elif not p["c2s"] and syn and ack and key in first and key not in answered:
                answered.add(key)
                tcp.append(1000 * (p["ts"] - first[key]))
        elif p["proto"] == "udp":
            if p["c2s"]:
                first.setdefault(key, p["ts"])
            elif key in first and key not in answered:
                answered.add(key)
                quic.append(1000 * (p["ts"] - first[key]))
    if tcp:
        return "tcp", tcp
    return ("quic", quic) if quic else (None, [])


def quic_server_flights(pkts: list[dict], detail: bool = False) -> list:
    """Per QUIC flow: the client's first datagram → the server's first datagram of at least
    ``QUIC_FLIGHT_BYTES`` (its ServerHello flight; quic-go acknowledges the Initial at once in a
    small datagram, aioquic does not), in ms; with ``detail`` (ms, client bytes sent before it,
    that datagram's bytes): what the link's rates add to it (``check``)."""
    first: dict[tuple, float] = {}
    sent: dict[tuple, int] = {}
    out: dict[tuple, tuple[float, int, int]] = {}
    for p in pkts:
        f = p.get("flow")
        if p.get("proto") != "udp" or f is None or DNS_PORT in f:
            continue
        if p["c2s"]:
            first.setdefault(f, p["ts"])
            if f not in out:
                sent[f] = sent.get(f, 0) + p["len"]
        elif f in first and f not in out and p["len"] >= QUIC_FLIGHT_BYTES:
            out[f] = (1000 * (p["ts"] - first[f]), sent.get(f, 0), p["len"])
    return list(out.values()) if detail else [v[0] for v in out.values()]


def busiest_second(pkts: list[dict], c2s: bool, window: float = WINDOW_S) -> float | None:
    """Mbit/s of IP bytes in the busiest ``window`` s of one direction (sliding)."""
    ts = [(p["ts"], p["len"]) for p in pkts if p["c2s"] == c2s]
    if not ts:
        return None
    best, acc, j = 0, 0, 0
    for i in range(len(ts)):
        acc += ts[i][1]
        while ts[i][0] - ts[j][0] >= window:
            acc -= ts[j][1]
            j += 1
        best = max(best, acc)
    return best * 8 / window / 1e6


def queueing_delay_ms(pkts: list[dict]) -> dict | None:
    """Downlink queueing delay from TCP timestamps (see the module docstring): max and 95th
    percentile over the server's segments, ms; None without timestamps."""
    by: dict[tuple, list[tuple[float, int]]] = {}
    for p in pkts:
        if p.get("proto") == "tcp" and not p["c2s"] and p.get("tsval") is not None:
            by.setdefault(p["flow"], []).append((p["ts"], p["tsval"]))
    qs: list[float] = []
    for samples in by.values():
        if len(samples) < 2:
            continue
        (t0, v0), (t1, v1) = samples[0], samples[-1]
        hz = 1000.0
        if t1 - t0 > 0.2 and v1 > v0:  # fit the clock when the connection lasts; Linux: 1000 Hz
            est = (v1 - v0) / (t1 - t0)
            hz = 1000.0 if 500 < est < 2000 else est
        d = [t - (v - v0) / hz for t, v in samples]
        m = min(d)
        qs += [1000 * (x - m) for x in d]
    if not qs:
        return None
    qs.sort()
    return {"max_ms": round(qs[-1], 3), "p95_ms": round(qs[int(0.95 * (len(qs) - 1))], 3), "segments": len(qs)}


def measure(records: Iterable, client_ip: str) -> dict:
    pk = packets(records, client_ip)
    src, rtts = handshake_rtts(pk)
    down, up = busiest_second(pk, False), busiest_second(pk, True)
    span = pk[-1]["ts"] - pk[0]["ts"] if pk else 0.0
    flights = sorted(quic_server_flights(pk, detail=True)) if src == "quic" else []
    return {"rtt_source": src, "handshakes": len(rtts),
            "quic_server_flight_ms": round(flights[0][0], 3) if flights else None,
            "quic_flight_bytes": [flights[0][1], flights[0][2]] if flights else None,
            "rtt_ms": round(min(rtts), 3) if rtts else None,
            "rtt_ms_median": round(statistics.median(rtts), 3) if rtts else None,
            "down_mbit": None if down is None else round(down, 4), "up_mbit": None if up is None else round(up, 4),
            "capture_s": round(span, 4), "queueing": queueing_delay_ms(pk)}


def measure_capture(path: str, client_ip: str) -> dict:
    from wirefall.analyzer.capture import read_capture

    return measure(read_capture(path), client_ip)


def _binomial_ok(asked_pct: float, dropped: int, offered: int) -> bool:
    if offered <= 0:
        return True
    p = asked_pct / 100
    tol = 4 * (p * (1 - p) / offered) ** 0.5 + 1 / offered
    return abs(dropped / offered - p) <= tol


def check(asked: dict, measured: dict, relay: dict | None = None, tol: float = TOLERANCE) -> dict:
    """Per condition ``ok`` | ``miss`` | ``unsaturated`` | ``unfilled`` | ``upper bound`` |
    ``not measured``; ``ok`` overall unless one is ``miss`` (``missed`` names them).

    ``asked``: rtt_ms, loss_pct, down_mbit, up_mbit, buffer_ms (the downlink queue's limit as
    time, None when given in packets: then buffer_packets)."""
    out: dict[str, Any] = {}
    a, m = asked.get("rtt_ms") or 0.0, measured.get("rtt_ms")
    if measured.get("rtt_source") == "tcp":  # the SYN's and SYN/ACK's transmission at the set rates
        a += asked.get("rtt_serialisation_ms") or 0.0
    if m is None:
        out["rtt"] = "not measured"
    elif measured.get("rtt_source") == "quic":
        # the server's handshake work is in it: only a measurement below the asked RTT is a miss
        out["rtt"] = "miss" if m < a - max(tol * a, 1.0) else "upper bound"
        fl = measured.get("quic_server_flight_ms")
        # minus the transmission of the client's Initials (uplink) and of the server's datagram
        # (downlink) at the set rates: 2 × 1278 bytes take 55 ms at 375 kbit/s
        ser = 0.0
        fb = measured.get("quic_flight_bytes")
        if fl is not None and fb:
            ser = sum(8 * b / (r * 1e6) * 1000 for b, r in zip(fb, (asked.get("up_mbit"), asked.get("down_mbit"))) if r)
        out["server_handshake_ms"] = round(max(0.0, (fl if fl is not None else m) - a - ser), 3)
    else:
        out["rtt"] = "ok" if abs(m - a) <= max(tol * a, 1.0) else "miss"
    for d in ("down", "up"):
        a, m = asked.get(f"{d}_mbit"), measured.get(f"{d}_mbit")
        if not a:
            continue
        if m is None:
            out[d] = "not measured"
        elif m > a * (1 + tol) and not (d == "up" and _up_within_buffer(m, a, asked)):
            out[d] = "miss"
        else:
            out[d] = "ok" if m >= a * (1 - tol) else "unsaturated"
    if asked.get("down_mbit"):
        q = (measured.get("queueing") or {}).get("max_ms")
        limit = asked.get("buffer_ms")
        if limit is None and asked.get("buffer_packets"):
            limit = asked["buffer_packets"] * 1500 * 8 / (asked["down_mbit"] * 1e6) * 1000
        if q is None or limit is None:
            out["buffer"] = "not measured"
        elif q > limit * (1 + tol) + 2.0:
            out["buffer"] = "miss"
        else:
            out["buffer"] = "ok" if q >= limit * (1 - tol) - 2.0 else "unfilled"
    if relay and asked.get("loss_pct") is not None:
        ok = all(_binomial_ok(asked["loss_pct"], relay[d]["dropped"], relay[d]["offered"]) for d in ("c2s", "s2c") if d in relay)
        out["loss"] = "ok" if ok else "miss"
    missed = [k for k, v in out.items() if v == "miss"]
    return {"ok": not missed, "missed": missed, "tolerance": tol, **out}


def _up_within_buffer(m: float, a: float, asked: dict) -> bool:
    """Client→server is captured before the uplink's queue: in one second the client can hand it
    the rate's worth plus what the queue holds."""
    qms = asked.get("up_buffer_ms")
    if qms is None and asked.get("buffer_packets"):
        return m * 1e6 / 8 <= a * 1e6 / 8 * (1 + TOLERANCE) + asked["buffer_packets"] * 1500
    return qms is not None and m <= a * (1 + TOLERANCE + qms / 1000)


def relay_delta(before: dict | None, after: dict | None) -> dict | None:
    """The relay's counters for one load: ``after`` − ``before`` (cumulative counters) with
    ``after``'s peaks (reset at each snapshot)."""
    if not after:
        return None
    out: dict[str, Any] = {}
    for d in ("c2s", "s2c"):
        a, b = after.get(d) or {}, (before or {}).get(d) or {}
        out[d] = {k: (v - b.get(k, 0) if k in ("offered", "dropped", "overflow", "delivered", "bytes_delivered") else v)
                  for k, v in a.items()}
    return out


def server_time(exchanges: Iterable, rtt_ms: float | None) -> dict:
    """The server's own time per request, from the client-side capture: the response's first
    packet − the request's last packet − one RTT (``rtt_ms``: the network's, from the lab's TCP
    connect probes — kernel to kernel, no server in it). What is left is the server's think time
    plus any queueing on the way (none without a rate limit) and, for later requests of a
    multiplexed connection, the time the server spent sending other responses first: so the
    figure that compares servers is the page's first request (``think_first_ms``: nothing else is
    in flight), the median over requests (``think_median_ms``) is shown beside it.
    Pushed responses are left out (no request from the client)."""
    xs = sorted((e.request_start, e.request_end, e.response_start) for e in exchanges
                if not e.pushed and e.request_end is not None and e.response_start is not None
                and e.request_start is not None)
    if not xs or rtt_ms is None:
        return {"think_first_ms": None, "think_median_ms": None, "requests": len(xs)}
    th = [1000 * (rs - re) - rtt_ms for _, re, rs in xs]
    return {"think_first_ms": round(th[0], 3), "think_median_ms": round(statistics.median(th), 3), "requests": len(xs)}


def netlog_quic(path) -> dict:
    """What Chromium's NetLog (``--log-net-log``, gzipped) says of its QUIC sessions: per host the
    sessions it opened (``QUIC_SESSION`` begins) and the times it moved one to another UDP port
    (``QUIC_PORT_MIGRATION_TRIGGERED`` begins), and the field trial groups in force
    (``activeFieldTrialGroups``, where the lab's QUIC trial shows: lab.run.CHROMIUM_QUIC_FLAGS).
    ``error`` instead when the log cannot be read."""
    import gzip
    import json

    try:
        with gzip.open(path, "rt") as f:
            text = f.read()
        try:
            log = json.loads(text)
        except ValueError:  # a log Chromium did not close (killed): its events so far
            log = json.loads(text.rstrip().rstrip(",") + "]}")
    except (OSError, ValueError, EOFError) as err:
        return {"error": f"{type(err).__name__}: {err}"}
    c = log.get("constants") or {}
    types = c.get("logEventTypes") or {}
    begin = (c.get("logEventPhase") or {}).get("PHASE_BEGIN", 1)
    session, moved = types.get("QUIC_SESSION"), types.get("QUIC_PORT_MIGRATION_TRIGGERED")
    host: dict[Any, str] = {}
    sessions: dict[str, int] = {}
    migrations: dict[str, int] = {}
    for e in log.get("events") or []:
        if e.get("phase") != begin:
            continue
        sid = (e.get("source") or {}).get("id")
        if e.get("type") == session and (e.get("params") or {}).get("host"):
            host[sid] = e["params"]["host"]
            sessions[host[sid]] = sessions.get(host[sid], 0) + 1
        elif e.get("type") == moved:
            h = host.get(sid, f"session {sid}")
            migrations[h] = migrations.get(h, 0) + 1
    return {"sessions": sessions, "port_migrations": migrations,
            "field_trials": list(c.get("activeFieldTrialGroups") or [])}
