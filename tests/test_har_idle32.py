"""A HAR entry's connection set-up is where the wire had it (session 32): the connection's
idle before the request's first byte is in ``send``, as Chrome DevTools' HAR has it
(HARLog.ts: ``sendStart = max(connectEnd, dnsEnd, blockedStart)``), and ``_send_idle`` says
how much.  It was in ``blocked``, which HAR viewers draw before dns and connect: amazon's first
request's TCP handshake was drawn 5.97 ms after its SYN.

The truth: tshark's time of each connection's SYN and of the client's first HTTP/2
HEADERS frame (HTTP/1: request) on it, the request's first byte."""
from __future__ import annotations

import datetime as dt
import subprocess

import pytest

from conftest import need_tool, unpack_amazon

from wirefall.analyzer import export as ex
from wirefall.analyzer.pipeline import analyze


def _iso(s: str) -> float:
    return dt.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


@pytest.mark.slow
def test_connect_and_first_byte_are_the_wires(tmp_path):
    tshark = need_tool("tshark")
    cap, keys = unpack_amazon(tmp_path)
    an = analyze(str(cap), keylogs=[str(keys)])
    har = ex.har(an)
    out = subprocess.run([tshark, "-r", str(cap), "-o", f"tls.keylog_file:{keys}", "-Y",
                          "(tcp.flags.syn == 1 && tcp.flags.ack == 0) || ((http2.type == 1 || http.request) && tcp.srcport != 443)",
                          "-T", "fields", "-e", "tcp.srcport", "-e", "frame.time_epoch", "-e", "tcp.flags.syn"],
                         capture_output=True, text=True, check=True).stdout
    syn: dict[int, float] = {}
    first_data: dict[int, float] = {}
    for ln in out.splitlines():
        port, t, s = ln.split("\t")
        if s in ("1", "True"):
            syn.setdefault(int(port), float(t))
        else:
            first_data.setdefault(int(port), float(t))
    conns = {c.id: c for c in an.connections}
    checked = idle_seen = 0
    for en in har["log"]["entries"]:
        tm = en["timings"]
        if tm["connect"] < 0 or en["_protocol"] not in ("h2", "http/1.1"):
            continue  # (a request on a connection already open, or QUIC: no SYN)
        port = int(conns[en["_connection"]].client[1])
        start = _iso(en["startedDateTime"])
        connect_start = start + (max(tm["blocked"], 0) + max(tm["dns"], 0)) / 1000
        first_byte = connect_start + (tm["connect"] + tm.get("_send_idle", 0)) / 1000
        assert connect_start == pytest.approx(syn[port], abs=2e-6), en["request"]["url"]
        assert first_byte == pytest.approx(first_data[port], abs=2e-6), en["request"]["url"]
        idle_seen += tm.get("_send_idle", 0) > 1
        checked += 1
    assert checked >= 4 and idle_seen >= 1, (checked, idle_seen)
