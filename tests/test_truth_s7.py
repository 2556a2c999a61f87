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
