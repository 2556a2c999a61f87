"""Review 32 of the TUI as a person uses it (tmux at 80x24, 120x40, 200x60; Textual's pilot):
the help readable at 80 columns, search and Esc staying on the tab in use, failed rows said
failed wherever they lie, the request view's timing fitting 80 columns, "no response" not a
total of 0 ms, the browser log's moments and durations told apart, counts with separators,
no time axis over no rows, the background rows' "bg" in the legend.  Truth: tshark, the
Chrome NetLog's own events, the sample's manifest."""
from __future__ import annotations

import gzip
import json
import re

import pytest

from conftest import ROOT, SAMPLES, need_tool, run_tool
from tuifix import sync, wait_loaded

from wirefall.analyzer.pipeline import analyze
from wirefall.ui.tui.app import HELP, HELP_KEY_COLUMN, WirefallApp, help_text

PAGE = SAMPLES / "page"
BG, BGK, BGNL = PAGE / "bg-mixed.pcapng", PAGE / "bg-mixed.keys", PAGE / "bg-mixed.netlog.json.gz"
H2, H2K, H2NL = PAGE / "page-h2.pcapng", PAGE / "page-h2.keys", PAGE / "page-h2.netlog.json.gz"
LOSSY, LOSSYK = SAMPLES / "lossy" / "page-h2.pcapng", SAMPLES / "lossy" / "page-h2.keys"


def _words(markup: str) -> list[str]:
    return markup.split()


# ------------------------------------------------------------------ help at 80 columns

@sync
async def test_help_at_80_columns_wraps_each_description_under_its_key_column():
    """At 80x24 the help's lines (laid out for 112 columns) wrapped to column 0 ("Expert tab"
    under the keys, "as its label / says" cut mid-sentence).  Now every line fits the box and a
    description's next line starts at the description column; no word of HELP is lost."""
    from wirefall.ui.tui.app import HelpScreen

    app = WirefallApp(str(H2), [str(H2K)], analysis=analyze(str(H2), [str(H2K)]))
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("question_mark")
        await pilot.pause(0.2)
        assert isinstance(app.screen, HelpScreen)
        st = app.screen.query_one("#help-text")
        shown = str(st.render())
        inner = st.content_region.width
        assert inner >= 60
        lines = shown.split("\n")
        assert all(len(ln) <= inner for ln in lines), [ln for ln in lines if len(ln) > inner]
        # the words of HELP, in order, none lost (markup stripped as Textual renders it)
        plain = re.sub(r"\[/?b\]", "", HELP)
        assert shown.split() == plain.split()
        # "1 2 3 4 5 … Expert tab": its description goes on at the key column, not at column 0
        i = next(k for k, ln in enumerate(lines) if ln.startswith("  1 2 3 4 5"))
        assert lines[i + 1].startswith(" " * HELP_KEY_COLUMN) and lines[i + 1].strip()
        await pilot.press("escape")


def test_help_text_keeps_a_keyed_entry_whole():
    """The wrapper's own rule: a key's description and its continuation lines are one entry."""
    key = "  ctrl+f or f".ljust(HELP_KEY_COLUMN)
    t = help_text(60, key + "focus the display-filter bar; it filters the current tab, as its label\n"
                  + " " * HELP_KEY_COLUMN + "says (Enter applies)\n")
    lines = t.split("\n")
    assert lines[0].startswith(key + "focus")
    assert all(ln.startswith(" " * HELP_KEY_COLUMN) for ln in lines[1:] if ln)
    assert " ".join(t.split()) == "ctrl+f or f focus the display-filter bar; it filters the current tab, as its label says (Enter applies)"


# ------------------------------------------------------------------ search and Esc on the Connections tab

def _tshark_sni_server(cap, keys, sni: str) -> str:
    """The server (address:port) of the ClientHello naming ``sni`` (tshark)."""
    out = run_tool("tshark", "-r", str(cap), "-o", f"tls.keylog_file:{keys}", "-Y",
                   f'tls.handshake.extensions_server_name == "{sni}"', "-T", "fields", "-e", "ip.dst", "-e", "ipv6.dst",
                   "-e", "tcp.dstport", "-e", "udp.dstport").splitlines()
    f = [x for x in out[0].split("\t")]
    addr = f[0] or f"[{f[1]}]"
    return f"{addr}:{f[2] or f[3]}"


@sync
async def test_search_on_the_connections_tab_finds_the_connection_and_stays_there():
    """"/" on the Connections tab searched the hidden packet list and switched to Packets.
    Now it selects the first connection whose cells hold the text: for bg-mixed's
    "static.test", the server tshark's ClientHello with that SNI went to."""
    need_tool("tshark")
    want = _tshark_sni_server(BG, BGK, "static.test")
    app = WirefallApp(str(BG), [str(BGK)], analysis=analyze(str(BG), [str(BGK)]))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("3")
        await pilot.pause(0.1)
        await pilot.press("slash", *"static.test", "enter")
        await pilot.pause(0.2)
        tc = app.query_one("TabbedContent")
        assert tc.active == "connections-tab"
        dt = app.query_one("#connections")
        assert app.focused is dt
        row = [str(c) for c in dt.get_row_at(dt.cursor_row)]
        assert row[3] == want and row[9] == "static.test"
        # Esc from the filter bar goes back to this tab's table, not to the packet list
        await pilot.press("f")
        await pilot.press("escape")
        await pilot.pause(0.1)
        assert tc.active == "connections-tab" and app.focused is dt
        # the Statistics tab has no list: said so, the tab kept
        await pilot.press("4", "slash")
        await pilot.pause(0.1)
        assert tc.active == "statistics"
        assert any("no list to search" in n.message for n in app._notifications)


# ------------------------------------------------------------------ failed rows, in view or not

def _netlog_failed(path) -> dict[int, int]:
    """URL_REQUEST source id -> its net_error, for the requests the NetLog says failed."""
    d = json.load(gzip.open(path))
    c = d["constants"]
    st = {v: k for k, v in c["logSourceType"].items()}
    out: dict[int, int] = {}
    for e in d["events"]:
        p = e.get("params") or {}
        if st.get(e["source"]["type"]) == "URL_REQUEST" and p.get("net_error"):
            out[e["source"]["id"]] = p["net_error"]
    return out


@sync
async def test_failed_rows_say_failed_in_view_and_out_of_it():
    """bg-mixed with its NetLog: the requests the NetLog ends with ERR_NAME_NOT_RESOLVED (-105)
    read "failed" beside their bar; out of the view (left of the page's span, or panned past)
    they read "← 0.00 ms" / "0.00 ms →", a request that took no time."""
    failed = _netlog_failed(BGNL)
    assert set(failed.values()) == {-105} and len(failed) == 5
    app = WirefallApp(str(BG), [str(BGK)], overlays=[("netlog", str(BGNL))])
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app, must_load=True)
        await pilot.press("2")
        await pilot.pause(0.2)
        wv = app.query_one("#wf-list")
        rows = {i: r for i, r in enumerate(wv.rows) if r.browser and int(r.browser.get("id", -1)) in failed}
        assert len(rows) == 5
        outside = 0
        for zoom in ("", "plus", "plus"):
            if zoom:
                await pilot.press(zoom)
                await pilot.pause(0.05)
            for i, r in rows.items():
                text = wv.bar_text(i)
                assert "failed" in text and not re.search(r"\d ms", text), (r.exchange, text)
                outside += r.end < wv.v0 or r.start > wv.v1
        assert outside  # (some were out of the view: the case fixed)


# ------------------------------------------------------------------ the request view at 80 columns

def _tshark_first(cap, keys, flt: str) -> int:
    out = run_tool("tshark", "-r", str(cap), "-o", f"tls.keylog_file:{keys}", "-Y", flt, "-T", "fields", "-e", "frame.number")
    return int(out.split()[0])


def test_request_view_timing_lines_fit_the_80_column_dialog():
    """lossy page-h2 request 1: the idle phase's label ("Connection idle (ready, request not yet
    sent)") made the label column 47 wide, so at 80 columns (the dialog's 71) each line's packet
    numbers wrapped alone.  The column is as wide as the short labels; the parenthesis follows
    the numbers.  The request's HEADERS packet is tshark's."""
    need_tool("tshark")
    from wirefall.ui.tui.app import request_text
    from wirefall.analyzer.waterfall import build

    an = analyze(str(LOSSY), [str(LOSSYK)])
    wf = build(an)
    e = next(x for x in an.exchanges if x.id == 1)
    r = next(x for x in wf.rows if x.exchange == 1)
    text = request_text(an, e, r, wf).plain
    timing = text.split("Timing (", 1)[1].split("\n\n", 1)[0].split("\n")[1:]
    headers = _tshark_first(LOSSY, LOSSYK, "http2.streamid == 1 && http2.type == 1")
    idle = next(ln for ln in timing if ln.strip().startswith("Connection idle (ready, request not yet sent)"))
    assert idle.rstrip().endswith(f"→ {headers}]") and len(idle) <= 70
    sent = next(ln for ln in timing if ln.strip().startswith("Request sent"))
    assert sent.rstrip().endswith(f"[{headers}]") and len(sent) <= 70
    assert all(len(ln) <= 70 for ln in timing)  # (the dialog's 71 columns at 80)
    others = [ln for ln in timing if " ms" in ln and ln is not idle]
    assert len({ln.index(" ms") for ln in others}) == 1  # one column of numbers, the long label's apart


def test_request_without_response_says_so_beside_its_total(tmp_path):
    """page-h2 with bytes of the server's stream damaged in the middle of the file: the later
    requests have no response tshark can decrypt either (no server HEADERS on their stream).
    Their request view said "total 0.000 ms" as of a request that took no time; the waterfall
    says "no response".  (The number stays: --json and the web give it.)"""
    need_tool("tshark")
    from wirefall.ui.tui.app import request_text
    from wirefall.analyzer.waterfall import build

    raw = bytearray(H2.read_bytes())
    mid = len(raw) // 2
    raw[mid: mid + 400] = b"\xff" * 400
    bad = tmp_path / "damaged-h2.pcapng"
    bad.write_bytes(bytes(raw))
    an = analyze(str(bad), [str(H2K)])
    wf = build(an)
    server_headers = set(run_tool("tshark", "-r", str(bad), "-o", f"tls.keylog_file:{H2K}", "-Y",
                                  'http2.type == 1 && http2.header.name == ":status"', "-T", "fields",
                                  "-e", "http2.streamid").split())
    seen = 0
    for e in an.exchanges:
        r = next(x for x in wf.rows if x.exchange == e.id)
        text = request_text(an, e, r, wf).plain
        total = next(ln for ln in text.split("\n") if ln.strip().startswith("total"))
        if str(e.stream_id) in {s for v in server_headers for s in v.split(",")}:
            assert re.search(r"\d+\.\d{3} ms$", total), total
        else:
            seen += 1
            assert total.endswith("ms  (no response in the capture: its request's own time)"), total
    assert seen  # (the damage left some without a response)


# ------------------------------------------------------------------ the browser log's moments and durations

def test_browser_table_says_moments_apart_from_durations():
    """page-h2 with its NetLog: the "response start" line (a moment: tshark's packet time and
    the NetLog's READ_RESPONSE_HEADERS, ms since the first packet) sits under "moments"; send,
    wait and receive (lengths) under "durations (ms)", not under "ms since the first packet"."""
    need_tool("tshark")
    from test_browserlog import _netlog_sent
    from test_browserlog_ui import _packet_times

    from wirefall.ui.tui.overlay import comparison_text

    from wirefall.analyzer.browserlog import overlay

    an = analyze(str(H2), [str(H2K)])
    overlay(an, str(H2NL), kind="netlog")
    times = _packet_times(H2)
    t0 = times[1]
    sent = _netlog_sent(H2NL)
    e = next(x for x in an.exchanges if x.id == 1)
    lines = comparison_text(an, e).plain.split("\n")
    m = lines.index("  moments (ms since the first packet)")
    d = lines.index("  durations (ms)")
    assert m < d
    rs = next(ln for ln in lines[m:d] if ln.startswith("  response start"))
    cells = re.findall(r"(-?\d+\.\d{3}) ms", rs)
    pkt = int(rs.rsplit("[", 1)[1].rstrip("]"))
    assert float(cells[0]) == pytest.approx((times[pkt] - t0) * 1000, abs=0.0011)
    assert float(cells[1]) == pytest.approx((sent[int(e.browser["id"])]["headers_at"] - t0) * 1000, abs=0.0011)
    end = lines.index("", d)  # (the table ends at the blank line before "Fields by source")
    after = [ln.split()[0] for ln in lines[d + 1:end]]
    assert {"send", "wait", "receive"} <= set(after) and not {"request", "response", "connect"} & set(after)


# ------------------------------------------------------------------ counts, empty axis, legend

@pytest.mark.slow
@sync
async def test_status_counts_requests_with_a_separator():
    """h2-small: 60,000 requests (the CLI's count) read "60000 requests" beside "183,936 frames"."""
    cap = ROOT / "benchmarks" / "corpus" / "h2-small.pcap"
    if not cap.exists():
        pytest.skip("benchmark corpus not here")
    n = len(json.loads(run_tool(str(ROOT / ".venv" / "bin" / "wirefall"), "requests", str(cap), "--keylog",
                                str(cap.with_suffix(".keys")), "--json")))
    app = WirefallApp(str(cap), [str(cap.with_suffix(".keys"))])
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app, steps=600, must_load=True)
        assert f"· {n:,} requests ·" in str(app.query_one("#status").render())


@sync
async def test_no_time_axis_over_no_rows(tmp_path):
    """page-h2 with a key log holding no secret: no request (tshark decrypts no HTTP/2 frame
    either); the axis showed ticks 0ms … 800ms of a default second over no row."""
    need_tool("tshark")
    empty = tmp_path / "none.keys"
    empty.write_text("")
    assert not run_tool("tshark", "-r", str(H2), "-o", f"tls.keylog_file:{empty}", "-Y", "http2", "-T", "fields",
                        "-e", "frame.number").strip()
    app = WirefallApp(str(H2), [str(empty)])
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app, must_load=True)
        await pilot.press("2")
        await pilot.pause(0.2)
        assert app.query_one("#wf-list").count == 0
        axis = str(app.query_one("#wf-axis").render())
        assert "┊" not in axis and "ms" not in axis


def test_legend_names_the_background_rows():
    """bg-mixed: the metadata server's requests (169.254.169.254, the manifest's metadata_server)
    are background rows, "bg" and grey; the legend said what "bg" means nowhere."""
    from wirefall.analyzer.waterfall import build
    from wirefall.ui.tui.widgets import waterfall_legend

    roles = json.loads((PAGE / "bg-mixed.manifest.json").read_text())["roles"]
    an = analyze(str(BG), [str(BGK)])
    wf = build(an)
    meta = [r for r in wf.rows if roles["metadata_server"] in (r.url or "")]
    assert meta and all(r.background for r in meta)
    assert "bg background traffic, not the page's" in waterfall_legend("", rows=wf.rows).plain
    page = [r for r in wf.rows if not r.background]
    assert "bg background" not in waterfall_legend("", rows=page).plain
