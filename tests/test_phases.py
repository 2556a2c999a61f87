"""Wire-true request/response times and waterfall phases (issue 20 item 3, issue 18 #5 part).

Truth: tshark.  For each HTTP/2 HEADERS, SPDY SYN_STREAM/SYN_REPLY and HTTP/1 head inside TLS,
the packet of the first TCP segment of the TLS record that holds its first byte (tshark's
``tcp.segment`` list of the reassembled record, or the frame itself when the record is in one
segment) is wirefall's ``request_start``/``response_start`` packet; for HTTP/3 the first packet
carrying the stream's byte 0 in a STREAM frame.  DNS lookups come from tshark's answers.  The
record flood is built by ``scripts/hostile/tls_inputs.py``.
"""
from __future__ import annotations

import gzip
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from wirefall.analyzer import export, jsonout, waterfall
from wirefall.analyzer.pipeline import analyze

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "sample_captures" / "page"
TLS = ROOT / "sample_captures" / "tls"
AMAZON = ROOT.parent / "shared" / "captures" / "pageload-amazon"

pytestmark = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")


def _amazon(tmp_path_factory=None) -> tuple[Path, Path]:
    cap = AMAZON / "amazon1.cap.gz"
    if not cap.exists():
        pytest.skip("../shared/captures/pageload-amazon not present")
    keys = Path(os.environ.get("TMPDIR", "/tmp")) / f"wirefall-amazon-{os.getuid()}.keys"
    if not keys.exists():
        keys.write_bytes(gzip.decompress((AMAZON / "amazon1.key_log.txt.gz").read_bytes()))
    return cap, keys


# ------------------------------------------------------------------------------- tshark


def _fields(el, name):
    return [f for f in el.iter("field") if f.get("name") == name]


def _pdml(cap: Path, keys: Path, extra=()):
    args = ["tshark", "-r", str(cap), "-o", f"tls.keylog_file:{keys}", "-o", "tcp.reassemble_out_of_order:TRUE", *extra, "-T", "pdml"]
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env={"LC_ALL": "C", "PATH": "/usr/bin:/bin"})
    try:
        for _, el in ET.iterparse(p.stdout, events=("end",)):
            if el.tag == "packet":
                yield el
                el.clear()
    finally:
        p.stdout.close()
        p.wait(timeout=300)


def _frame_number(protos) -> int:
    fr = next(p for p in protos if p.get("name") == "frame")
    return int(_fields(fr, "frame.number")[0].get("show"))


def tshark_heads(cap: Path, keys: Path, proto: str) -> dict[tuple, list[tuple[int, int | None]]]:
    """{(src port, dst port, stream id or None, kind): [(frame shown in, first packet of its
    first byte's record or None when tshark does not tell which record), ...]} in file order.

    tshark's tree of a packet: [the reassembled record's TCP segments], the ``tls`` tree of
    that record (data source "reassembled", pos 0), the protocol trees of its messages, then
    the ``tls`` tree of the records that start in this packet and their messages.  A message
    reassembled across records is announced by a ``tls.segment`` list: its first byte is in
    the record that ended in the first listed frame."""
    info: dict[int, tuple[list[int] | None, bool]] = {}
    out: dict[tuple, list] = {}
    extra = ("-o", "http.desegment_body:FALSE") if proto == "http" else ()  # a head where it ends, not with its body
    for pk in _pdml(cap, keys, extra):
        protos = list(pk)
        fnum = _frame_number(protos)
        tcp = next((p for p in protos if p.get("name") == "tcp"), None)
        if tcp is None:
            continue
        sport, dport = (int(_fields(tcp, n)[0].get("show")) for n in ("tcp.srcport", "tcp.dstport"))
        segs = None
        cur, ntls, reassembled_only = fnum, 0, False
        wrappers: list[tuple[int, int]] = []  # (bytes, first frame) of messages reassembled across records
        for p in protos:
            name = p.get("name")
            if name == "fake-field-wrapper":
                ts = _fields(p, "tcp.segment")
                if ts:
                    segs = [int(f.get("show")) for f in ts]
                tl = _fields(p, "tls.segment")
                if tl:
                    wrappers.append((sum(int(f.get("size")) for f in tl), int(tl[0].get("show"))))
            elif name == "tls":
                ntls += 1
                reassembled_only = p.get("pos") == "0" and bool(segs)
                cur = segs[0] if reassembled_only else fnum
            elif name == proto:
                for st in (_fields(p, "http2.stream") if proto == "http2" else [p]):
                    if proto == "http2":
                        t, sid = _fields(st, "http2.type"), _fields(st, "http2.streamid")
                        if not t or t[0].get("show") not in ("1", "5"):
                            continue
                        kind, sid = {"1": "HEADERS", "5": "PUSH_PROMISE"}[t[0].get("show")], int(sid[0].get("show"))
                    elif proto == "spdy":
                        t, sid = _fields(p, "spdy.type"), _fields(p, "spdy.streamid")
                        if not t or t[0].get("show") not in ("1", "2") or not sid:
                            continue
                        kind, sid = {"1": "SYN_STREAM", "2": "SYN_REPLY"}[t[0].get("show")], int(sid[0].get("show"))
                    else:
                        if not (_fields(p, "http.request") or _fields(p, "http.response")):
                            continue
                        kind, sid = ("request" if _fields(p, "http.request") else "response"), None
                    first = cur
                    # an HTTP/2 or SPDY frame reassembled from records is as long as the listed
                    # parts; an HTTP/1 head is followed by its reassembled body
                    m = next((w for w in wrappers if p.get("pos") == "0" and (proto == "http" or w[0] == int(p.get("size")))), None)
                    if m is not None:
                        wrappers.remove(m)
                        if m[1] == fnum:
                            first = None  # which record of this frame: not told
                        else:
                            s, only = info.get(m[1], (None, False))
                            first = s[0] if s and only else m[1]
                    out.setdefault((sport, dport, sid, kind), []).append((fnum, first))
        info[fnum] = (segs, reassembled_only and ntls == 1)
    return out


def tshark_quic_stream_starts(cap: Path, keys: Path) -> dict[tuple[int, int, int], int]:
    """{(udp src port, dst port, stream id): first packet carrying the stream's byte 0}."""
    out: dict[tuple[int, int, int], int] = {}
    for pk in _pdml(cap, keys):
        protos = list(pk)
        udp = next((p for p in protos if p.get("name") == "udp"), None)
        if udp is None:
            continue
        fnum = _frame_number(protos)
        sport, dport = (int(_fields(udp, n)[0].get("show")) for n in ("udp.srcport", "udp.dstport"))
        for q in protos:
            if q.get("name") != "quic":
                continue
            for f in _fields(q, "quic.frame"):
                ft = _fields(f, "quic.frame_type")
                if not ft or not 8 <= int(ft[0].get("show")) <= 15:  # STREAM
                    continue
                off = _fields(f, "quic.stream.offset")  # (absent when the OFF bit is clear: offset 0)
                if not off or int(off[0].get("show")) == 0:
                    out.setdefault((sport, dport, int(_fields(f, "quic.stream.stream_id")[0].get("show"))), fnum)
    return out


# --------------------------------------------------------------------------- TTFB vs tshark

KINDS = {"http2": ("HEADERS", "HEADERS"), "spdy": ("SYN_STREAM", "SYN_REPLY"), "http": ("request", "response")}
TLS_SAMPLES = [
    ("page-h2", PAGE / "page-h2.pcapng", PAGE / "page-h2.keys", "http2", 20),
    ("page-h1", PAGE / "page-h1.pcapng", PAGE / "page-h1.keys", "http", 20),
    ("page-spdy", PAGE / "page-spdy.pcapng", PAGE / "page-spdy.keys", "spdy", 20),
    ("curl_http11", TLS / "curl_http11.pcap", TLS / "curl_http11.keys", "http", 2),
    ("amazon-h2", None, None, "http2", 15),
]


@pytest.mark.parametrize("name,cap,keys,proto,least", TLS_SAMPLES, ids=[s[0] for s in TLS_SAMPLES])
def test_tls_request_and_response_start_are_the_first_segment_of_the_record(name, cap, keys, proto, least):
    if cap is None:
        cap, keys = _amazon()
    an = analyze(str(cap), keylogs=[str(keys)])
    truth = tshark_heads(cap, keys, proto)
    conns = {c.id: c for c in an.connections}
    req_kind, resp_kind = KINDS[proto]
    checked = earlier = unknown = 0
    per_conn: dict[int, int] = {}
    for e in an.exchanges:
        c = conns[e.connection]
        if c.transport != "tcp":
            continue
        cp, sp = c.client[1], c.server[1]
        if proto == "http":  # HTTP/1: the k-th request and response of the connection
            k = per_conn[e.connection] = per_conn.get(e.connection, -1) + 1
            rq = truth.get((cp, sp, None, req_kind), [])[k:k + 1]
            rs = truth.get((sp, cp, None, resp_kind), [])[k:k + 1]
        else:
            rq = truth.get((cp, sp, e.stream_id, req_kind))
            rs = truth.get((sp, cp, e.stream_id, resp_kind))
        for what, lst, pkt, tm in (("request", rq, e.request_start_packet, e.request_start),
                                   ("response", rs, e.response_start_packet, e.response_start)):
            if e.pushed and what == "request" or not lst:
                continue
            shown, first = lst[0]
            if first is None:
                unknown += 1
                assert pkt <= shown
                continue
            assert pkt == first, (name, e.id, e.stream_id, what, "tshark shows it in", shown)
            assert tm == an.time(pkt)
            earlier += first < shown
            checked += 1
        if proto == "http2" and rs and e.response_headers_end_packet is not None:
            # the headers became readable where tshark shows them (no 1xx in these loads)
            assert e.response_headers_end_packet == rs[0][0], (name, e.id)
            assert e.response_headers_end >= e.response_start
    assert checked >= least and unknown <= 1, (checked, unknown)
    if name in ("page-h2", "amazon-h2"):
        assert earlier >= 1  # records spanning segments are in these loads: the test can fail


@pytest.mark.parametrize("name", ["page-h3", "amazon-h3"])
def test_h3_start_is_the_packet_of_the_stream_frame_with_the_first_byte(name):
    cap, keys = (PAGE / "page-h3.pcapng", PAGE / "page-h3.keys") if name == "page-h3" else _amazon()
    an = analyze(str(cap), keylogs=[str(keys)])
    truth = tshark_quic_stream_starts(cap, keys)
    conns = {c.id: c for c in an.connections}
    checked = 0
    for e in an.exchanges:
        c = conns[e.connection]
        if c.transport != "udp" or e.pushed:
            continue
        for key, pkt in (((c.client[1], c.server[1], e.stream_id), e.request_start_packet),
                         ((c.server[1], c.client[1], e.stream_id), e.response_start_packet)):
            assert key in truth, (e.id, key)
            assert pkt == truth[key], (name, e.id, e.stream_id)
            checked += 1
        assert e.response_headers_end_packet >= e.response_start_packet
    assert checked >= (20 if name == "page-h3" else 12)


# --------------------------------------------------------------------- phases add up

PAGE_LOADS = ["page-h1", "page-h1c", "page-h2", "page-h2c", "page-h3", "page-spdy", "amazon"]


def _load(name):
    if name == "amazon":
        cap, keys = _amazon()
        return cap, keys, analyze(str(cap), keylogs=[str(keys)])
    cap, keys = PAGE / f"{name}.pcapng", PAGE / f"{name}.keys"
    return cap, (keys if keys.exists() else None), analyze(str(cap), keylogs=[str(keys)] if keys.exists() else None)


@pytest.mark.parametrize("name", PAGE_LOADS)
def test_every_request_phases_add_up_to_its_total_in_json_and_har(name):
    _, _, an = _load(name)
    ph = jsonout.phases_dicts(an)
    exs = {e.id: e for e in an.exchanges}
    assert len(ph) == sum(1 for e in an.exchanges if e.request_start is not None or e.response_start is not None) > 0
    blocked = 0
    for eid, d in ph.items():
        e = exs[eid]
        parts = [d[n] for n in waterfall.PHASES if d[n] is not None]
        assert all(p >= 0 for p in parts)
        assert sum(parts) == pytest.approx(d["total"], abs=1e-9), (eid, d)
        assert d["total"] == pytest.approx(d["end"] - d["start"], abs=1e-6)
        # the row holds the exchange's wire times; waiting ends at the first response byte's packet
        assert d["start"] <= min(t for t in (e.request_start, e.response_start) if t is not None) + 1e-9
        assert d["end"] >= max(t for t in (e.response_end, e.request_end, e.response_start) if t is not None) - 1e-9
        blocked += d["blocked"] is not None
    wf = waterfall.build(an)
    for r in wf.rows:  # sequential and contiguous
        assert all(a <= b for _, a, b in r.phases)
        assert all(r.phases[i][2] == r.phases[i + 1][1] for i in range(len(r.phases) - 1)), r.phases
        assert ph[r.exchange]["start"] == r.start and ph[r.exchange]["end"] == r.end
        e = exs[r.exchange]
        if r.phase("wait") and e.response_start is not None:
            assert r.phase("wait")[1] == e.response_start
    h = export.har(an)
    idle = 0
    for en in h["log"]["entries"]:
        t = en["timings"]
        parts = [t[k] for k in ("blocked", "dns", "connect", "send", "wait", "receive") if t[k] >= 0]
        assert sum(parts) == pytest.approx(en["time"], abs=1e-6), (en["_exchange"], t)
        p = ph[en["_exchange"]]
        if (p["idle"] or 0) >= waterfall.PRECONNECT_IDLE:
            # a request sent long after its connection was ready: the entry is the request's,
            # from its first byte on the wire, without the connection's set-up (DevTools' preconnect)
            row = next(r for r in wf.rows if r.exchange == en["_exchange"])
            after = row.phases[[n for n, _a, _b in row.phases].index("idle") + 1][1]
            assert en["time"] == pytest.approx((p["end"] - after) * 1000, abs=2e-3)
            assert t["dns"] == t["connect"] == t["ssl"] == -1
            idle += 1
        else:
            assert en["time"] == pytest.approx(p["total"] * 1000, abs=1e-6)
        if t["ssl"] >= 0:
            assert t["connect"] >= t["ssl"]  # HAR 1.2: ssl is included in connect
        for k in ("send", "wait", "receive"):
            assert t[k] >= 0
    if name == "amazon":
        assert blocked >= 3  # stalls in a real load (DNS answer → SYN)
        assert idle >= 1  # www.amazon.com/ over h3: the connection ready 196 ms before the request
    if name == "page-h1":
        assert idle == 1  # css/theme.css on a connection Chromium opened 243 ms before it


def test_requests_json_carries_phases_and_headers_end():
    cmd = [sys.executable, "-m", "wirefall", "requests", str(PAGE / "page-h2.pcapng"), "--json", "--keylog", str(PAGE / "page-h2.keys")]
    r = subprocess.run(cmd, check=False, capture_output=True, text=True, cwd=ROOT, timeout=300, env=dict(os.environ, SSLKEYLOGFILE="", PYTHONPATH=str(ROOT)))
    assert r.returncode == 0, r.stderr
    reqs = json.loads(r.stdout)
    assert reqs
    for d in reqs:
        ph = d["phases"]
        assert sum(ph[n] for n in waterfall.PHASES if ph[n] is not None) == pytest.approx(ph["total"], abs=1e-9)
        assert ph["wait"] == pytest.approx(d["response_start"] - d["request_end"], abs=2e-6)
        assert d["response_headers_end_packet"] >= d["response_start_packet"]


# ------------------------------------------------------------------------------- DNS


def _tshark_dns(cap: Path) -> dict[int, tuple[str, float, set[str]]]:
    out = subprocess.run(["tshark", "-r", str(cap), "-Y", "dns.flags.response == 1", "-T", "fields", "-E", "separator=\t",
                          "-e", "frame.number", "-e", "frame.time_epoch", "-e", "dns.qry.name", "-e", "dns.a", "-e", "dns.aaaa"],
                         check=False, capture_output=True, text=True, timeout=300, env={"LC_ALL": "C", "PATH": "/usr/bin:/bin"}).stdout
    res = {}
    for line in out.splitlines():
        f = (line.split("\t") + [""] * 5)[:5]
        res[int(f[0])] = (f[2].lower(), float(f[1]), {a for a in (f[3] + "," + f[4]).split(",") if a})
    return res


def test_dns_is_charged_only_to_the_connection_that_used_the_answer():
    cap, keys = _amazon()
    an = analyze(str(cap), keylogs=[str(keys)])
    wf = waterfall.build(an)
    truth = _tshark_dns(cap)
    conns = {c.id: c for c in an.connections}
    host = lambda c: (c.tls and c.tls.sni) or (c.quic and c.quic.sni)
    charged = {}
    for r in wf.rows:
        ph = r.phase("dns")
        if ph is None:
            continue
        assert r.first_of_connection
        c = conns[r.connection]
        mine = [x for x in wf.dns if x.used_by == c.id]
        d = max((x for x in mine if c.server[0] in x.addresses), key=lambda x: x.response_time)
        name, t, addrs = truth[d.response_packet]
        # the queried name is the connection's, the answer holds its server address, and it
        # came before the connection's first packet
        assert name == host(c).lower() and c.server[0] in addrs and t <= c.connect_start
        # the phase ends at the lookup's last answer before the connection (its other queries:
        # the name's and its CNAME chain's; tests/test_waterfall_dns_netlog.py), never before
        # the address's
        end = max(truth[x.response_packet][1] for x in mine)
        assert t <= end <= c.connect_start and ph[1] == pytest.approx(end, abs=1e-6)
        charged[c.id] = (name, ph[0])
    # one lookup (the queries for a name sent together) is charged once, to one connection
    assert len(set(charged.values())) == len(charged) >= 3
    # and no first row lacks a lookup that fits it and that no other connection used first
    used_names = {n for n, _ in charged.values()}
    for r in wf.rows:
        c = conns[r.connection]
        if not r.first_of_connection or c.id in charged or not host(c):
            continue
        fits = [p for p, (n, t, a) in truth.items() if n == host(c).lower() and c.server[0] in a and t <= c.connect_start]
        assert not fits or host(c).lower() in used_names, (c.id, fits)
    # the situation of the issue: a lookup answered at the start of the load, whose answer a
    # QUIC connection opened 1.3 s later also fits, is not charged to that connection again
    seen_late = 0
    for c in an.connections:
        row = next((r for r in wf.rows if r.connection == c.id and r.first_of_connection), None)
        if row is None or not host(c):
            continue
        earlier = [x for x in an.connections if x.id in charged and x.id != c.id and host(x) == host(c)
                   and x.connect_start < c.connect_start]
        if not earlier:
            continue
        if row.phase("dns") is not None:  # only a lookup made after the earlier connection's
            assert charged[c.id][1] > max(charged[x.id][1] for x in earlier), c.id
        elif c.transport == "udp" and c.connect_start - max(charged[x.id][1] for x in earlier) > 1.0:
            seen_late += 1
    assert seen_late >= 1


# ---------------------------------------------------------------- flood of tiny records


def _hostile():
    spec = importlib.util.spec_from_file_location("tls_inputs", ROOT / "scripts" / "hostile" / "tls_inputs.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


_FLOOD_CHILD = r"""
import json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (512 << 20, 512 << 20))
from wirefall.analyzer.pipeline import analyze
from wirefall.analyzer.jsonout import frame_dict
an = analyze(sys.argv[1])
tls = [f for f in an.frames if f.protocol == "tls"]
out = json.dumps([frame_dict(f) for f in an.frames])
print(json.dumps({
    "rss_kb": int([ln for ln in open("/proc/self/status") if ln.startswith("VmHWM:")][0].split()[1]), "frames": len(an.frames), "tls_frames": len(tls),
    "records": sum((f.fields or {}).get("count", 1) for f in tls), "json_bytes": len(out),
    "aggregated": [[f.first_packet, f.packet, f.fields["count"]] for f in tls if (f.fields or {}).get("count")][:3],
    "exchanges": [[e.url, e.status, e.response_body_bytes] for e in an.exchanges],
    "tls_records": an.connections[0].tls.records,
}))
"""


def test_one_million_one_byte_records_cost_little_memory_and_output_stays_linear(tmp_path):
    n = 1_000_000
    cap = _hostile().record_flood(str(tmp_path / "flood.pcap"), n)
    size = os.path.getsize(cap)
    r = subprocess.run([sys.executable, "-c", _FLOOD_CHILD, cap], check=False, capture_output=True, text=True, timeout=300, cwd=ROOT,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert r.returncode == 0, r.stderr[-2000:]  # (a MemoryError under the 512 MB address-space limit before)
    got = json.loads(r.stdout)
    assert got["rss_kb"] < 150 << 10  # 430 MB before
    # nothing lost: every record counted (the 6 handshake records, then the flood)
    assert got["records"] == got["tls_records"] == n + 6
    assert got["tls_frames"] < 5000 and got["json_bytes"] < size  # output linear (here smaller than the input)
    first, last, count = got["aggregated"][0]
    assert first < last and count > 1000
    # the HTTP/1 exchange after the flood is intact
    assert got["exchanges"] == [["http://example.test/after-the-flood", 200, 5]]
