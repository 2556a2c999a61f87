"""The lab's links (lab/net.py DelayLine: rate, bounded queue, bursty loss; --buffer) and what
lab/measure.py reads back from a capture (handshake RTT, busiest second, queueing delay from TCP
timestamps), and the check of asked against measured.

Unit tests are pure: packets go through a DelayLine and the capture the client would have taken
is written with dpkt, then read back by lab/measure.py (and, for the handshake RTT, by tshark).
One real lab load (slow, root) checks a 3/1 Mbit/s, 50 ms, buffer = BDP link from its capture,
against tshark's own iRTT and per-second I/O statistics.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import dpkt
import pytest

from conftest import ROOT
from wirefall.lab.measure import busiest_second, check, handshake_rtts, measure_capture, packets, queueing_delay_ms, relay_delta
from wirefall.lab.net import DelayLine, parse_buffer, queue_limits

CLIENT, SERVER = "10.77.0.1", "10.77.0.2"


# ------------------------------------------------------------------ the bottleneck (pure)

def test_rate_serialises_packets_back_to_back_then_delays():
    d = DelayLine(delay=0.010, loss=0.0, seed=1, rate=1e6)        # 1 Mbit/s: 1250 B take 10 ms
    for _ in range(3):
        assert d.offer(0.0, bytes(1250))
    assert d.q[0][0] == pytest.approx(0.020) and d.q[1][0] == pytest.approx(0.030) and d.q[2][0] == pytest.approx(0.040)
    assert d.peaks()["max_queue_packets"] == 3 and d.peaks()["max_wait_ms"] == pytest.approx(20.0)
    # an idle link: a packet offered later is sent at once
    assert d.offer(1.0, bytes(1250)) and d.q[-1][0] == pytest.approx(1.020)
    assert len(d.due(1.0199)) == 3 and d.due(1.021) == [bytes(1250)]
    assert d.stats()["delivered"] == 4 and d.peaks()["bytes_delivered"] == 5000


def test_queue_limit_in_packets_is_drop_tail():
    d = DelayLine(0.0, 0.0, 1, limit=4, rate=1e6)
    got = [d.offer(0.0, bytes(1250)) for _ in range(6)]
    assert got == [True] * 4 + [False] * 2 and d.stats()["overflow"] == 2
    # after one packet has left the bottleneck (10 ms) there is room for one more
    assert d.offer(0.0101, bytes(1250)) and not d.offer(0.0101, bytes(1250))


def test_queue_limit_in_time_holds_what_the_link_sends_in_it():
    """--buffer 50ms at 3 Mbit/s: a burst of 100 full packets; the admitted ones wait ≤ 50 ms
    minus their own transmission (4 ms each): 12 packets (12 × 4 ms = 48 ms), the rest dropped."""
    rate, size = 3e6, 1500
    d = DelayLine(0.025, 0.0, 1, rate=rate, limit_s=0.050)
    ok = [d.offer(0.0, bytes(size)) for _ in range(100)]
    tx = size * 8 / rate
    assert sum(ok) == int(0.050 / tx + 1e-9) == 12 and ok[:12] == [True] * 12
    assert d.peaks()["max_wait_ms"] == pytest.approx(1000 * 11 * tx) and d.peaks()["max_wait_ms"] + 1000 * tx <= 50.0 + 1e-6
    # BDP (3 Mbit/s × 50 ms = 18 750 B) is the same queue: queue_limits("bdp", 50) = 50 ms
    assert queue_limits(parse_buffer("bdp"), 50) == (4096, 0.05)
    assert queue_limits(parse_buffer("30ms"), 50) == (4096, 0.03)
    assert queue_limits(parse_buffer("20p"), 50) == (20, None) == queue_limits(parse_buffer("20"), 50)
    for bad in ("x", "0", "1.5p", "-3ms", "bdpms"):
        with pytest.raises(ValueError):
            parse_buffer(bad)
    with pytest.raises(ValueError):
        queue_limits(parse_buffer("bdp"), 0)


def test_an_empty_queue_always_admits_even_below_one_packet():
    d = DelayLine(0.0, 0.0, 1, rate=1e6, limit_s=0.001)  # 1 ms < 10 ms of one 1250 B packet
    assert d.offer(0.0, bytes(1250)) and not d.offer(0.0, bytes(1250))
    assert d.offer(0.011, bytes(1250))


def test_bursty_loss_has_the_set_rate_and_mean_burst():
    n, p, b = 200_000, 0.02, 4.0
    d = DelayLine(0.0, p, 5, limit=n, burst=b)
    kept = [d.offer(0.0, b"x") for _ in range(n)]
    lost = n - sum(kept)
    bursts, run = [], 0
    for k in kept:
        if not k:
            run += 1
        elif run:
            bursts.append(run)
            run = 0
    assert abs(lost / n - p) < 0.15 * p                    # stationary loss ≈ 2 %
    assert abs(sum(bursts) / len(bursts) - b) < 0.1 * b    # mean burst ≈ 4 packets
    # independent loss at the same rate has mean burst ≈ 1/(1 − p)
    d2 = DelayLine(0.0, p, 5, limit=n)
    kept2 = [d2.offer(0.0, b"x") for _ in range(n)]
    runs2 = "".join("1" if k else "0" for k in kept2).split("1")
    runs2 = [len(r) for r in runs2 if r]
    assert sum(runs2) / len(runs2) < 1.1
    # seeded: the same pattern again
    d3 = DelayLine(0.0, p, 5, limit=n, burst=b)
    assert [d3.offer(0.0, b"x") for _ in range(n)] == kept


# ------------------------------------------------------------------ capture measurements (pure)

def _tcp(src, dst, sport, dport, flags, seq=0, ack=0, tsval=None, payload=b""):
    opts = b""
    if tsval is not None:
        opts = b"\x01\x01" + bytes([8, 10]) + tsval.to_bytes(4, "big") + bytes(4)
    t = dpkt.tcp.TCP(sport=sport, dport=dport, flags=flags, seq=seq, ack=ack, win=65535, opts=opts, data=payload)
    t.off = 5 + len(opts) // 4
    ip = dpkt.ip.IP(src=bytes(map(int, src.split("."))), dst=bytes(map(int, dst.split("."))), p=6, ttl=64, data=t)
    ip.len = 20 + len(bytes(t))
    return bytes(ip)


def simulate(tmp_path: Path, rtt=0.050, down=3e6, limit_s=0.050, n=1000, loss=0.0) -> tuple[Path, DelayLine]:
    """A TCP handshake, then the server sends ``n`` full segments as fast as it can (TSval = its
    clock in ms) through the downlink bottleneck; the capture is the client side's (after it)."""
    line = DelayLine(rtt / 2, loss, 3, rate=down, limit_s=limit_s)
    recs = []
    t0 = 100.0
    recs.append((t0, _tcp(CLIENT, SERVER, 40000, 443, dpkt.tcp.TH_SYN, tsval=5)))
    recs.append((t0 + rtt, _tcp(SERVER, CLIENT, 443, 40000, dpkt.tcp.TH_SYN | dpkt.tcp.TH_ACK, tsval=777)))
    recs.append((t0 + rtt, _tcp(CLIENT, SERVER, 40000, 443, dpkt.tcp.TH_ACK, tsval=6)))
    start = t0 + rtt * 1.5  # the server's data leaves after the client's ACK reaches it
    sent = []
    for i in range(n):
        ts_send = start + i * 0.002          # the server sends faster than the link (6 Mbit/s)
        seg = _tcp(SERVER, CLIENT, 443, 40000, dpkt.tcp.TH_ACK, seq=i * 1448, tsval=777 + int(1000 * (ts_send - t0)),
                   payload=bytes(1448))
        sent.append(line.offer(ts_send, seg))
    for due, pkt in list(line.q):
        recs.append((due, pkt))
    recs.sort(key=lambda x: x[0])
    path = tmp_path / "sim.pcap"
    with open(path, "wb") as f:
        w = dpkt.pcap.Writer(f, linktype=dpkt.pcap.DLT_RAW if hasattr(dpkt.pcap, "DLT_RAW") else 101)
        for ts, pkt in recs:
            w.writepkt(pkt, ts=ts)
    return path, line


def test_measurement_reads_back_the_simulated_link(tmp_path):
    path, line = simulate(tmp_path)
    m = measure_capture(str(path), CLIENT)
    assert m["rtt_source"] == "tcp" and m["handshakes"] == 1 and m["rtt_ms"] == pytest.approx(50.0, abs=0.01)
    # the downlink delivers 3 Mbit/s of IP bytes in its busiest second (± one packet)
    assert m["down_mbit"] == pytest.approx(3.0, abs=1500 * 8 / 1e6)
    # queueing: the largest wait the bottleneck gave (the least-delayed segment waited none), to
    # the 1 ms TSval clock; the wait plus a packet's transmission is within the 50 ms buffer
    assert m["queueing"]["max_ms"] == pytest.approx(line.peaks()["max_wait_ms"], abs=1.01)
    assert line.peaks()["max_wait_ms"] > 40
    assert m["queueing"]["max_ms"] <= 50.0 + 1.5
    # the check: asked 50 ms, 3 Mbit/s down, buffer = BDP (50 ms): all in force
    asked = {"rtt_ms": 50, "loss_pct": 0, "down_mbit": 3, "up_mbit": None, "buffer_ms": 50.0}
    c = check(asked, m)
    assert c["ok"] and (c["rtt"], c["down"], c["buffer"]) == ("ok", "ok", "ok"), c
    # tshark's own iRTT of the same capture (outside truth)
    if shutil.which("tshark"):
        out = subprocess.run(["tshark", "-r", str(path), "-Y", "tcp.analysis.initial_rtt", "-T", "fields",
                              "-e", "tcp.analysis.initial_rtt"], capture_output=True, text=True, timeout=60).stdout
        assert float(out.split()[0]) * 1000 == pytest.approx(m["rtt_ms"], abs=0.01)


def test_check_marks_what_missed(tmp_path):
    path, _ = simulate(tmp_path, rtt=0.080, down=4e6, limit_s=0.200)
    m = measure_capture(str(path), CLIENT)
    asked = {"rtt_ms": 50, "loss_pct": 0, "down_mbit": 3, "up_mbit": None, "buffer_ms": 50.0}
    c = check(asked, m)
    assert not c["ok"] and set(c["missed"]) == {"rtt", "down", "buffer"}, (c, m)
    # a load that never fills the link is unsaturated, not a miss; a queue never filled, unfilled
    c = check({"rtt_ms": 80, "down_mbit": 40, "buffer_ms": 400.0}, m)
    assert c["ok"] and c["down"] == "unsaturated" and c["buffer"] == "unfilled", c
    # QUIC: the handshake includes the server's work, an upper bound
    c = check({"rtt_ms": 50}, {"rtt_ms": 90.0, "rtt_source": "quic"})
    assert c["ok"] and c["rtt"] == "upper bound" and c["server_handshake_ms"] == 40.0
    # loss on the relay's counters for the load: binomial, not 10 %
    relay = {"c2s": {"offered": 400, "dropped": 5}, "s2c": {"offered": 600, "dropped": 4}}
    assert check({"rtt_ms": 0, "loss_pct": 1}, {}, relay)["loss"] == "ok"
    assert check({"rtt_ms": 0, "loss_pct": 1}, {}, {**relay, "s2c": {"offered": 600, "dropped": 40}})["missed"] == ["loss"]


def test_pieces_of_the_measurement():
    pk = [{"ts": t, "c2s": False, "len": 1000, "proto": "tcp", "flow": (1, 2), "flags": 0x10, "tsval": None} for t in
          [0.0, 0.5, 0.99, 1.2, 1.3, 1.4, 3.0]]
    # busiest 1 s window: 0.5, 0.99, 1.2, 1.3, 1.4 → 5000 B
    assert busiest_second(pk, False) == pytest.approx(5000 * 8 / 1e6) and busiest_second(pk, True) is None
    assert queueing_delay_ms(pk) is None
    src, r = handshake_rtts([{"ts": 1.0, "c2s": True, "proto": "udp", "flow": (5, 443)},
                             {"ts": 1.0 + 0.08, "c2s": False, "proto": "udp", "flow": (5, 443)},
                             {"ts": 1.2, "c2s": False, "proto": "udp", "flow": (5, 443)}])
    assert src == "quic" and r == [pytest.approx(80.0)]
    before = {"c2s": {"offered": 10, "dropped": 1, "max_queue_packets": 9}, "s2c": {"offered": 5, "dropped": 0}}
    after = {"c2s": {"offered": 30, "dropped": 2, "max_queue_packets": 3}, "s2c": {"offered": 25, "dropped": 1}}
    assert relay_delta(before, after) == {"c2s": {"offered": 20, "dropped": 1, "max_queue_packets": 3},
                                          "s2c": {"offered": 20, "dropped": 1}}
    # a packet that is not IP (or is cut short) is skipped, not an error
    from wirefall.analyzer.capture import Record

    assert packets([Record(0.0, 3, 3, 101, 0, b"\x45\x00\x00", 0)], CLIENT) == []


# ------------------------------------------------------------------ one real load (root, slow)

@pytest.mark.slow
def test_real_asymmetric_link_with_bdp_buffer(tmp_path):
    """`wirefall lab --protocols h2 --rtt 50 --down 3 --up 1 --buffer bdp`: the load's capture shows
    the 50 ms RTT (tshark's iRTT agrees), a downlink at 3 Mbit/s (tshark's busiest 1 s interval is
    no more than ours and within 10 % of it), the queueing within the BDP, and the manifest has it
    all as asked and measured."""
    if os.geteuid() != 0:
        pytest.skip("the lab needs root")
    for t in ("ip", "ethtool", "tcpdump", "editcap", "nginx", "chromium", "tshark"):
        if not shutil.which(t):
            pytest.skip(f"{t} missing")
    out = tmp_path / "runs"
    r = subprocess.run([sys.executable, "-m", "wirefall", "lab", "--protocols", "h2", "--rtt", "50", "--down", "3",
                        "--up", "1", "--buffer", "bdp", "-o", str(out)], capture_output=True, text=True, cwd=ROOT,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    m = json.loads((out / "manifest.json").read_text())
    (c,) = m["conditions"]
    assert c["id"] == "rtt50ms-loss0pct-down3-up1mbit-bufbdp"
    assert c["asked"]["buffer_ms"] == 50.0 and c["link"]["relay"]["queue"] == {"limit_packets": 4096, "limit_ms": 50.0}
    (run,) = m["runs"]
    assert run["decode"]["ok"]
    me, lc = run["link_measured"], run["link_check"]
    assert me["rtt_source"] == "tcp" and abs(me["rtt_ms"] - 50) <= 5, me
    assert lc["rtt"] == "ok" and lc["down"] in ("ok", "unsaturated") and lc["buffer"] in ("ok", "unfilled"), lc
    assert me["down_mbit"] <= 3.3 and me["queueing"]["max_ms"] <= 50 * 1.1 + 2, me
    # the relay's own view of the load: it queued no more than 50 ms downlink
    assert me["relay"]["s2c"]["max_wait_ms"] <= 50.0 and me["relay"]["s2c"]["offered"] > 100
    cap = out / run["dir"] / run["files"]["capture"]
    irtt = subprocess.run(["tshark", "-r", str(cap), "-Y", "tcp.analysis.initial_rtt", "-T", "fields",
                           "-e", "tcp.analysis.initial_rtt"], capture_output=True, text=True, timeout=120).stdout.split()
    # tshark's iRTT runs to the client's ACK of the SYN/ACK: ours (to the SYN/ACK) plus the client's
    # own turnaround, well under a millisecond
    assert irtt and 0 <= min(float(x) for x in irtt) * 1000 - me["rtt_ms"] <= 1.0, (irtt, me)
    # tshark's I/O statistics in 50 ms bins: our sliding 1 s window lies between the busiest
    # 20 consecutive bins and the busiest 21 (a window cuts at most one bin more)
    io = subprocess.run(["tshark", "-r", str(cap), "-q", "-z", f"io,stat,0.05,ip.src=={SERVER}"],
                        capture_output=True, text=True, timeout=120).stdout
    # rows like "| 0.00 <> 0.05 |  12 |  18000 |": frames and bytes of the filter's column (frame
    # bytes = IP bytes on a raw-IP capture)
    bins = [int(ln.split("|")[-2].strip()) for ln in io.splitlines() if "<>" in ln]
    assert len(bins) >= 20, io[-2000:]

    def slide(k):
        return max(sum(bins[i:i + k]) for i in range(len(bins) - k + 1)) * 8 / 1e6

    best = slide(20)
    assert slide(20) - 1e-4 <= me["down_mbit"] <= slide(21) + 1e-4, (slide(20), slide(21), me)  # (rounded to 4 places)
    assert best > 2.0   # the page (349 kB) keeps a 3 Mbit/s link busy for a second


def test_server_think_time_is_first_response_byte_minus_request_end_minus_rtt():
    from types import SimpleNamespace as E

    from wirefall.lab.measure import server_time
    from wirefall.lab.run import render_summary, summarise

    ex = [E(pushed=False, request_start=1.000, request_end=1.001, response_start=1.061),   # "/": 60 ms − 50 = 10
          E(pushed=False, request_start=1.100, request_end=1.100, response_start=1.180),   # 30 ms
          E(pushed=False, request_start=1.101, request_end=1.102, response_start=1.172),   # 20 ms
          E(pushed=True, request_start=1.05, request_end=1.05, response_start=1.06),       # a push: no request
          E(pushed=False, request_start=1.2, request_end=None, response_start=None)]       # no response
    st = server_time(ex, 50.0)
    assert st == {"think_first_ms": pytest.approx(10.0), "think_median_ms": pytest.approx(20.0), "requests": 3}
    assert server_time(ex, None)["think_first_ms"] is None
    # in the lab's table, per protocol, with the QUIC handshake's excess
    from test_lab import _figures

    runs = [{"condition": "c", "protocol": p, "run": 1, "figures": _figures(1.0), "server_time": st,
             "link_check": {"ok": True, **({"server_handshake_ms": 42.0} if p == "h3" else {})}} for p in ("h1", "h3")]
    s = summarise([{"id": "c", "rtt_ms": 50, "loss_pct": 0}], runs, ["h1", "h3"], "h1")
    pr = s["conditions"][0]["protocols"]
    assert pr["h1"]["median"]["think_first_ms"] == pytest.approx(10.0) and pr["h1"]["n"]["server_handshake_ms"] == 0
    assert pr["h3"]["median"]["server_handshake_ms"] == 42.0
    text = render_summary(s)
    assert any(ln.startswith("server think, first request (ms)") and "10.0" in ln for ln in text.splitlines())
    assert any(ln.startswith("QUIC server handshake beyond RTT (ms)") and "42.0" in ln for ln in text.splitlines())


def test_push_paths_and_pushed_responses_count_only_where_asked():
    from types import SimpleNamespace as E

    from wirefall.lab.run import LabError, check_requests, push_paths

    page = {"requests": ["/", "/css/a.css", "/js/b.js", "/img/c.jpg", "/data.json"]}
    assert push_paths("css,js", page) == ["/css/a.css", "/js/b.js"]
    assert push_paths("/img/c.jpg,images,/nope.css", page) == ["/img/c.jpg"]
    assert push_paths(None, page) == []
    with pytest.raises(LabError):
        push_paths("fonts", page)
    ex = [E(url="https://h/", pushed=False, status=200), E(url="https://h/css/a.css", pushed=True, status=200),
          E(url="https://h/js/b.js", pushed=False, status=200), E(url="https://h/img/c.jpg", pushed=True, status=200),
          E(url="https://h/data.json", pushed=False, status=200)]
    an = E(exchanges=ex)
    d = check_requests(an, page["requests"], ["/css/a.css"])
    assert d["pushed"] == 1 and d["missing"] == ["/img/c.jpg"] and not d["ok"]   # c.jpg was not asked to be pushed
    d = check_requests(an, page["requests"], ["/css/a.css", "/img/c.jpg"])
    assert d["ok"] and d["pushed"] == 2 and d["status_200"] == 5
    assert check_requests(an, page["requests"])["missing"] == ["/css/a.css", "/img/c.jpg"]
