"""compare: the same page over HTTP/1.1, HTTP/2 and HTTP/3 (real Chromium loads from
sample_captures/page), checked against tshark's own list of requests."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from wirefall.analyzer.compare import compare, normalise_url
from wirefall.analyzer.pipeline import analyze
from conftest import ROOT, SAMPLES, run_tool

PAGE = SAMPLES / "page"


def load(name):
    cap = PAGE / f"page-{name}.pcapng"
    keys = PAGE / f"page-{name}.keys"
    if not cap.exists():
        pytest.skip(f"{cap.name} missing")
    return analyze(str(cap), keylogs=[str(keys)] if keys.exists() else None)


def tshark_paths(name) -> list[str]:
    """Request paths tshark decodes (HTTP/1.1 and HTTP/2; QUIC's QPACK it cannot decode)."""
    cap = PAGE / f"page-{name}.pcapng"
    keys = PAGE / f"page-{name}.keys"
    out = run_tool("tshark", "-r", str(cap), "-o", f"tls.keylog_file:{keys}", "-Y", "http.request || http2.type == 1",
                   "-T", "fields", "-e", "http.request.uri", "-e", "http2.headers.path", "-E", "occurrence=a", "-E", "aggregator=|")
    paths = []
    for line in out.splitlines():
        for cell in line.split("\t"):
            paths += [p for p in cell.split("|") if p]
    return sorted(paths)


@pytest.mark.parametrize("a,b", [("h1", "h2"), ("h2", "h3"), ("h1", "h3"), ("h1", "spdy"), ("spdy", "h3")])
def test_every_url_matched(a, b):
    A, B = load(a), load(b)
    res = compare(A, B)
    assert res["match_mode"] == "path"  # each load ran against its own server port
    assert "different origins" in res["warnings"][0]
    assert not res["only_a"] and not res["only_b"]
    paths_a = sorted(normalise_url(e.url, False) for e in A.exchanges)
    assert sorted(m["url"] for m in res["matched"]) == paths_a
    if a in ("h1", "h2"):
        assert paths_a == tshark_paths(a)  # the URLs themselves are tshark's
    assert len(res["matched"]) == 13


def test_page_table_numbers_come_from_the_model():
    A, B = load("h1"), load("h2")
    res = compare(A, B)
    page = res["page"]
    for side, an in (("a", A), ("b", B)):
        web = {e.connection for e in an.exchanges}
        assert page["connections"][side] == len(web)
        assert page["requests"][side] == len(an.exchanges) == 13
        assert page["packets_c2s"][side] == sum(c.stats[0].packets for c in an.connections if c.id in web)
        assert page["request_header_bytes_wire"][side] == sum(e.request_header_bytes_wire for e in an.exchanges)
        assert page["response_header_bytes_decoded"][side] == sum(e.response_header_bytes_decoded for e in an.exchanges)
        last = max(e.response_end for e in an.exchanges)
        assert page["page_load_time"][side] == pytest.approx(last - an.index.ts[0])
    # HTTP/1.1 sends headers uncompressed (plus the request line, ": " and CRLFs), HPACK
    # compresses them: the table says so
    assert page["request_header_compression"]["a"] <= 0.0
    assert page["request_header_compression"]["b"] > 0.5
    assert page["connections"]["a"] == 6 and page["connections"]["b"] == 1
    pl = page["page_load_time"]
    assert pl["speedup"] == pytest.approx((pl["a"] - pl["b"]) / pl["a"])
    assert pl["diff"] == pytest.approx(pl["b"] - pl["a"])


def test_per_request_figures_equal_requests_json():
    A, B = load("h2"), load("h3")
    res = compare(A, B)
    by_id = {e.id: e for e in A.exchanges}
    t0 = A.index.ts[0]
    for m in res["matched"]:
        e = by_id[m["a"]["exchange"]]
        assert m["a"]["start"] == pytest.approx(e.request_start - t0)
        # (the request's last byte to the response's first, as `requests`' ttfb: since 2026-12-05)
        assert m["a"]["ttfb"] == pytest.approx(e.response_start - e.request_end)
        assert m["a"]["bytes"] == e.response_body_bytes
        assert m["diff"]["bytes"] == m["b"]["bytes"] - m["a"]["bytes"]
        assert m["a"]["protocol"] == "h2" and m["b"]["protocol"] == "h3"


def test_different_pages_warn_low_match():
    A = load("h2")
    spdy = SAMPLES / "spdy" / "spdy3-plain.pcap"
    if not spdy.exists():
        pytest.skip("SPDY sample missing")
    B = analyze(str(spdy))
    res = compare(A, B)
    assert res["match_share"] < 0.5
    assert any("may not load the same page" in w for w in res["warnings"])


def test_cli_json_and_svg(tmp_path):
    out = tmp_path / "cmp.svg"
    r = subprocess.run([sys.executable, "-m", "wirefall", "compare", str(PAGE / "page-h1.pcapng"), str(PAGE / "page-h2.pcapng"),
                        "--keylog", str(PAGE / "page-h1.keys"), "--keylog-b", str(PAGE / "page-h2.keys"), "--json", "-o", str(out)],
                       capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert set(res) >= {"matched", "only_a", "only_b", "page"}
    # with --json the comparison's warnings are said on stderr (the JSON has them in "warnings")
    assert res["warnings"] and all(f"wirefall: warning: {w}" in r.stderr for w in res["warnings"])
    for key in ("page_load_time", "connections", "requests", "packets_c2s", "packets_s2c", "bytes_c2s", "bytes_s2c",
                "request_header_bytes_wire", "request_header_bytes_decoded", "response_header_bytes_wire",
                "response_header_bytes_decoded", "request_header_compression", "response_header_compression", "pushes"):
        assert set(res["page"][key]) == {"a", "b", "diff", "speedup"}
        assert res["page"][key]["a"] is not None and res["page"][key]["b"] is not None
    svg = out.read_text()
    # both waterfalls drawn: bars in the first (x) and second (x2) subplot
    assert 'class="xy"' in svg and 'class="x2y2"' in svg
    import re

    bars = re.findall(r'<g class="point"><path d="M[^"]+"', svg)
    assert len(bars) >= 2 * 13  # at least one bar per request on each side


def test_cli_text_says_each_warning_once():
    """The text report ends with its warnings; they are not repeated on stderr, which a terminal
    shows interleaved with it (they were, each warning twice)."""
    r = subprocess.run([sys.executable, "-m", "wirefall", "compare", str(PAGE / "page-h1.pcapng"), str(PAGE / "page-h2.pcapng"),
                        "--keylog", str(PAGE / "page-h1.keys"), "--keylog-b", str(PAGE / "page-h2.keys")],
                       capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("warning: the captures load the page from different origins") == 1
    assert "different origins" not in r.stderr


def test_cli_cache_reads_both_captures_from_the_analysis_cache(tmp_path):
    """`wirefall compare A B --cache`: both analyses are stored on the first run and read back on
    the second, with the same comparison."""
    import os

    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "xdg"))
    cmd = [sys.executable, "-m", "wirefall", "compare", str(PAGE / "page-h1.pcapng"), str(PAGE / "page-h2.pcapng"),
           "--keylog", str(PAGE / "page-h1.keys"), "--keylog-b", str(PAGE / "page-h2.keys"), "--json", "--cache"]
    runs = [subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env, timeout=300) for _ in range(2)]
    assert all(r.returncode == 0 for r in runs), runs[0].stderr
    entries = list((tmp_path / "xdg" / "wirefall").glob("*.wfa.zst"))
    assert len(entries) == 2  # A and B
    assert json.loads(runs[0].stdout) == json.loads(runs[1].stdout)
    assert json.loads(runs[0].stdout)["matched"]
