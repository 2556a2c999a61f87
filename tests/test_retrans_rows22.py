"""Retransmission rows a Wireshark user reads right, and a page load named for what it is (TUI
review, findings 1 and 3).

1. compare's page table has the TCP retransmissions as tshark counts them — the segments its TCP
   analysis flags ``tcp.analysis.retransmission`` / ``fast_retransmission`` (spurious ones in),
   and their ``tcp.len``, per direction — beside the data the capture carried twice (what the
   "less the data carried twice" rows take off), each labelled for what it is, with no saving on
   either; the CLI text, the JSON and the TUI's compare table give the same rows and definitions.
   On a capture taken at the client, a segment lost before the capture point and resent is
   carried once: lossy/page-h2 showed "0" server→client with a "100 %" saving, where tshark flags
   frames 104 and 149 [TCP Fast Retransmission].  Oracle: tshark with
   ``-o tcp.reassemble_out_of_order:TRUE``.
2. ``wirefall stats`` (and the TUI's Statistics tab, which prints it) calls the page's last
   response byte so, not "page load", gives the browser's load event beside it where a HAR laid
   over places it (``stats --json``'s ``browser_events``), heads the per-protocol columns "first
   byte" / "last byte" and says below the table what they are, in lines that fit 100 columns.
   Oracle: WebPageTest's HAR of the amazon load (its onLoad and _fullyLoaded).
"""
from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, SAMPLES, SHARED, run_tool
from test_compare_truth19 import _need
from wirefall.analyzer.compare import NO_SPEEDUP, PAGE_NOTES, PAGE_ROWS, RETRANSMISSION_ROWS, compare, page_figures, render_text
from wirefall.analyzer.pipeline import analyze

PAGE = SAMPLES / "page"
LOSSY = SAMPLES / "lossy"
WPT_HAR = SHARED / "hars" / "webpagetest-amazon.har.gz"
AMAZON = SHARED / "pageload-amazon"
CAPTURES = [(PAGE, "h2"), (LOSSY, "h1"), (LOSSY, "h2"), (LOSSY, "spdy")]
FLAGGED = "tcp.analysis.retransmission || tcp.analysis.fast_retransmission"


def _an(d: Path, p: str):
    return analyze(str(d / f"page-{p}.pcapng"), keylogs=[str(d / f"page-{p}.keys")])


def tshark_retransmissions(cap: Path) -> tuple[list[int], list[int], list[int]]:
    """tshark's retransmitted segments per direction [c2s, s2c]: (frames, tcp.len sums, frame
    numbers of the server's); the server is the SYN/ACK's sender."""
    out = run_tool("tshark", "-r", str(cap), "-Y", "tcp.flags.syn == 1 && tcp.flags.ack == 1", "-T", "fields", "-e", "tcp.srcport")
    (server,) = {int(x) for x in out.split()}
    out = run_tool("tshark", "-r", str(cap), "-o", "tcp.reassemble_out_of_order:TRUE", "-Y", FLAGGED, "-T", "fields",
                   "-e", "frame.number", "-e", "tcp.srcport", "-e", "tcp.len")
    frames, data, s2c = [0, 0], [0, 0], []
    for ln in out.splitlines():
        if not ln.strip():
            continue
        n, sport, length = (int(x) for x in ln.split("\t"))
        d = 1 if sport == server else 0
        frames[d] += 1
        data[d] += length
        if d:
            s2c.append(n)
    return frames, data, s2c


# ------------------------------------------------------------------ 1. compare's retransmission rows

@pytest.mark.parametrize("d,proto", CAPTURES, ids=[f"{d.name}/page-{p}" for d, p in CAPTURES])
def test_tcp_retransmission_rows_are_tsharks(d, proto):
    cap = d / f"page-{proto}.pcapng"
    _need(cap)
    frames, data, _ = tshark_retransmissions(cap)
    fig = page_figures(_an(d, proto), tcp_analysis=True)
    assert [fig["tcp_retransmissions_c2s"], fig["tcp_retransmissions_s2c"]] == frames
    assert [fig["tcp_retransmitted_bytes_c2s"], fig["tcp_retransmitted_bytes_s2c"]] == data
    assert sum(frames) > 0
    # without the pass (batch, the lab's stored figures): the keys are absent, the others the same
    plain = page_figures(_an(d, proto))
    assert "tcp_retransmissions_s2c" not in plain
    assert {k: v for k, v in fig.items() if not k.startswith("tcp_")} == plain


def test_clean_against_lossy_h2_reads_as_tshark_and_wirefall_stats_say():
    """The review's pair: the lossy side's two fast retransmissions server→client (tshark frames
    104 and 149, 1,448 bytes each) are rows of their own, beside the 0 bytes the capture carried
    twice; no saving on any retransmission row; `stats`' retrans column says the same."""
    _need(PAGE / "page-h2.pcapng", LOSSY / "page-h2.pcapng")
    a, b = _an(PAGE, "h2"), _an(LOSSY, "h2")
    res = compare(a, b)
    page = res["page"]
    fa, da, _ = tshark_retransmissions(PAGE / "page-h2.pcapng")
    fb, db, s2c = tshark_retransmissions(LOSSY / "page-h2.pcapng")
    assert s2c == [104, 149] and db[1] == 2 * 1448
    assert page["tcp_retransmissions_s2c"] == {"a": fa[1], "b": fb[1], "diff": fb[1] - fa[1], "speedup": None}
    assert page["tcp_retransmitted_bytes_s2c"] == {"a": da[1], "b": db[1], "diff": db[1] - da[1], "speedup": None}
    assert page["tcp_retransmissions_c2s"]["b"] == fb[0] == 1
    # the data carried twice: A's spurious 54,272-byte super-segment; B's resent segments were lost
    # before the capture point, carried once
    assert page["retransmitted_bytes_s2c"]["a"] == 54272 and page["retransmitted_bytes_s2c"]["b"] == 0
    for k in RETRANSMISSION_ROWS:
        assert k in NO_SPEEDUP and page[k]["speedup"] is None, k
    assert page["bytes_s2c_without_retransmissions"]["speedup"] is not None  # (a size: its saving stays)
    # `wirefall stats`' retrans column: tshark's segments, the same per direction
    from wirefall.analyzer.stats import compute

    st = compute(b, tcp_analysis=True)
    assert st.capture.tcp_retransmissions == fb
    # the text: labelled rows, no "%" on them, the definitions under the table, both figures warned of
    text = render_text(res)
    lines = text.splitlines()
    labels = dict(PAGE_ROWS)
    for k in RETRANSMISSION_ROWS:
        (ln,) = [x for x in lines if x.startswith(labels[k] + " ")]
        assert not ln.rstrip().endswith("%"), ln
    (ln,) = [x for x in lines if x.startswith(labels["tcp_retransmissions_s2c"] + " ")]
    assert ln.split()[-4:] == [str(fa[1]), str(fb[1]), f"{fb[1] - fa[1]:+,}", "–"], ln
    (ln,) = [x for x in lines if x.startswith(labels["tcp_retransmitted_bytes_s2c"] + " ")]
    assert ln.split()[-4:-1] == [f"{da[1]:,}", f"{db[1]:,}", f"{db[1] - da[1]:+,}"], ln
    assert "TCP retransmissions server→client (tshark's, segments)" in labels["tcp_retransmissions_s2c"]
    assert "data the capture carried twice server→client" in labels["retransmitted_bytes_s2c"]
    assert all(n in lines for n in PAGE_NOTES)
    (w,) = [x for x in res["warning_items"] if x["kind"] == "retransmissions"]
    assert f"B {fb[0]} ({db[0]:,} bytes) client→server, {fb[1]} ({db[1]:,} bytes) server→client" in w["text"]
    assert "data the capture carried twice (bytes): A 0 client→server, 54,272 server→client; B 72 client→server, " \
           "0 server→client" in w["text"]
    assert "lost before the capture point" in w["text"]


def test_compare_json_adds_the_rows_and_keeps_the_old_keys():
    _need(PAGE / "page-h2.pcapng", LOSSY / "page-h2.pcapng")
    r = subprocess.run([sys.executable, "-m", "wirefall", "compare", str(PAGE / "page-h2.pcapng"), str(LOSSY / "page-h2.pcapng"),
                        "--keylog", str(PAGE / "page-h2.keys"), "--keylog-b", str(LOSSY / "page-h2.keys"), "--json"],
                       capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr
    page = json.loads(r.stdout)["page"]
    assert set(page) == {k for k, _ in PAGE_ROWS}
    for k in ("retransmitted_bytes_c2s", "retransmitted_bytes_s2c", "bytes_c2s_without_retransmissions",
              "bytes_s2c_without_retransmissions"):
        assert k in page
    assert page["tcp_retransmissions_s2c"]["b"] == 2 and page["tcp_retransmitted_bytes_s2c"]["b"] == 2896


def test_h3_side_has_no_tcp_retransmission_figure():
    """A page with no TCP connection (h3): the TCP rows are unknown ("–", null), not 0."""
    _need(PAGE / "page-h2.pcapng", PAGE / "page-h3.pcapng")
    res = compare(_an(PAGE, "h2"), _an(PAGE, "h3"))
    for k in ("tcp_retransmissions_c2s", "tcp_retransmissions_s2c", "tcp_retransmitted_bytes_c2s", "tcp_retransmitted_bytes_s2c"):
        assert res["page"][k]["b"] is None and res["page"][k]["diff"] is None, k
        assert res["page"][k]["a"] is not None


def test_tui_compare_table_has_the_same_rows_and_definitions():
    """The TUI's page table is PAGE_ROWS' labels with render_text's cells, and PAGE_NOTES under it."""
    import asyncio

    pytest.importorskip("textual")

    from tuifix import wait_compare
    from wirefall.ui.tui.app import WirefallApp
    from wirefall.ui.tui.compare import page_rows

    _need(PAGE / "page-h2.pcapng", LOSSY / "page-h2.pcapng")
    res = compare(_an(PAGE, "h2"), _an(LOSSY, "h2"))
    rows = {r[1]: r[1:] for r in page_rows(res)}  # (key, label, A, B, B − A, speedup): by label, the cells after it
    lines = render_text(res).splitlines()
    for k in RETRANSMISSION_ROWS:
        label = dict(PAGE_ROWS)[k]
        (ln,) = [x for x in lines if x.startswith(label + " ")]
        assert ln[len(label):].split() == [c for c in rows[label][1:4] for c in c.split()] + ["–"], (ln, rows[label])
        assert rows[label][4] == "–"

    async def run() -> None:
        from textual.widgets import DataTable, Static

        app = WirefallApp(str(PAGE / "page-h2.pcapng"), [str(PAGE / "page-h2.keys")], compare=str(LOSSY / "page-h2.pcapng"),
                          keylogs_b=[str(LOSSY / "page-h2.keys")])
        async with app.run_test(size=(160, 48)) as pilot:
            scr = await wait_compare(pilot, app, steps=400, settle=0.1)
            assert scr.loaded, scr.error
            dt = scr.query_one("#cmp-page", DataTable)
            shown = {str(dt.get_row_at(i)[0]): [str(x) for x in dt.get_row_at(i)[1:]] for i in range(dt.row_count)}
            label = dict(PAGE_ROWS)["tcp_retransmissions_s2c"]
            assert shown[label] == ["1", "2", "+1", "–"]
            assert shown[dict(PAGE_ROWS)["retransmitted_bytes_s2c"]] == ["54,272", "0", "-54,272", "–"]
            notes = str(scr.query_one("#cmp-page-notes", Static).render())
            assert all(n in notes for n in PAGE_NOTES[1:])

    asyncio.run(run())


# ------------------------------------------------------------------ 2. stats: last response byte, the load event

# (the ``amazon`` fixture: conftest.py)


def _stats(amazon: Path, *extra: str) -> str:
    r = subprocess.run([sys.executable, "-m", "wirefall", "stats", str(amazon / "amazon1.cap"), "--keylog",
                        str(amazon / "amazon1.key_log.txt"), *extra], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_stats_names_the_last_response_byte_and_puts_the_load_event_beside_it(amazon):
    j = json.loads(_stats(amazon, "--har", str(WPT_HAR), "--json"))
    text = _stats(amazon, "--har", str(WPT_HAR))
    load, end, ttfb = j["browser_events"]["load_event"], j["capture"]["page_load_time"], j["capture"]["ttfb"]
    # WebPageTest's own record: the last response (a beacon after onload) ends _fullyLoaded − onLoad later
    first = json.loads(gzip.decompress(WPT_HAR.read_bytes()))["log"]["pages"][0]
    on, full = first["pageTimings"]["onLoad"], first["_fullyLoaded"]
    assert on == 2701
    assert end - load == pytest.approx((full - on) / 1000, abs=0.01) and end - load > 0.9
    page = " ".join(ln.strip() for ln in text.split("\n\n", 1)[0].splitlines()[1:])
    # (WebPageTest's Start Render before it, the HAR's _startRender 100 ms on the same clock: report 28)
    render = j["browser_events"]["start_render"]
    assert load - render == pytest.approx((on - first["pageTimings"]["_startRender"]) / 1000, abs=0.0015)
    w = j["webpagetest_ttfb"]  # (the 202 challenge page first: WebPageTest's TTFB, its first 200/304, beside it)
    # (the Start Render before the first response byte: the browser's value, marked so since review 31)
    assert page.startswith(f"Page, from its first packet: TTFB {1000 * ttfb:.1f} ms (first response byte; by WebPageTest's rule — "
                           f"its first 200 or 304 response, request {w['exchange']} — {1000 * w['ttfb']:.1f} ms on the wire), "
                           f"last response byte {1000 * end:.1f} ms; the browser's Start Render (HAR) {1000 * render:.1f} ms "
                           f"(before the page's first response byte: the browser's value, not checked), "
                           f"Load event (HAR) {1000 * load:.1f} ms"), page
    assert "page load" not in text.lower().split("\n\n", 2)[0] + text.lower().split("\n\n", 2)[1]
    # the per-protocol columns: the first and last response byte of that protocol from the page's
    # start (h3's first response 1.59 s in: not its requests' own TTFB), said so under the table
    block = text.split("Traffic (", 1)[1].split("\n\n", 1)[0].splitlines()
    head = [h.strip() for h in block[1].split("  ") if h.strip()]
    assert head[-2:] == ["first byte", "last byte"] and "TTFB" not in head and "load" not in head
    h3 = next(ln for ln in block if ln.startswith("h3 "))
    p3 = j["protocols"]["h3"]
    assert h3.split()[-4:] == [f"{1000 * p3['ttfb']:.1f}", "ms", f"{1000 * p3['page_load_time']:.1f}", "ms"]
    notes = text.split("Traffic (", 1)[1].split("\n\n", 2)[1]
    assert notes.startswith("first byte, last byte: the first and the last response byte of the row's page requests")
    assert "not its requests' own TTFB" in " ".join(ln.strip() for ln in notes.splitlines())
    # readable at 100 columns: the table titles and every note line (the TUI's tab does not wrap)
    for part in text.split("\n\n"):
        first_line = part.splitlines()[0]
        if first_line.startswith(("Traffic", "Header bytes")):
            assert len(first_line) <= 100, first_line
    assert all(len(ln) <= 100 for ln in notes.splitlines())
    assert all(len(ln) <= 100 for ln in text.split("\n\n", 1)[0].splitlines()[1:])


def test_stats_without_a_browser_log_says_the_load_event_is_not_it(amazon):
    text = _stats(amazon)
    page = " ".join(ln.strip() for ln in text.split("\n\n", 1)[0].splitlines()[1:])
    assert "last response byte" in page and "not the browser's load event" in page and "--har" in page
    assert "the browser's" not in page.split(" — ")[0]
