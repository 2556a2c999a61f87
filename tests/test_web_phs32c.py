"""The web app's Statistics tab offers Wireshark's Protocol Hierarchy (Statistics → Protocol
Hierarchy; ``wirefall stats --phs``): an indented table of protocol, percent packets, packets,
percent bytes and bytes, computed only when the person presses its button, in the analysis
workers (a "computing…" state meanwhile), and saying so when there is none to compute (a browser
log alone, or the capture file gone).

The truth: ``tshark -q -z io,phs`` with the capture's key log and the decode preferences
tests/test_phs32b.py gives it, node by node for the nodes both trees know (test_phs32b lists
those that differ by design: a layer tshark repeats per PDU, items wirefall does not decode);
the percentages are each node's share of tshark's top node (every packet, every byte).
"""
from __future__ import annotations

import shutil
import subprocess
import threading

import pytest
import tshark_tap
from conftest import SAMPLES
from test_phs32b import NOT_DECODED, REPEATED, _parse
from webfix import browser_fixture, needs_chromium, new_page, private_cache, serving, wait_text

PAGE = SAMPLES / "page"
browser = browser_fixture()
pytestmark = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")

# tshark's node paths left out with all below them (as test_phs32b's EXCEPTIONS, for these captures)
EXCEPTIONS = {
    "page-h2": {"eth/ip/tcp/tls/http2/http2": REPEATED},
    "page-h3": {"eth/ip/udp/quic/http3/http3": REPEATED, "eth/ip/udp/quic/quic/quic/http3/http3": REPEATED},
}

# each row of the page's table: [depth, protocol, % packets, packets, % bytes, bytes] as shown
ROWS_JS = """() => Array.from(document.querySelectorAll('#phs-table tbody tr')).map(tr => {
    const td = tr.querySelectorAll('td');
    return [parseInt(td[0].dataset.depth, 10), ...Array.from(td).map(c => c.innerText.trim())];
})"""


def _tshark(name: str, an) -> dict[str, tuple[int, int]]:
    cap, keys = PAGE / f"{name}.pcapng", PAGE / f"{name}.keys"
    cmd = ["tshark", "-n", "-q", "-r", str(cap), *tshark_tap.decode_args(an), "-o", f"tls.keylog_file:{keys}", "-z", "io,phs"]
    return _parse(subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=600).stdout)


def _excepted(name: str, path: str) -> bool:
    parts = path.split("/")
    return any(p in NOT_DECODED for p in parts) or any("/".join(parts[:i]) in EXCEPTIONS[name] for i in range(1, len(parts) + 1))


def _paths(rows) -> dict[str, list]:
    """The table's rows by their node path (from each row's depth), as {"eth/ip/tcp": row}."""
    out: dict[str, list] = {}
    stack: list[str] = []
    for row in rows:
        depth, proto = row[0], row[1]
        assert 0 <= depth <= len(stack), rows
        stack[depth:] = [proto]
        out["/".join(stack)] = row
    return out


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    from wirefall.ui.web import WebState

    d = tmp_path_factory.mktemp("webphs32c")
    with private_cache(d / "xdg"):
        st = WebState(use_cache=False)
        ids = {n: st.add_file(str(PAGE / f"{n}.pcapng"), [str(PAGE / f"{n}.keys")]).id for n in ("page-h2", "page-h3")}
        ids["har"] = st.add_file(str(PAGE / "pw-h2.har.gz")).id
        for cid in ids.values():
            assert st.wait(cid, 120).status == "done"
        with serving(st) as url:
            yield st, url, ids


def _open_stats(pg, url: str, cid: str) -> None:
    pg.goto(f"{url}?capture={cid}&tab=stats")
    pg.wait_for_selector("#phs-go")


@pytest.mark.slow
@needs_chromium
@pytest.mark.parametrize("name", ["page-h2", "page-h3"])
def test_table_is_tsharks_phs_and_computed_only_when_asked(served, browser, name):
    pytest.importorskip("playwright.sync_api", reason="playwright for Python not installed")
    from wirefall.ui.web import views

    st, url, ids = served
    e = st.get(ids[name])
    theirs = _tshark(name, e.analysis)
    for p in EXCEPTIONS[name]:
        assert p in theirs, f"{name}: exception {p!r} is not in tshark's tree (fixed? remove it)"
    pg = new_page(browser)
    try:
        _open_stats(pg, url, ids[name])
        wait_text(pg, "#phs-out", "Not computed yet")
        pg.wait_for_timeout(500)  # (the page's first callbacks have run: still nothing computed)
        assert views.PHS_KEY not in e.jobs and not pg.locator("#phs-table").count()
        pg.click("#phs-go")
        pg.wait_for_selector("#phs-table", timeout=60_000)
        rows = pg.evaluate(ROWS_JS)
        mine = _paths(rows)
        top_frames, top_bytes = theirs["eth"]
        compared = [p for p in theirs if not _excepted(name, p)]
        assert len(compared) >= 5
        wrong = [(p, theirs[p], mine.get(p)) for p in compared
                 if p not in mine or (int(mine[p][3].replace(",", "")), int(mine[p][5].replace(",", ""))) != theirs[p]]
        extra = [p for p in mine if p not in theirs and not _excepted(name, p)]
        assert not wrong and not extra, f"{name}: (node, tshark, page) {wrong}; only on the page {extra}"
        for p in compared:  # each node's share of all packets and bytes, with one decimal as Wireshark's window
            f, b = theirs[p]
            assert mine[p][2] == f"{100 * f / top_frames:.1f}%" and mine[p][4] == f"{100 * b / top_bytes:.1f}%", (p, mine[p])
        # indented by depth, as a tree
        pads = pg.evaluate("() => Array.from(document.querySelectorAll('#phs-table td.proto')).map(td => "
                           "[parseInt(td.dataset.depth, 10), parseFloat(getComputedStyle(td).paddingLeft)])")
        assert all(pad == 6 + 18 * depth for depth, pad in pads) and max(d for d, _ in pads) >= 4
        wait_text(pg, "#phs-note", f"{top_frames:,} packets ({top_bytes:,} bytes)")
        assert pg.locator("#phs-go").inner_text() == "Compute again"
        assert not pg.errors, pg.errors
    finally:
        pg.context.close()


@pytest.mark.slow
@needs_chromium
def test_computing_is_shown_while_the_worker_counts(served, browser, monkeypatch):
    """The count runs in a worker: the page says "computing…" (the button disabled) until it is
    done, then shows the table, polling for it (a held stand-in for the count)."""
    pytest.importorskip("playwright.sync_api", reason="playwright for Python not installed")
    from wirefall.ui.web import views

    st, url, ids = served
    e = st.get(ids["page-h3"])
    e.jobs.pop(views.PHS_KEY, None)
    go, real = threading.Event(), views.protocol_hierarchy_of
    monkeypatch.setattr(views, "protocol_hierarchy_of", lambda entry: (go.wait(60), real(entry))[1])
    pg = new_page(browser)
    try:
        _open_stats(pg, url, ids["page-h3"])
        pg.click("#phs-go")
        wait_text(pg, "#phs-out", "computing…")
        assert pg.locator("#phs-go").is_disabled()
        pg.wait_for_timeout(1200)  # (polls meanwhile answer "computing…" again)
        assert e.jobs[views.PHS_KEY].status == "running" and "computing…" in pg.inner_text("#phs-out")
        go.set()
        pg.wait_for_selector("#phs-table", timeout=60_000)
        assert pg.evaluate(ROWS_JS)[0][1:4] == ["eth", "100.0%", f"{e.analysis.packets:,}"]
        assert not pg.locator("#phs-go").is_disabled()
        assert not pg.errors, pg.errors
    finally:
        go.set()
        pg.context.close()


@pytest.mark.slow
@needs_chromium
def test_browser_log_alone_says_it_has_no_packets(served, browser):
    pytest.importorskip("playwright.sync_api", reason="playwright for Python not installed")
    st, url, ids = served
    assert st.get(ids["har"]).analysis.source == "har"
    pg = new_page(browser)
    try:
        _open_stats(pg, url, ids["har"])
        wait_text(pg, "#phs-out", "No protocol hierarchy")
        assert "browser log" in pg.inner_text("#phs-none") and "no packets" in pg.inner_text("#phs-none")
        assert pg.locator("#phs-go").is_disabled() and not pg.locator("#phs-table").count()
        assert not pg.errors, pg.errors
    finally:
        pg.context.close()


def _wait_job(e, key, timeout: float = 60.0):
    import time

    end = time.monotonic() + timeout
    while e.jobs[key].status in ("queued", "running") and time.monotonic() < end:
        time.sleep(0.02)
    return e.jobs[key]


def test_capture_file_gone_says_so(tmp_path):
    """The file deleted after its analysis (never opened for packets since): the section says it
    cannot be read, not an empty hierarchy; the stats tab shown (no press) computes nothing."""
    from wirefall.ui.web import WebState, views
    from wirefall.ui.web.app import cb_phs

    cap = tmp_path / "gone.pcapng"
    shutil.copy(PAGE / "page-h2.pcapng", cap)
    with private_cache(tmp_path / "xdg"):
        st = WebState(use_cache=False)
        try:
            e = st.wait(st.add_file(str(cap), [str(PAGE / "page-h2.keys")]).id, 120)
            assert e.status == "done"
            out, poll_off, btn_off, _ = cb_phs(st, e.id, trigger="stats-key")
            assert views.PHS_KEY not in e.jobs and poll_off and not btn_off
            cap.unlink()
            cb_phs(st, e.id, trigger="phs-go")
            assert _wait_job(e, views.PHS_KEY).status == "done"
            out, poll_off, btn_off, label = cb_phs(st, e.id, trigger="phs-poll")
            assert poll_off and label == "Compute again"
            assert out.id == "phs-none" and "cannot be read" in out.children
        finally:
            st.close()


def test_captured_names_are_escaped():
    """A protocol name is shown as text with control and bidi characters escaped (printable), as
    every captured string of the page (names come from the dissection, but the page's rules hold)."""
    from wirefall.ui.web import views

    res = {"tree": [{"protocol": "eth\x1b]0;x\u202e<b>", "frames": 1, "bytes": 60, "children": []}], "packets": 1, "bytes": 60}
    td = views.phs_table(res).children[1].children[0].children[0]
    assert td.children == "eth\\x1b]0;x\\u202e<b>"
