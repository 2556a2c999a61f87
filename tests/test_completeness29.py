"""The completeness report's next steps (review 29): each an action that works.

(a) A per-block limit (``http1_chunk_line``, ``http1_header_bytes``, ``http1_header_count``):
    its ``budget`` issue said "budget … ran out … raise it with --limit NAME=N", and the
    requests it cut had the next step "the requests' other half is not in the capture: capture
    the whole page load" — which cannot help: the bytes are in the capture.  Now the issue
    names the limit exceeded, what it cost and ``--limit NAME=N`` (a real option of every
    analysis command: ui/cli.py ``limit_names``), the requests point at that limit, and
    analysing again with N above the block's size (tshark's) decodes it.  Likewise a decoded
    body size stopped by ``body_decoded_bytes``.
(b) HTTP/3 header blocks blocked on QPACK encoder instructions the capture does not hold, on a
    connection whose start is in the capture (a packet of the server's encoder stream lost):
    the next step said "capture the whole page load" (the responses are in the capture); now
    it says the encoder-stream packets were lost.  A connection the capture joined after its
    start (entries inserted before the capture: ``<unknown>`` headers) keeps "start the
    capture before the page load … new connections" (NEXT_MIDWAY).

Outside truth: tshark on the same files (the chunk-size line's size, the request and fields it
decodes, the decompressed body; the QUIC Initial, the server's HTTP/3 HEADERS frames and their
QPACK Required Insert Count), and Chromium's NetLog of the late capture.
"""
from __future__ import annotations

import gzip
import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conftest import ROOT, SAMPLES, need_tool, run_tool

sys.path.insert(0, str(ROOT))
from scripts.hostile import truth_inputs as ti  # noqa: E402

from wirefall.analyzer import completeness as C  # noqa: E402
from wirefall.analyzer.pipeline import analyze  # noqa: E402
from wirefall.analyzer.sessions import DEFAULT_LIMITS  # noqa: E402

CASE_CONN = 1  # truth_inputs: the crafted connection
PAGE = SAMPLES / "page"


def _cli(*args: str) -> dict:
    r = subprocess.run([sys.executable, "-m", "wirefall", *args], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def _fields(cap: Path, *fields: str, display_filter: str = "", keys: Path | None = None) -> list[list[str]]:
    args = ["tshark", "-r", str(cap)]
    if keys is not None:
        args += ["-o", f"tls.keylog_file:{keys}"]
    if display_filter:
        args += ["-Y", display_filter]
    args += ["-T", "fields", "-E", "separator=\t", "-E", "occurrence=a", "-E", "aggregator=,"]
    for f in fields:
        args += ["-e", f]
    return [ln.split("\t") for ln in run_tool(*args).splitlines() if ln.strip()]


def _pdml_fields(cap: Path, name: str) -> list[ET.Element]:
    root = ET.fromstring(run_tool("tshark", "-r", str(cap), "-T", "pdml"))
    return [f for f in root.iter("field") if f.get("name") == name]


def _issues(comp: dict, conn: int) -> dict[str, dict]:
    return {i["kind"]: i for i in comp["issues"] if i["connection"] == conn}


# ---------------------------------------------------------------- (a) per-block limits


def test_chunk_line_over_the_limit_names_it_and_raising_it_works(tmp_path):
    path = ti.build(tmp_path / "chunk.pcap", "long_chunk_line")
    # tshark decodes the chunk: its chunk-size line (CRLF included) is 5004 bytes, over 4096
    sizes = [int(f.get("size")) for f in _pdml_fields(path, "http.chunk_size")]
    over = [s for s in sizes if s - 2 > DEFAULT_LIMITS["http1_chunk_line"]]
    assert over == [5004]
    data = [f for f in _pdml_fields(path, "http.chunk_data")]
    assert sum(int(f.get("size")) for f in data) == 5
    comp = _cli("summary", "--json", str(path))["completeness"]
    assert comp["budgets_hit"] == {"http1_chunk_line": [CASE_CONN]}
    got = _issues(comp, CASE_CONN)
    b = got["budget"]
    assert b["count"] == len(over) == 1
    assert b["detail"] == (f"connection {CASE_CONN}: limit http1_chunk_line exceeded: an HTTP/1 chunk-size line (chunk "
                           "extensions included) longer than the limit (4096 bytes unless --limit set it); that direction "
                           "of the connection was not decoded from there on")
    assert b["next_step"] == C.limit_next_step("http1_chunk_line") == (
        "if the traffic is genuine, analyse it again with --limit http1_chunk_line=N, N above that line's length in bytes "
        "(default 4096; the limit guards against hostile input)")
    # the response it cut: one (tshark's one response on that connection), pointed at the limit
    u = got["unknown_fields"]
    assert u["count"] == 1 and u["next_step"] == "raise the limit that stopped this connection's decoding: --limit http1_chunk_line=N"
    assert "other half" not in u["next_step"]
    # the step works: N = tshark's size of the line
    comp2 = _cli("summary", "--json", "--limit", f"http1_chunk_line={over[0]}", str(path))["completeness"]
    assert comp2["complete"] is True and comp2["issues"] == []
    an = analyze(str(path), limits={"http1_chunk_line": over[0]})
    e = next(e for e in an.exchanges if e.connection == CASE_CONN)
    assert (e.status, e.response_body_bytes, e.error) == (200, 5, None)


@pytest.mark.parametrize("kind", ["long_head", "long_trailer", "many_fields"])
def test_other_per_block_limits_name_themselves_and_raising_them_works(tmp_path, kind):
    limit, _ = ti.CASES[kind]
    path = ti.build(tmp_path / f"{kind}.pcap", kind)
    an = analyze(str(path), limits=ti.LIMITS)
    c = C.compute(an)
    issues = {i.kind: i for i in c.issues if i.connection == CASE_CONN}
    b = issues["budget"]
    assert (b.count, b.next_step) == (1, C.limit_next_step(limit)) and f"limit {limit} exceeded" in b.detail
    assert f"--limit {limit}=N" in b.next_step
    if kind == "many_fields":  # (the head is decoded, its first 20 fields kept: no unknown field)
        assert "unknown_fields" not in issues
        assert "the fields past the limit were not kept" in b.detail
        # tshark decodes all 50 fields of that head: N above them keeps them all
        rows = _fields(path, "http.request.line", display_filter='http.request.uri == "/s7-many"')
        n = rows[0][0].count(",") + 1
        assert n == 50
        raised = analyze(str(path), limits=dict(ti.LIMITS, http1_header_count=n))
        assert len(next(e for e in raised.exchanges if e.connection == CASE_CONN).request_headers) == n
    else:
        u = issues["unknown_fields"]
        assert u.count == 1 and u.next_step == f"raise the limit that stopped this connection's decoding: --limit {limit}=N"
        raised = analyze(str(path), limits=dict(ti.LIMITS, http1_header_bytes=DEFAULT_LIMITS["http1_header_bytes"]))
    assert C.compute(raised).complete
    if kind == "long_head":  # tshark decodes the request the limit cut
        assert ["/s7-long"] in _fields(path, "http.request.uri", display_filter="http.request")
        assert any((e.url or "").endswith("/s7-long") for e in raised.exchanges)


def test_decoded_body_cap_points_at_body_decoded_bytes(tmp_path):
    path = ti.build(tmp_path / "capped.pcap", "capped_body")
    # tshark inflates the whole gzip body: 100,000 bytes
    inflated = [int(f.get("size")) for f in _pdml_fields(path, "http.file_data")]
    assert 100_000 in inflated
    an = analyze(str(path), limits=ti.LIMITS)
    c = C.compute(an)
    u = next(i for i in c.issues if i.kind == "unknown_fields" and i.connection == CASE_CONN)
    assert u.count == 1 and u.next_step == ("a body's decoding stopped at a limit: raise it with --limit body_decoded_bytes=N "
                                            "(bytes of one decoded body, default 64M)")
    raised = analyze(str(path), limits=dict(ti.LIMITS, body_decoded_bytes=100_000))
    e = next(e for e in raised.exchanges if e.connection == CASE_CONN)
    assert e.response_body_decoded_bytes == 100_000 and C.compute(raised).complete


def test_a_capture_cut_short_keeps_its_own_step(tmp_path):
    """A body the capture ends inside: no limit involved, the capture's step stays."""
    path = ti.build(tmp_path / "cut.pcap", "cut_body")
    c = C.compute(analyze(str(path)))
    u = next(i for i in c.issues if i.kind == "unknown_fields" and i.connection == CASE_CONN)
    assert u.next_step == C.NEXT_OTHER_HALF and not c.budgets_hit


# ---------------------------------------------------------------- (b) blocked QPACK


def test_qpack_blocked_on_a_lost_encoder_stream_says_packets_were_lost(tmp_path):
    need_tool("editcap")
    src, keys = PAGE / "page-h3.pcapng", PAGE / "page-h3.keys"
    client_port = int(_fields(src, "udp.srcport", display_filter="quic.long.packet_type == 0")[0][0])
    server = [r for r in _fields(src, "frame.number", "udp.srcport", "quic.stream.stream_id", "quic.stream.offset", "http3.stream_type",
                                 display_filter="quic.stream.stream_id", keys=keys) if int(r[1]) != client_port]
    # the server's QPACK encoder stream (HTTP/3 stream type 2), and the first packet carrying its
    # instructions (offset > 0): that packet alone
    enc = next(int(sid) for r in server if r[4] for sid, t in zip(r[2].split(","), r[4].split(",")) if t == "2")
    lost = next(r for r in server if r[2] == str(enc) and r[3] and int(r[3]) > 0)
    cut = tmp_path / "enc-lost.pcapng"
    subprocess.run(["editcap", str(src), str(cut), lost[0]], check=True, capture_output=True, timeout=60)
    # tshark: the connection's start (client Initial) is in the cut capture; the server's
    # HEADERS frames whose QPACK prefix has a Required Insert Count > 0 refer to the dynamic table
    assert _fields(cut, "frame.number", display_filter=f"quic.long.packet_type == 0 && udp.srcport == {client_port}")
    heads = _fields(cut, "http3.frame_type", "http3.frame_payload", display_filter=f"http3.frame_type == 1 && udp.dstport == {client_port}",
                    keys=keys)
    blocks = [p for types, payloads in heads for t, p in zip(types.split(","), payloads.split(","), strict=True) if t == "1"]
    dynamic = sum(1 for p in blocks if bytes.fromhex(p)[0] != 0)
    assert (len(blocks), dynamic) == (13, 12)
    an = analyze(str(cut), keylogs=[str(keys)])
    c = C.compute(an)
    assert c.joined_midway == [] and c.response_status_unknown == dynamic
    issues = [i for i in c.issues if i.kind == "unknown_fields"]
    assert len(issues) == 1
    i = issues[0]
    assert (i.connection, i.count, i.next_step) == (0, dynamic, C.NEXT_QPACK_LOST)
    assert "lost" in i.next_step and "other half" not in i.next_step
    # summary --json says the same
    comp = _cli("summary", "--json", "--keylog", str(keys), str(cut))["completeness"]
    assert [(x["kind"], x["count"], x["next_step"]) for x in comp["issues"]] == [("unknown_fields", dynamic, C.NEXT_QPACK_LOST)]
    # the whole capture: nothing blocked
    assert C.compute(analyze(str(src), keylogs=[str(keys)])).complete


def test_qpack_entries_from_before_the_capture_say_start_it_earlier():
    """page-h3-late: the QUIC connection began before the capture (tshark: no long-header packet
    at all), most QPACK entries its header blocks refer to were inserted then (``<unknown>``):
    the next step is to start the capture before the page load, on new connections."""
    late, keys = SAMPLES / "quic" / "page-h3-late.pcapng", SAMPLES / "quic" / "page-h3-late.keys"
    if not late.exists():
        pytest.skip("sample_captures/quic/page-h3-late.pcapng absent")
    assert not _fields(late, "frame.number", display_filter="quic.long.packet_type")
    an = analyze(str(late), keylogs=[str(keys)])
    c = C.compute(an)
    # the NetLog: the requests on streams from the capture's first on (the earlier ones predate it)
    d = json.loads(gzip.decompress((SAMPLES / "quic" / "page-h3-late.netlog.json.gz").read_bytes()))
    sent = {v: k for k, v in d["constants"]["logEventTypes"].items()}
    first = min(e.stream_id for e in an.exchanges)
    netlog = {int(e["params"]["stream_id"]) for e in d["events"] if sent.get(e["type"]) == "HTTP3_HEADERS_SENT"}
    in_capture = {s for s in netlog if s >= first}
    assert len(in_capture) == 26 and {e.stream_id for e in an.exchanges} == in_capture
    unknown_headers = sum(1 for e in an.exchanges if any(C.UNKNOWN in (k, v) for k, v in e.request_headers + e.response_headers))
    issue = next(i for i in c.issues if i.kind == "unknown_fields")
    assert (issue.connection, issue.count, issue.next_step) == (0, len(in_capture), C.NEXT_MIDWAY)
    assert unknown_headers == c.unknown_headers == 26
    assert issue.next_step.startswith("start the capture before the page load")
