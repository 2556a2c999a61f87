"""The TUI's follow-ups of review 32c.

- The Statistics tab's protocol hierarchy (key p): Wireshark's Statistics → Protocol Hierarchy
  (``analyzer.stats.protocol_hierarchy``) computed when asked, in a thread, shown as Wireshark's
  window shows it (a row per node, indented, packets and bytes and their percentages of the
  capture's).  Outside truth: ``tshark -q -z io,phs`` node by node for the nodes both name
  (tests/test_phs32b.py's exceptions and known differences), and the capture's packets and
  bytes as tshark counts them (``frame.len``) for the percentages.
- Over the compare view L (the colour key) and 5 (a tab of the main view) do nothing.
- The compare view's page table has the rows `wirefall compare` prints for the same pair: the
  browser's page events and a HAR page's figures only where a side has them.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import threading

import pytest
import test_phs32b as ref
import tshark_tap
from conftest import ROOT, SAMPLES
from tuifix import sync, wait_compare, wait_loaded

textual = pytest.importorskip("textual")

from textual.widgets import DataTable, Static  # noqa: E402

from wirefall.ui.tui.app import TextScreen, WirefallApp  # noqa: E402
from wirefall.ui.tui.compare import CompareScreen  # noqa: E402

TSHARK = shutil.which("tshark")
needs_tshark = pytest.mark.skipif(TSHARK is None, reason="tshark not installed")
PAGE = SAMPLES / "page"


def _shown(app) -> str:
    return str(app.query_one("#phs", Static).render())


def _rows(text: str) -> tuple[tuple[str, str, int, str, int], dict[str, tuple[str, int, str, int]]]:
    """The shown tree: its "frame" row (name, % packets, packets, % bytes, bytes) and every node
    below it by its path as tshark's phs text names it ("eth/ip/tcp")."""
    lines = text.splitlines()
    head = next(i for i, ln in enumerate(lines) if ln.startswith("Protocol ") and "Percent Packets" in ln)
    nodes: dict[str, tuple[str, int, str, int]] = {}
    stack: list[str] = []
    frame = None
    for ln in lines[head + 1:]:
        m = re.match(r"^( *)(\S+) +(\S+) +([\d,]+) +(\S+) +([\d,]+)$", ln)
        if not m:
            break
        cells = (m.group(3), int(m.group(4).replace(",", "")), m.group(5), int(m.group(6).replace(",", "")))
        depth = len(m.group(1)) // 2
        if depth == 0:
            assert m.group(2) == "frame" and frame is None, ln
            frame = (m.group(2), *cells)
            continue
        stack[depth - 1:] = [m.group(2)]
        nodes["/".join(stack)] = cells
    assert frame is not None, text
    return frame, nodes


async def _open_phs(pilot, app) -> str:
    await pilot.press("4")
    await pilot.pause(0.05)
    assert "press p to compute it" in _shown(app)
    await pilot.press("p")
    for _ in range(400):
        await pilot.pause(0.05)
        if app.phs is not None:
            break
    await pilot.pause(0.05)
    return _shown(app)


@needs_tshark
@pytest.mark.parametrize("name", ["http1-nginx", "page-h2", "page-h3"])
@sync
async def test_statistics_tab_protocol_hierarchy_is_tsharks(name):
    """Each node both trees name: the packets and bytes shown are tshark's (its known differences
    applied), the percentages those of tshark's packet and byte totals; no node of wirefall's own
    outside the excepted subtrees; the "frame" row is the capture as tshark counts it."""
    cap, keys = ref.CAPS[name]
    app = WirefallApp(str(cap), [str(keys)] if keys else [])
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_loaded(pilot, app, must_load=True)
        text = await _open_phs(pilot, app)
        an = app.an
    theirs = ref._tshark_phs(cap, keys, tshark_tap.decode_args(an))
    lens = [int(x) for x in subprocess.run([TSHARK, "-n", "-r", str(cap), "-T", "fields", "-e", "frame.len"], capture_output=True,
                                           text=True, check=True, timeout=120).stdout.split()]
    packets, total = len(lens), sum(lens)
    frame, mine = _rows(text)
    assert frame == ("frame", "100.0", packets, "100.0", total)
    want = dict(theirs)
    for p, ((df, db), _why) in ref.DIFFERENCES.get(name, {}).items():
        want[p] = (theirs[p][0] + df, theirs[p][1] + db)
    compared = [p for p in theirs if ref._excepted(name, p) is None]
    assert len(compared) >= 4
    wrong = []
    for p in compared:
        f, b = want[p]
        if mine.get(p) != (f"{100 * f / packets:.1f}", f, f"{100 * b / total:.1f}", b):
            wrong.append((p, want[p], mine.get(p)))
    extra = [p for p in mine if p not in theirs and ref._excepted(name, p) is None]
    assert not wrong and not extra, f"(node, tshark, shown) {wrong}; only shown: {extra}"


@sync
async def test_computed_when_asked_in_a_thread(monkeypatch):
    """Not at load nor on opening the tab; p says "computing…" while a thread reads the packets
    (the UI answering meanwhile), then the tree; p hides it, p shows it again without reading
    the packets a second time."""
    from wirefall.analyzer import stats

    calls: list[str] = []
    go = threading.Event()
    real = stats.protocol_hierarchy

    def slow(an, source=None):
        calls.append(threading.current_thread().name)
        go.wait(20)
        return real(an, source)

    monkeypatch.setattr(stats, "protocol_hierarchy", slow)
    cap, _ = ref.CAPS["http1-nginx"]
    app = WirefallApp(str(cap), [])
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_loaded(pilot, app, must_load=True)
        await pilot.press("4")
        await pilot.pause(0.1)
        assert calls == [] and "press p to compute it" in _shown(app)
        await pilot.press("p")
        await pilot.pause(0.2)
        assert "computing the protocol hierarchy… (it reads the headers of every packet: 74)" in _shown(app)
        assert len(calls) == 1 and calls[0] != threading.current_thread().name
        await pilot.press("2")  # (the UI thread is free: the tab changes while the thread waits)
        await pilot.pause(0.05)
        assert app.query_one("#tabs").active == "waterfall"
        await pilot.press("4")
        go.set()
        for _ in range(100):
            await pilot.pause(0.05)
            if app.phs is not None:
                break
        await pilot.pause(0.05)
        frame, nodes = _rows(_shown(app))
        assert frame[2] == 74 and nodes["eth/ip/tcp/http"][1] == 23  # (tshark's, test_phs32b)
        await pilot.press("p")
        await pilot.pause(0.05)
        assert "press p to compute it" in _shown(app)
        await pilot.press("p")
        await pilot.pause(0.05)
        assert _rows(_shown(app))[0] == frame and len(calls) == 1
        # the key is the Statistics tab's: elsewhere it does nothing
        await pilot.press("1")
        await pilot.pause(0.05)
        assert "p" not in app.screen.active_bindings or not app.screen.active_bindings["p"].enabled


@sync
async def test_null_said_not_zero(tmp_path):
    """No packets to count: a browser log opened alone, or the capture file gone since it was
    read — said, with no row of numbers (0 packets would read as an empty capture)."""
    har = PAGE / "pw-h2.har.gz"
    app = WirefallApp(str(har), [])
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_loaded(pilot, app, must_load=True)
        text = await _open_phs(pilot, app)
    assert "no packets to count: a browser log opened alone" in text and "Percent Packets" not in text, text

    cap, _ = ref.CAPS["http1-nginx"]
    gone = tmp_path / "gone.pcap"
    shutil.copy(cap, gone)
    app = WirefallApp(str(gone), [])
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_loaded(pilot, app, must_load=True)
        gone.unlink()
        text = await _open_phs(pilot, app)
    assert "no packets to count: the capture file cannot be read" in text and "Percent Packets" not in text, text


@sync
async def test_compare_view_swallows_L_and_5():
    """Over the compare view L opened the packet colours' key (there is no packet list there)
    and 5 is a main-view tab: neither does anything."""
    a, b = PAGE / "page-h1.pcapng", PAGE / "page-h2.pcapng"
    app = WirefallApp(str(a), [str(PAGE / "page-h1.keys")], compare=str(b), keylogs_b=[str(PAGE / "page-h2.keys")])
    async with app.run_test(size=(160, 48)) as pilot:
        scr = await wait_compare(pilot, app)
        assert scr.loaded, scr.error
        tab = scr.query_one("#cmp-tabs").active
        for key in ("L", "5"):
            await pilot.press(key)
            await pilot.pause(0.1)
            assert app.screen is scr and not any(isinstance(s, TextScreen) for s in app.screen_stack), key
            assert scr.query_one("#cmp-tabs").active == tab
        await pilot.press("escape")
        await wait_loaded(pilot, app)
        await pilot.press("L")  # (on the main view it still opens)
        await pilot.pause(0.1)
        assert isinstance(app.screen, TextScreen)


def _cli_page_rows(args: list[str]) -> list[list[str]]:
    """`wirefall compare`'s page table as it prints it: the rows after the ruler, until the notes
    (each line split on runs of two spaces or more; a label keeps its indent)."""
    env = {k: v for k, v in os.environ.items() if k != "SSLKEYLOGFILE"}
    env["PYTHONPATH"] = str(ROOT)
    out = subprocess.run([sys.executable, "-m", "wirefall", "compare", *args], capture_output=True, text=True, env=env, cwd=ROOT,
                         timeout=300, check=True).stdout.splitlines()
    ruler = next(i for i, ln in enumerate(out) if ln.startswith("---"))
    widths = [len(c) for c in out[ruler].split("  ")]
    rows = []
    for ln in out[ruler + 1:]:
        if not ln.strip() or ln.startswith("(A − B) / A:"):
            break
        label, rest = ln[:widths[0]].rstrip(), ln[widths[0]:]
        rows.append([label, *(c.strip() for c in re.split(r" {2,}", rest.strip()))])
    return rows


@pytest.mark.parametrize("har", [False, True])
@sync
async def test_compare_page_table_rows_are_the_clis(har):
    """The page table's rows and cells are those `wirefall compare` prints for the pair: bare,
    no browser page event row (neither side has one: the TUI listed them as "–" on both sides);
    with A's HAR laid over, its load event and DOMContentLoaded rows, B's cells "–"."""
    a, b, ka, kb, la = (PAGE / n for n in ("pw-h1.pcapng", "pw-h2.pcapng", "pw-h1.keys", "pw-h2.keys", "pw-h1.har.gz"))
    args = [str(a), str(b), "--keylog", str(ka), "--keylog-b", str(kb)] + (["--har", str(la)] if har else [])
    cli = _cli_page_rows(args)
    labels = [r[0] for r in cli]
    assert ("browser load event, onload (s)" in labels) == har and ("browser DOMContentLoaded (s)" in labels) == har
    app = WirefallApp(str(a), [str(ka)], compare=str(b), keylogs_b=[str(kb)], overlays=[("har", str(la))] if har else None)
    async with app.run_test(size=(200, 50)) as pilot:
        scr: CompareScreen = await wait_compare(pilot, app, steps=600)
        assert scr.loaded, scr.error
        dt = scr.query_one("#cmp-page", DataTable)
        shown = [[str(c) for c in dt.get_row_at(i)] for i in range(dt.row_count)]
    assert shown == cli
