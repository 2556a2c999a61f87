"""A qlog's upload: the request's end and body (review 31, finding 3).

Before 2026-12-05 the qlog reader took the first STREAM frame the client sent on a request
stream as the request's end and counted only the server's DATA frames, so a POST read
``request_end == request_start``, ``request_body_bytes`` null and a TTFB that held the upload.

Outside truth:
- sample_captures/quic/aioquic-post.*: a real implementation's qlogs (aioquic 1.7.2's
  ``QuicFileLogger``, client and server vantage points) of a POST of a known 30,000-byte body,
  with the client's own record (.client.json: the body it sent, and the server's answer naming
  the bytes it received and their sha256) and a capture of the same run read by tshark
  (scripts/qlog/aioquic_post.py).  The qlogs' own events are read with nothing but ``json``.
- pageload-amazon: wirefall's qlog export of Chrome's load (secondary: our own encoder), against
  tshark's packet times and Chrome's NetLog (UPLOAD_DATA_STREAM_INIT ``total_size``).
"""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from conftest import SAMPLES, run_tool, shared, unpack_amazon

from wirefall.analyzer.browserlog import qlog

POST = SAMPLES / "quic" / "aioquic-post"


def _file(suffix: str) -> Path:
    return Path(f"{POST}{suffix}")


def _client() -> dict:
    return json.loads(_file(".client.json").read_text())


def _qlog_truth(path: Path, client_side: bool) -> dict[int, dict]:
    """Per request stream, from the qlog's raw events: the method, the time (s) of the first
    packet carrying the client's STREAM frame with fin, and the client's DATA frame lengths."""
    tr = json.loads(path.read_text())["traces"][0]
    out: dict[int, dict] = {}
    for e in tr["events"]:
        d, t = e["data"], e["time"] / 1000.0  # aioquic: absolute epoch milliseconds
        if e["name"] == ("transport:packet_sent" if client_side else "transport:packet_received"):
            for f in d.get("frames", ()):
                if f["frame_type"] == "stream" and f["stream_id"] % 4 == 0 and f.get("fin"):
                    out.setdefault(f["stream_id"], {}).setdefault("fin", t)
        elif e["name"] == ("http:frame_created" if client_side else "http:frame_parsed") and d["stream_id"] % 4 == 0:
            s = out.setdefault(d["stream_id"], {})
            if d["frame"]["frame_type"] == "headers":
                s["method"] = dict((h["name"], h["value"]) for h in d["frame"]["headers"])[":method"]
            elif d["frame"]["frame_type"] == "data":
                s.setdefault("data", []).append(d["length"])
    return out


def _tshark_stream_frames() -> list[tuple[float, int, int, bool]]:
    """(time, UDP source port, stream id, fin) of every QUIC STREAM frame on a bidirectional
    stream in the capture of the same run, as tshark decrypts it."""
    out = run_tool("tshark", "-r", str(_file(".pcap")), "-o", f"tls.keylog_file:{_file('.keys')}", "-Y", "quic.stream.stream_id",
                   "-T", "fields", "-E", "separator=|", "-e", "frame.time_epoch", "-e", "udp.srcport",
                   "-e", "quic.stream.stream_id", "-e", "quic.stream.fin")
    rows = []
    for ln in out.splitlines():
        t, port, sids, fins = ln.split("|")
        for sid, fin in zip(sids.split(","), fins.split(",")):
            if int(sid) % 4 == 0:
                rows.append((float(t), int(port), int(sid), fin in ("1", "True")))
    return rows


def test_client_qlog_post_end_and_body_are_the_clients_own():
    cl = _client()
    post = next(r for r in cl["responses"] if r["method"] == "POST")
    body = cl["body_bytes"]
    # the server's own record: it received every byte the client sent
    got = json.loads(post["text"])
    assert (got["received"], got["sha256"]) == (body, cl["body_sha256"]) and body == 30_000
    truth = _qlog_truth(_file(".qlog"), client_side=True)
    log = qlog.read(str(_file(".qlog")))
    reqs = {r.stream_id: r for r in log.requests}
    assert set(reqs) == set(truth) == {r["stream_id"] for r in cl["responses"]}
    for sid, r in reqs.items():
        assert r.method == truth[sid]["method"]
        assert r.send_end == pytest.approx(truth[sid]["fin"], abs=1e-6), sid  # the fin-bearing STREAM frame's packet
    r = reqs[post["stream_id"]]
    assert sum(truth[post["stream_id"]]["data"]) == body == r.request_body_bytes  # (old: None)
    assert r.send_end - r.send_start > 0.001  # the upload took packets (old: send_end == send_start's packet)
    assert r.response_body_bytes == post["bytes"]
    # the GET sent no body: none counted
    get = reqs[next(x["stream_id"] for x in cl["responses"] if x["method"] == "GET")]
    assert get.request_body_bytes is None


def test_server_qlog_post_roles_turned():
    """The server's qlog of the same run: the client's fin is a packet the server received,
    its DATA frames are ones the server parsed."""
    cl = _client()
    truth = _qlog_truth(_file(".server.qlog"), client_side=False)
    log = qlog.read(str(_file(".server.qlog")))
    reqs = {r.stream_id: r for r in log.requests}
    post = next(r for r in cl["responses"] if r["method"] == "POST")
    r = reqs[post["stream_id"]]
    assert r.method == "POST"
    assert r.send_end == pytest.approx(truth[post["stream_id"]]["fin"], abs=1e-6)
    assert r.request_body_bytes == cl["body_bytes"] == json.loads(post["text"])["received"]


def test_client_qlog_post_against_tshark():
    """The qlog's request end and TTFB against the capture of the same run (tshark's packet
    times; the qlog's clock and tcpdump's are the same host's)."""
    cl = _client()
    post = next(r for r in cl["responses"] if r["method"] == "POST")
    sid = post["stream_id"]
    frames = _tshark_stream_frames()
    client_port = next(p for _, p, s, _ in frames if s == sid and p != cl["port"])
    fin = min(t for t, p, s, f in frames if s == sid and p == client_port and f)
    first = min(t for t, p, s, _ in frames if s == sid and p == client_port)
    answer = min(t for t, p, s, _ in frames if s == sid and p == cl["port"])
    assert fin - first > 0.001  # the body took many packets on the wire
    r = next(x for x in qlog.read(str(_file(".qlog"))).requests if x.stream_id == sid)
    assert r.send_end == pytest.approx(fin, abs=0.002)
    ttfb, wire_ttfb = r.response_start - r.send_end, answer - fin
    assert ttfb == pytest.approx(wire_ttfb, abs=0.002)  # (old: the upload's time added)
    assert ttfb >= cl["server_delay_ms"] / 1000.0  # the server answered after its think time, from the body's end


def test_client_qlog_overlay_request_end_matches_wire():
    """Laid over its capture, the qlog's request end is the wire's (the comparison's
    ``request_end`` offset), within the clocks' noise."""
    from wirefall.analyzer.pipeline import analyze
    from wirefall.analyzer.browserlog import overlay

    an = analyze(str(_file(".pcap")), keylogs=[str(_file(".keys"))])
    overlay(an, str(_file(".qlog")))
    post = next(e for e in an.exchanges if e.method == "POST")
    assert post.request_body_bytes == _client()["body_bytes"]
    off = post.browser["offsets"]["request_end"]
    assert abs(off) < 0.002, off  # (old: −18.6 ms, the upload's length)


def test_later_draft_form_same_post(tmp_path):
    """The same aioquic events written as the later drafts lay them out (JSON-SEQ; ``quic:`` and
    ``http3:`` names; a DATA frame's length only in ``frame.raw.payload_length``; a STREAM
    frame's only in ``raw.length``, offset 0 and fin false left out as their defaults): the
    same request end and body as aioquic's own qlog 0.3 form."""
    d = json.loads(_file(".qlog").read_text())
    tr = d["traces"][0]
    recs = [{"file_schema": "urn:ietf:params:qlog:file:sequential", "serialization_format": "application/qlog+json-seq",
             "trace": {"vantage_point": tr["vantage_point"], "common_fields": {"group_id": tr["common_fields"]["ODCID"]}}}]
    for e in tr["events"]:
        cat, _, ev = e["name"].partition(":")
        data = json.loads(json.dumps(e["data"]))
        if cat == "transport":
            cat = "quic"
            for f in data.get("frames", ()):
                if f["frame_type"] == "stream":
                    f["raw"] = {"length": f.pop("length")}
                    if not f["offset"]:
                        del f["offset"]
                    if not f["fin"]:
                        del f["fin"]
        elif cat == "http":
            cat = "http3"
            if data.get("frame", {}).get("frame_type") == "data":
                data["frame"]["raw"] = {"payload_length": data.pop("length")}
        recs.append({"time": e["time"], "name": f"{cat}:{ev}", "data": data})
    p = tmp_path / "later.sqlog"
    p.write_text("".join("\x1e" + json.dumps(r) + "\n" for r in recs))
    want = {r.stream_id: (r.method, r.send_start, r.send_end, r.response_start, r.request_body_bytes, r.response_body_bytes)
            for r in qlog.read(str(_file(".qlog"))).requests}
    got = {r.stream_id: (r.method, r.send_start, r.send_end, r.response_start, r.request_body_bytes, r.response_body_bytes)
           for r in qlog.read(str(p)).requests}
    assert got == want and want[4][4] == _client()["body_bytes"]


def test_amazon_export_roundtrip_post(tmp_path):
    """Secondary: wirefall's own qlog export of the amazon load read back: mp_verify's two
    POSTs end at tshark's fin-bearing packet (498, 544) and carry the NetLog's upload size."""
    from wirefall.analyzer import export as ex
    from wirefall.analyzer.pipeline import analyze

    cap, keys = unpack_amazon(tmp_path)
    netlog = json.loads(gzip.decompress(shared("pageload-amazon/amazon1_netlog.json.gz").read_bytes()))
    types = {v: k for k, v in netlog["constants"]["logEventTypes"].items()}
    sizes = sorted(e["params"]["total_size"] for e in netlog["events"]
                   if types.get(e["type"]) == "UPLOAD_DATA_STREAM_INIT" and e.get("params", {}).get("total_size"))
    out = run_tool("tshark", "-r", str(cap), "-o", f"tls.keylog_file:{keys}", "-Y", "quic.stream.fin == 1",
                   "-T", "fields", "-E", "separator=|", "-e", "frame.time_epoch", "-e", "udp.dstport",
                   "-e", "quic.stream.stream_id", "-e", "quic.stream.fin")
    fin_sent: dict[int, float] = {}  # stream -> the client's fin-bearing packet (to port 443)
    answer: dict[int, float] = {}
    for ln in out.splitlines():
        t, dport, sids, fins = ln.split("|")
        for sid, fin in zip(sids.split(","), fins.split(",")):
            if fin in ("1", "True"):
                (fin_sent if dport == "443" else answer).setdefault(int(sid), float(t))
    an = analyze(str(cap), keylogs=[str(keys)])
    q = tmp_path / "amz.qlog"
    ex.export(an, str(q))
    posts = [r for r in qlog.read(str(q)).requests if r.method == "POST"]
    assert len(posts) == 2  # mp_verify twice, on streams 4 and 8 of the awswaf connection (the third upload is HTTP/2)
    for r in posts:
        assert r.send_end == pytest.approx(fin_sent[r.stream_id], abs=1e-5)
        assert r.response_start - r.send_end == pytest.approx(answer[r.stream_id] - fin_sent[r.stream_id], abs=1e-4)
    assert sorted(r.request_body_bytes for r in posts) == sizes[:2] == [9133, 9194]
