"""The browser's send and receive from a Chrome NetLog, and the browser-versus-wire lengths
(analyzer/browserlog/netlog.py, build.phases, build.wire_lengths, matching's ``durations``).

Outside truth: the NetLog's raw events, read here with nothing but ``json`` (the request's
upload and send events, its HTTP/2 session's frames and socket writes, its QUIC session's
STREAM frames), and tshark on the captures of the same loads.
"""
from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, SAMPLES, run_tool, shared

from wirefall.analyzer.browserlog import overlay
from wirefall.analyzer.browserlog.build import phases, wire_lengths
from wirefall.analyzer.browserlog.records import LogRequest
from wirefall.analyzer.pipeline import analyze

AMAZON = "pageload-amazon"
LOADS = [
    ("page/page-h1.pcapng", "page/page-h1.keys", "page/page-h1.netlog.json.gz"),
    ("page/page-h2.pcapng", "page/page-h2.keys", "page/page-h2.netlog.json.gz"),
    ("page/page-h3.pcapng", "page/page-h3.keys", "page/page-h3.netlog.json.gz"),
    ("quic/page-h3.pcapng", "quic/page-h3.keys", "quic/page-h3.netlog.json.gz"),
    ("page/pw-h2.pcapng", "page/pw-h2.keys", "page/pw-h2.netlog.json.gz"),
    ("quic/page-h3-late.pcapng", "quic/page-h3-late.keys", "quic/page-h3-late.netlog.json.gz"),
    ("shared:pageload-amazon/amazon1.cap.gz", "shared:pageload-amazon/amazon1.key_log.txt.gz",
     "shared:pageload-amazon/amazon1_netlog.json.gz"),
]


def _p(x: str) -> Path:
    return shared(x[7:]) if x.startswith("shared:") else SAMPLES / x


def _events(path: Path) -> list[tuple[float, str, int, int, int, dict]]:
    """(epoch seconds, event type, phase, source id, source type, params) of every event."""
    d = json.loads(gzip.decompress(path.read_bytes()))
    c = d["constants"]
    ev = {v: k for k, v in c["logEventTypes"].items()}
    off = float(c["timeTickOffset"])
    return [((int(e["time"]) + off) / 1000.0, ev.get(e["type"], ""), e.get("phase", 0), e["source"]["id"], e["source"]["type"],
             e.get("params", {})) for e in d["events"]]


def _uploads(path: Path) -> dict[int, dict]:
    """URL_REQUEST id -> what the raw events say of its upload: body size, the last
    UPLOAD_DATA_STREAM_READ end, HTTP_TRANSACTION_SEND_REQUEST's end, the fin frame its
    HTTP/2 or QUIC session sent for its stream, the socket writes of its HTTP/2 session."""
    evs = _events(path)
    out: dict[int, dict] = {}
    job_of: dict[int, int] = {}
    quic_of: dict[int, int] = {}
    stream_of: dict[int, int] = {}  # URL_REQUEST -> QUIC stream id
    for t, typ, ph, sid, _st, p in evs:
        if typ == "UPLOAD_DATA_STREAM_INIT" and ph == 2:
            out[sid] = {"size": p["total_size"], "read_end": None, "send_end": None, "fin": None, "writes": []}
        elif typ == "UPLOAD_DATA_STREAM_READ" and ph == 2 and sid in out:
            out[sid]["read_end"] = t
        elif typ == "HTTP_TRANSACTION_SEND_REQUEST" and ph == 2 and sid in out:
            out[sid]["send_end"] = t
        elif typ == "HTTP_STREAM_REQUEST_BOUND_TO_JOB":
            job_of[sid] = p["source_dependency"]["id"]
        elif typ == "HTTP_STREAM_REQUEST_BOUND_TO_QUIC_SESSION":
            quic_of[sid] = p["source_dependency"]["id"]
        elif typ == "HTTP_TRANSACTION_QUIC_SEND_REQUEST_HEADERS":
            stream_of[sid] = p["quic_stream_id"]
    h2: dict[int, tuple[int, int]] = {}  # job -> (session, stream)
    sock_of: dict[int, int] = {}
    for _t, typ, _ph, sid, _st, p in evs:
        if typ == "HTTP2_SESSION_SEND_HEADERS":
            h2[p["source_dependency"]["id"]] = (sid, p["stream_id"])
        elif typ == "HTTP2_SESSION_INITIALIZED":
            sock_of[sid] = p["source_dependency"]["id"]
    for rid, u in out.items():
        if rid in quic_of:
            key = (quic_of[rid], stream_of[rid], "QUIC_SESSION_STREAM_FRAME_SENT")
        else:
            sess, stream = h2[job_of[rid]]
            key = (sess, stream, "HTTP2_SESSION_SEND_DATA")
            u["writes"] = [(t, p["byte_count"]) for t, typ, _ph, sid, _st, p in evs
                           if sid == sock_of[sess] and typ == "SOCKET_BYTES_SENT"]
        u["fin"] = min(t for t, typ, _ph, sid, _st, p in evs
                       if sid == key[0] and typ == key[2] and p.get("stream_id") == key[1] and p.get("fin") is True)
    return out


def test_netlog_send_end_is_after_the_request_body_left_the_browser():
    """amazon's three POSTs (HTTP/2 15,977 bytes, HTTP/3 9,133 and 9,194): the browser's send
    ends after the last upload read, after the frame that ended its stream left the session
    and, over HTTP/2, after the socket write that held the whole body — the end of
    HTTP_TRANSACTION_SEND_REQUEST, or that frame's time when later; the body's size is
    UPLOAD_DATA_STREAM_INIT's, as the wire counts it."""
    d = shared(AMAZON)
    log = d / "amazon1_netlog.json.gz"
    ups = _uploads(log)
    assert sorted(u["size"] for u in ups.values()) == [9133, 9194, 15977]
    an = analyze(str(d / "amazon1.cap.gz"), keylogs=[str(d / "amazon1.key_log.txt.gz")])
    overlay(an, str(log))
    by_id = {int(e.browser["id"]): e for e in an.exchanges}
    for rid, u in ups.items():
        e = by_id[rid]
        t = e.browser["times"]
        assert t["send_end"] == max(u["send_end"], u["fin"])
        assert t["send_end"] >= u["read_end"] and t["send_end"] >= u["fin"]
        assert e.request_body_bytes == u["size"] and e.browser["phases"]["send"] <= 0.01
        if u["writes"]:  # HTTP/2: one socket write held the whole body (its TLS record: 16,015 bytes) before the send ended
            assert any(n >= u["size"] and t["send_start"] <= w <= t["send_end"] for w, n in u["writes"])


def test_netlog_post_send_is_the_browsers_and_the_wires_own_length(tmp_path):
    """The 16 KB POST to fls-na.amazon.com (exchange 15): the browser wrote it to its socket
    within 1 ms; the wire carried it over 134 ms (tshark: from the packet of its HEADERS to
    the one of its END_STREAM DATA — WebPageTest's 1 Mbps upload shaping, two segments every
    ~23 ms).  Each length is its side's own, never negative (``phases``, the exchange's
    ``phases``); ``durations.send`` is their difference, so negative; the 204's response ends
    where its stream did (HTTP2_SESSION_RECV_HEADERS with fin: the NetLog stopped before the
    beacon's request did), which gave it no end before."""
    d = shared(AMAZON)
    cap, keys, log = d / "amazon1.cap.gz", d / "amazon1.key_log.txt.gz", d / "amazon1_netlog.json.gz"
    an = analyze(str(cap), keylogs=[str(keys)])
    overlay(an, str(log))
    e = next(x for x in an.exchanges if x.url == "https://fls-na.amazon.com/1/batch/1/OE/")
    conn = an.connections[e.connection]
    plain = tmp_path / "amazon1.keys"  # (tshark reads no gzip'd key log)
    plain.write_bytes(gzip.decompress(keys.read_bytes()))
    kl = f"tls.keylog_file:{plain}"
    rows = [r.split("\t") for r in run_tool(
        "tshark", "-r", str(cap), "-o", kl, "-Y", f"ip.addr == {conn.server[0]} && tcp.port == {conn.client[1]} && http2.streamid == {e.stream_id}",
        "-T", "fields", "-e", "frame.time_epoch", "-e", "ip.src", "-e", "http2.type", "-e", "http2.flags").splitlines()]
    client = [(float(t), ty, fl) for t, src, ty, fl in rows if src == conn.client[0]]
    server = [(float(t), ty, fl) for t, src, ty, fl in rows if src == conn.server[0]]
    headers_at = next(t for t, ty, _ in client if "1" in ty.split(","))
    end_at = next(t for t, ty, fl in client if any(int(f, 16) & 1 for f in fl.split(",")))
    assert (e.request_start, e.request_end) == pytest.approx((headers_at, end_at), abs=1e-6)
    assert end_at - headers_at > 0.1  # 134 ms on the wire
    # the browser's side: the raw events
    evs = _events(log)
    rid = int(e.browser["id"])
    b_send = [t for t, typ, ph, sid, _st, _p in evs if sid == rid and typ == "HTTP_TRANSACTION_SEND_REQUEST"]
    b = e.browser
    assert (b["times"]["send_start"], b["times"]["send_end"]) == (b_send[0], b_send[-1])
    assert b["phases"]["send"] == pytest.approx(b_send[-1] - b_send[0]) and b["phases"]["send"] <= 0.002
    assert b["durations"]["send"] == pytest.approx(b["phases"]["send"] - (end_at - headers_at), abs=1e-6)
    assert b["durations"]["send"] < -0.1
    # the 204: response end where its stream ended in the NetLog; on the wire, its HEADERS with END_STREAM
    fin = [t for t, typ, _ph, _sid, _st, p in evs if typ == "HTTP2_SESSION_RECV_HEADERS" and p.get("stream_id") == e.stream_id
           and p.get("fin") is True and abs(t - b["times"]["response_start"]) < 1]
    assert e.status == 204 and b["times"]["response_end"] == fin[0] >= b["times"]["response_start"]
    assert not any(sid == rid and typ in ("HTTP_TRANSACTION_READ_BODY", "REQUEST_ALIVE") and ph == 2
                   for _t, typ, ph, sid, _st, _p in evs)  # (the request's own events never say it ended)
    resp_end = next(t for t, ty, fl in server if any(int(f, 16) & 1 for f in fl.split(",")))
    assert e.response_end == pytest.approx(resp_end, abs=1e-6)
    assert b["offsets"]["response_end"] == pytest.approx(fin[0] - resp_end, abs=1e-6)
    assert b["phases"]["receive"] == 0.0 and b["durations"]["receive"] == 0.0


def _cli(*args) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, "-m", "wirefall", *map(str, args)], capture_output=True, text=True, env=env, cwd=ROOT,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    return p


@pytest.mark.parametrize("cap,keys,log", LOADS, ids=[Path(x[2]).name for x in LOADS])
def test_every_length_is_one_sides_own_and_never_negative(cap, keys, log):
    """On every NetLog load (``requests --json``): each browser phase and each wire phase is
    ≥ 0; ``durations`` of send, wait and receive is the browser's phase minus the exchange's
    own (its ``phases``) — one definition on both sides."""
    out = json.loads(_cli("requests", _p(cap), "--keylog", _p(keys), "--netlog", _p(log), "--json").stdout)
    n = 0
    for x in out:
        b = x["browser"]
        if b is None:
            continue
        n += 1
        assert all(v is None or v >= 0 for v in b["phases"].values()), (x["url"], b["phases"])
        if b.get("not_sent"):  # (a request that never reached the network: no wire, no durations)
            assert b["durations"] is None
            continue
        for k in ("send", "wait", "receive"):
            w = x["phases"][k]
            assert w is None or w >= 0
            if b["durations"][k] is not None:
                assert b["durations"][k] == pytest.approx(b["phases"][k] - w, abs=2e-6), (x["url"], k)
    assert n >= 13


def test_phases_never_negative_when_the_response_comes_before_the_upload_ends():
    """A server that answers before the request's body is all sent (an early 413): the send
    ends where the response begins, as the wire's phases are cut; the wait is 0; none is
    negative — the browser's phases and the wire's lengths alike."""
    from wirefall.analyzer.model import Exchange

    r = LogRequest("1", start=10.0, send_start=10.001, send_end=10.300, response_start=10.100, response_end=10.120)
    ph = phases(r)
    assert ph["blocked"] == pytest.approx(0.001) and ph["send"] == pytest.approx(0.099) and ph["wait"] == 0.0
    assert ph["receive"] == pytest.approx(0.020) and all(v is None or v >= 0 for v in ph.values())
    e = Exchange(id=1, connection=0, protocol="h2")
    e.request_start, e.request_end, e.response_start, e.response_end = 10.002, 10.310, 10.101, 10.125
    wl = wire_lengths(e)
    assert wl["send"] == pytest.approx(0.099) and wl["wait"] is None and wl["receive"] == pytest.approx(0.024)


def test_netlog_quic_send_ends_with_the_fin_frame_and_bodies_are_counted():
    """page-multi-late (HTTP/3 and HTTP/2 over Chromium): a QUIC request's send ends when the
    STREAM frame with ``fin`` left the session, when that was after the transaction's
    HTTP_TRANSACTION_SEND_REQUEST ended (three script GETs: buffered at 112 ms, sent at 114
    ms); every other request's at the transaction's end.  Its POSTs' bodies
    (UPLOAD_DATA_STREAM_INIT) are the sizes the wire carried (80, 82, 84 and 302 bytes)."""
    from wirefall.analyzer.browserlog import read_log

    base = SAMPLES / "quic" / "page-multi-late"
    log = base.with_name(base.name + ".netlog.json.gz")
    evs = _events(log)
    send_end: dict[int, float] = {}
    quic: dict[int, tuple[int, int]] = {}
    sess: dict[int, int] = {}
    fin: dict[tuple[int, int], float] = {}
    for t, typ, ph, sid, _st, p in evs:
        if typ == "HTTP_TRANSACTION_SEND_REQUEST" and ph == 2:
            send_end[sid] = t
        elif typ == "HTTP_STREAM_REQUEST_BOUND_TO_QUIC_SESSION":
            sess[sid] = p["source_dependency"]["id"]
        elif typ == "HTTP_TRANSACTION_QUIC_SEND_REQUEST_HEADERS":
            quic[sid] = (sess[sid], p["quic_stream_id"])
        elif typ == "QUIC_SESSION_STREAM_FRAME_SENT" and p.get("fin") is True:
            fin.setdefault((sid, p["stream_id"]), t)
    later = 0
    for r in read_log(str(log)).requests:
        rid = int(r.id.split(".")[0])
        if not r.sent or rid not in send_end or "." in r.id:
            continue
        want = send_end[rid]
        if rid in quic and quic[rid] in fin and fin[quic[rid]] > want:
            want, later = fin[quic[rid]], later + 1
        assert r.send_end == want, r.url
    assert later >= 3
    an = analyze(str(base.with_suffix(".pcapng")), keylogs=[str(base.with_suffix(".keys"))])
    overlay(an, str(log))
    posts = [e for e in an.exchanges if e.method == "POST" and e.browser and not e.browser.get("not_sent")]  # (sent ones)
    assert sorted({e.request_body_bytes for e in posts}) == [80, 82, 84, 302] and len(posts) == 8
    rec = {r.id: r for r in read_log(str(log)).requests}
    assert all(rec[e.browser["id"]].request_body_bytes == e.request_body_bytes for e in posts)
