"""A waterfall must be true, complete or say what is missing (session s7-truth), on captures
built by ``scripts/hostile/truth_inputs.py`` (each with two normal HTTP/1.1 exchanges, which
must survive) and checked against what they hold by construction and against tshark:

- a head or chunk a per-block limit cut, a body whose decoding stopped at its cap, a head or
  body the capture ends inside: the completeness headline is never "Complete" and names it,
  ``budgets_hit`` lists the limit on the connection, one note per cause;
- (further sections below: authority of HTTP/2 requests joined mid-way, UTF-8 targets, display
  filter syntax errors against tshark's).
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, run_tool

sys.path.insert(0, str(ROOT))
from scripts.hostile import truth_inputs as ti  # noqa: E402

from wirefall.analyzer import completeness as C  # noqa: E402
from wirefall.analyzer.pipeline import analyze  # noqa: E402
from wirefall.analyzer.sessions import DEFAULT_LIMITS  # noqa: E402

CASE_CONN = 1  # the crafted connection (0 and 2: the normal exchanges)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("truth")
    return {k: ti.build(d / f"{k}.pcap", k) for k in ti.CASES}


def _normal_kept(an) -> None:
    urls = {e.url: e for e in an.exchanges}
    for p in ti.NORMAL_PATHS:
        e = urls.get(f"http://normal.rt18.example{p}")
        assert e is not None and e.status == 200 and e.response_body_bytes == 24, p


def _tshark_uris(path: Path) -> list[str]:
    out = run_tool("tshark", "-r", str(path), "-Y", "http.request", "-T", "fields", "-e", "http.request.uri")
    return [ln for ln in out.splitlines() if ln]


@pytest.mark.parametrize("kind", list(ti.CASES))
def test_what_a_limit_or_the_capture_end_cut_is_said_in_the_headline(inputs, kind):
    limit, _what = ti.CASES[kind]
    an = analyze(str(inputs[kind]), limits=ti.LIMITS)
    _normal_kept(an)
    c = C.compute(an)
    head = C.headline(an)
    assert not c.complete and head.startswith("Incomplete: "), head
    assert C.to_dict(c)["complete"] is False
    cc = c.per_connection[CASE_CONN]
    assert not cc.complete
    if limit in ("http1_header_bytes", "http1_header_count", "http1_chunk_line"):
        assert an.budgets_hit.get(limit) == [CASE_CONN], an.budgets_hit
        assert limit in cc.budgets and "budget ran out" in head
        assert any(i.kind == "budget" and i.connection == CASE_CONN and limit in i.detail for i in c.issues)
    elif limit == "body_decoded_bytes":
        e = next(e for e in an.exchanges if e.connection == CASE_CONN)
        assert e.response_body_decoded_bytes == ti.LIMITS["body_decoded_bytes"]  # counted up to the cap
        assert e.sources["response_body_decoded_bytes"] == "lower_bound"
        assert "body size only a lower bound" in head
    elif kind == "cut_head":
        assert cc.cut_short == 1 and "cut by the capture's end" in head
    elif kind == "cut_body":
        e = next(e for e in an.exchanges if e.connection == CASE_CONN)
        assert e.response_body_bytes == 2000 and e.sources["response_body_bytes"] == "lower_bound"
        assert "body size only a lower bound" in head
    # one note per cause: the crafted connection's notes name it once (a body cut by the
    # capture's end: its exchange's error says it, as before)
    notes = [str(n) for n in an.connections[CASE_CONN].notes]
    assert len(notes) == (0 if kind == "cut_body" else 1), notes


def test_the_request_tshark_decodes_but_a_limit_cut_is_counted(inputs):
    """tshark decodes the 3 KB head (no such limit): wirefall, cut at 1000 bytes, has no URL
    for it, and the headline says so — a request missing from the list is never silent."""
    path = inputs["long_head"]
    assert "/s7-long" in _tshark_uris(path)
    an = analyze(str(path), limits=ti.LIMITS)
    assert not any((e.url or "").endswith("/s7-long") for e in an.exchanges)
    c = C.compute(an)
    assert c.unknown_url == 1 and c.per_connection[CASE_CONN].budgets == ["http1_header_bytes"]
    # with the limit raised, nothing is missing
    an2 = analyze(str(path), limits=dict(ti.LIMITS, http1_header_bytes=1 << 20))
    assert C.compute(an2).complete and any((e.url or "").endswith("/s7-long") for e in an2.exchanges)


def test_header_count_limit_is_one_note_and_keeps_the_first_fields(inputs):
    path = inputs["many_fields"]
    an = analyze(str(path), limits=ti.LIMITS)
    e = next(e for e in an.exchanges if e.connection == CASE_CONN)
    assert len(e.request_headers) == 20 and e.request_headers[0] == ("Host", "many.s7.example")
    notes = [str(n) for n in an.connections[CASE_CONN].notes]
    assert notes == [notes[0]] and "more than 20 header fields" in notes[0]
    # tshark shows all 50 fields of that head
    out = run_tool("tshark", "-r", str(path), "-Y", 'http.request.uri == "/s7-many"', "-T", "fields", "-e", "http.request.line")
    assert out.strip().count(",") + 1 == 50


@pytest.mark.parametrize("name", sorted(DEFAULT_LIMITS))
def test_any_budget_hit_is_not_complete(name):
    """Whatever budget or limit ``analysis.budgets_hit`` lists, for a connection or the
    capture, the headline is not "Complete" and counts it."""
    from wirefall.analyzer.model import Analysis, PacketIndex

    for cid in (0, -1):
        an = Analysis("x.pcap", PacketIndex(), budgets_hit={name: [cid]})
        c = C._compute(an)
        assert not c.complete and C._headline(c).startswith("Incomplete:") and "budget" in C._headline(c)
        assert any(i.kind == "budget" for i in c.issues)


def test_cli_summary_of_a_cut_chunk_line_says_incomplete(inputs):
    r = subprocess.run([sys.executable, "-m", "wirefall", "summary", str(inputs["long_chunk_line"]), "--json"],
                       capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    comp = json.loads(r.stdout)["completeness"]
    assert comp["complete"] is False and comp["budgets_hit"] == {"http1_chunk_line": [CASE_CONN]}
    assert "budget ran out" in comp["headline"]


# ---------------------------------------------------------------- UTF-8 request targets


def _ascii(s: str) -> str:
    return "".join(c for c in s if c.isascii())


def test_utf8_request_targets_are_decoded_and_agree_with_tshark(tmp_path):
    path = ti.utf8_targets(tmp_path / "utf8.pcap")
    an = analyze(str(path))
    _normal_kept(an)
    got = [e.path for e in an.exchanges if e.connection == 1]
    # what the bytes say, by construction: UTF-8 where they are UTF-8, a byte that is not stays
    # its Latin-1 character (RFC 9110 obs-text)
    assert got == ["/café", "/日本?q=✓", "/bad\xff\xfe", "/ctl\x1b[31mred"]
    assert [e.url for e in an.exchanges if e.connection == 1][0] == "http://utf8.s7.example/café"
    frames = [f.fields["target"] for f in an.frames if f.connection == 1 and f.type == "REQUEST"]
    assert frames == got
    # tshark (ENC_ASCII) reads the same octets: each beyond ASCII a U+FFFD, the ASCII between the same
    theirs = [u.replace("\\x1b", "\x1b") for u in _tshark_uris(path) if not u.startswith("/rt18-normal")]
    assert theirs == ["".join(chr(c) if c < 128 else "\ufffd" for c in t) for t in ti.UTF8_TARGETS]
    assert [_ascii(g) for g in got] == [_ascii(u) for u in theirs]


def test_utf8_target_in_text_output_is_shown_and_controls_escaped(tmp_path):
    path = ti.utf8_targets(tmp_path / "utf8.pcap")
    r = subprocess.run([sys.executable, "-m", "wirefall", "requests", str(path)], capture_output=True, timeout=120, cwd=ROOT)
    out = r.stdout.decode("utf-8")
    assert r.returncode == 0 and "http://utf8.s7.example/café" in out and "/日本?q=✓" in out
    assert "Ã" not in out and "\x1b" not in out and "/ctl\\x1b[31mred" in out
    js = subprocess.run([sys.executable, "-m", "wirefall", "requests", str(path), "--json"], capture_output=True, timeout=120,
                        cwd=ROOT)
    urls = [e["url"] for e in json.loads(js.stdout)]
    assert "http://utf8.s7.example/ctl\x1b[31mred" in urls  # --json keeps the exact value


# ---------------------------------------------------------------- display filters: malformed numbers and operators

sys.path.insert(0, str(ROOT / "scripts" / "filters"))
import malformed as mf  # noqa: E402


def test_malformed_filters_are_rejected_exactly_where_tshark_rejects_them():
    """scripts/filters/malformed.py's expressions, each through tshark 4.0 (one pass, a Lua tap
    per expression) and wirefall's compiler: the same verdict both ways (``KNOWN`` apart,
    each with its reason); http2.streamid, a frame field, in the frames scope too."""
    exprs = mf.expressions()
    ts = mf.tshark_verdicts(exprs, ROOT / "sample_captures/http/http1-nginx.pcap")
    assert sum(v is not None for v in ts.values()) > 100 and sum(v is None for v in ts.values()) > 100  # both kinds
    wf = mf.wirefall_verdicts(exprs, "packets")
    differ = {e for e in exprs if (ts[e] is None) != (wf[e] is None)}
    assert differ == set(mf.KNOWN), sorted(differ ^ set(mf.KNOWN))
    frame_exprs = [e for e in exprs if e.startswith("http2.streamid")]
    wf_frames = mf.wirefall_verdicts(frame_exprs, "frames")
    assert {e for e in frame_exprs if (ts[e] is None) != (wf_frames[e] is None)} == set()
    assert ts["frame.len == ---1"] is not None and wf["frame.len == ---1"] is not None


@pytest.mark.parametrize("cmd,expr", [("frames", "frame.len == ---1"), ("frames", "http2.streamid == ---1"),
                                      ("packets", "frame.len == ---1"), ("packets", "frame.len == 1e5"),
                                      ("packets", "frame.len EQ 1"), ("packets", "frame.len in {1 2}"),
                                      ("requests", "status == --200"), ("packets", "tcp.port == 99999999999999999999999")])
def test_cli_refuses_a_malformed_filter_like_every_bad_filter(cmd, expr):
    r = subprocess.run([sys.executable, "-m", "wirefall", cmd, str(ROOT / "sample_captures/http/http1-nginx.pcap"), "-Y", expr],
                       capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 2 and "bad filter" in r.stderr and "Traceback" not in r.stderr, (r.returncode, r.stderr)


# ---------------------------------------------------------------- the host of requests joined mid-way

def _midway_rows(an) -> list:
    return [e for e in an.exchanges if e.protocol == "h2c"]


@pytest.mark.parametrize("dns", [True, False])
def test_h2_joined_midway_gets_its_host_from_dns_or_says_unknown(tmp_path, dns):
    """An h2c connection the capture joins mid-way, :authority a reference to an HPACK entry
    from before (tshark shows the header as <unknown> too): the URL is never the bare path.
    With a DNS answer for the server's address before it, the host is that name (port 8080);
    without, <unknown>, counted in the completeness summary."""
    path = ti.h2_midway(tmp_path / "mid.pcap", dns=dns)
    out = run_tool("tshark", "-r", str(path), "-d", "tcp.port==8080,http2", "-Y", "http2.type == 1", "-T", "fields",
                   "-e", "http2.header.name", "-e", "http2.header.value")
    assert "<unknown>" in out and "/s7-mid/app.js" in out  # tshark: the authority is not in the capture
    an = analyze(str(path))
    _normal_kept(an)
    rows = _midway_rows(an)
    assert [e.path for e in rows] == list(ti.MIDWAY_PATHS) and all(e.status == 200 for e in rows)
    c = C.compute(an)
    if dns:
        assert [e.url for e in rows] == [f"http://{ti.DNS_NAME}:8080{p}" for p in ti.MIDWAY_PATHS]
        assert all(e.authority == f"{ti.DNS_NAME}:8080" and e.sources["authority"] == "dns" for e in rows)
        assert c.unknown_authority == 0 and "unknown host" not in C.headline(an)
    else:
        assert [e.url for e in rows] == [f"http://<unknown>{p}" for p in ti.MIDWAY_PATHS]
        assert all(e.authority is None and e.sources["authority"] == "unknown" for e in rows)
        assert c.unknown_authority == 2 and "2 requests with unknown fields (2 with unknown host)" in C.headline(an)
        assert C.to_dict(c)["unknown"]["authority"] == 2
    assert not any(e.url in ti.MIDWAY_PATHS for e in an.exchanges)  # never a bare path as a URL
    # the parallel pass (DNS and the TCP connection in different workers) says the same
    an2 = analyze(str(path), workers=2)
    assert [(e.url, e.authority) for e in _midway_rows(an2)] == [(e.url, e.authority) for e in rows]


def test_host_from_sni_then_dns_then_unknown_on_every_protocol():
    """analyzer.authority on hand-built models: HTTP/2, HTTP/3 and SPDY rows without a host,
    and an HTTP/1.0 request without Host — SNI first, then a DNS answer for the server
    address that came before the connection, else <unknown>."""
    from wirefall.analyzer import authority
    from wirefall.analyzer.model import Analysis, Connection, Exchange, Frame, PacketIndex, QuicInfo, TlsInfo

    def conn(i, addr, port=443, tls=None, quic=None, start=10.0):
        return Connection(i, "udp" if quic else "tcp", ("10.0.0.1", 5000 + i), (addr, port), start=start, tls=tls, quic=quic)

    cs = [conn(0, "192.0.2.1", tls=TlsInfo(sni="sni.example")), conn(1, "192.0.2.2", tls=TlsInfo()),  # (no ClientHello seen)
          conn(2, "192.0.2.3", quic=QuicInfo()), conn(3, "192.0.2.4", port=80), conn(4, "192.0.2.5", tls=TlsInfo()),
          conn(5, "192.0.2.9", start=1.0, tls=TlsInfo())]
    dns = [Frame(1, 1, 2.0, 9, 1, "dns", 7, "RESPONSE", 0, 60, None,
                 {"id": 7, "qname": "dns.example", "qtype": "A", "rcode": "NOERROR", "answers": [["dns.example", "A", 60, "192.0.2.2"]]}),
           Frame(2, 2, 2.0, 9, 1, "dns", 8, "RESPONSE", 0, 60, None,
                 {"id": 8, "qname": "h3.example", "qtype": "A", "rcode": "NOERROR", "answers": [["h3.example", "A", 60, "192.0.2.3"]]}),
           Frame(3, 3, 2.0, 9, 1, "dns", 9, "RESPONSE", 0, 60, None,  # answered after connection 5 opened: not its name
                 {"id": 9, "qname": "late.example", "qtype": "A", "rcode": "NOERROR", "answers": [["late.example", "A", 60, "192.0.2.9"]]})]
    exs = [Exchange(1, 0, "h2", method="GET", path="/a", url="/a"), Exchange(2, 1, "h2", method="GET", path="/b", url="/b"),
           Exchange(3, 2, "h3", method="GET", scheme="https", path="/c"),
           Exchange(4, 3, "http/1.0", method="GET", path="/d", url="/d", scheme="http"),
           Exchange(5, 4, "spdy/3.1", method="GET", path="/e", url="/e"), Exchange(6, 5, "h2", method="GET", path="/f", url="/f"),
           Exchange(7, 0, "h2", method="GET", authority="own.example", path="/g", url="https://own.example/g")]
    an = Analysis("x.pcap", PacketIndex(), connections=cs, exchanges=exs, frames=dns)
    assert authority.fill(an) == 3
    assert [e.url for e in exs] == ["https://sni.example/a", "https://dns.example/b", "https://h3.example/c",
                                    "http://<unknown>/d", "https://<unknown>/e", "https://<unknown>/f", "https://own.example/g"]
    assert [(e.sources or {}).get("authority") for e in exs] == ["tls_sni", "dns", "dns", "unknown", "unknown", "unknown", None]
    c = C._compute(an)
    assert c.unknown_authority == 3 and not c.complete
