"""The TUI's and the web app's compare views say what `wirefall compare` says of an incomplete side
(issue 27): a figure that counts only what the capture holds is "≥ 0.098" (``lower_bounds``), a
difference or saving withheld is "withheld: B incomplete" — not a bare "–" —, the side's header
says "its page INCOMPLETE: …", the reason is given under the table ("no difference or saving
given: …") and beside each unmatched row, a response cut by the capture's end has its bytes
"≥ N".  One formatter for the three front-ends: ``analyzer.compare.page_cells`` (and
``page_table``, ``side_incomplete``, ``withheld_lines``, ``bytes_cell``).

Input: page-h1 (A, whole) against page-h2 cut at its 50th frame (B, ``editcap -r … 1-50``).  The
truth is tshark's: frame 50 is B's last packet, 4 of B's request streams have no ``:status`` in
the cut, and B's page load time is at most its last packet's time from B's page start."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tuifix import sync, wait_compare

from conftest import ROOT, SAMPLES, need_tool, run_tool

PAGE = SAMPLES / "page"
A, KA = PAGE / "page-h1.pcapng", PAGE / "page-h1.keys"
H2, K2 = PAGE / "page-h2.pcapng", PAGE / "page-h2.keys"
pytestmark = pytest.mark.skipif(not H2.exists(), reason="sample captures missing")

INCOMPLETE = "its page INCOMPLETE: its figures are lower bounds (≥), no difference or saving given"
LOAD = "page load time: last response byte (s)"


@pytest.fixture(autouse=True)
def _no_keylog_env(monkeypatch, tmp_path_factory):
    monkeypatch.delenv("SSLKEYLOGFILE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.getbasetemp() / "xdg-cache"))


@pytest.fixture(scope="module")
def cut(tmp_path_factory) -> tuple[Path, Path]:
    """page-h2's first 50 frames (and its key log beside it, as h2cut.keys)."""
    d = tmp_path_factory.mktemp("c")
    b, kb = d / "h2cut.pcapng", d / "h2cut.keys"
    subprocess.run([need_tool("editcap"), "-r", str(H2), str(b), "1-50"], check=True, capture_output=True)
    shutil.copy(K2, kb)
    return b, kb


@pytest.fixture(scope="module")
def truth(cut) -> dict:
    """tshark on the cut: its last frame (number, epoch time), the request streams whose response
    HEADERS (a ``:status``) are not in it."""
    b, kb = cut
    frames = run_tool("tshark", "-r", str(b), "-T", "fields", "-e", "frame.number", "-e", "frame.time_epoch").split("\n")
    last_no, last_t = [ln.split("\t") for ln in frames if ln.strip()][-1]
    streams, answered = set(), set()
    for ln in run_tool("tshark", "-r", str(b), "-o", f"tls.keylog_file:{kb}", "-Y", "http2.type==1", "-T", "fields",
                       "-e", "http2.streamid", "-e", "http2.headers.status").splitlines():
        ids, _, status = ln.partition("\t")
        sids = {int(x) for x in ids.split(",") if x}
        streams |= sids
        if status.strip():
            answered |= sids
    return {"last_frame": int(last_no), "last_time": float(last_t), "unanswered": sorted(streams - answered)}


@pytest.fixture(scope="module")
def res(cut) -> dict:
    from wirefall.analyzer.compare import compare
    from wirefall.analyzer.pipeline import analyze

    b, kb = cut
    return compare(analyze(str(A), [str(KA)]), analyze(str(b), [str(kb)]))


def test_the_facts_are_tsharks(res, truth):
    """B is incomplete by tshark's count: frame 50 its last, 4 responses with no :status; its
    page load time (a lower bound) is no later than its last packet."""
    assert truth["last_frame"] == 50
    assert len(truth["unanswered"]) == 4
    b = res["b"]
    assert res["a"]["page_complete"] and not b["page_complete"] and not res["comparable"]
    assert len(b["responses_missing"]) == len(truth["unanswered"])
    assert [w["side"] for w in res["withheld"]] == ["b"] and res["lower_bounds"]["a"] == []
    assert "page_load_time" in res["lower_bounds"]["b"]
    last = truth["last_time"] - b["page_start"]
    assert f"{last:.3f}" == "0.098" and res["page"]["page_load_time"]["b"] <= last + 1e-6


def test_one_formatter_for_the_cli_and_its_cells(res, cut):
    """``page_cells`` is what the CLI prints: each row of its text table is ``page_table``'s row."""
    from wirefall.analyzer.compare import page_cells, page_table, render_text, withheld_lines

    assert page_cells(res, "page_load_time") == ["0.338", "≥ 0.098", "–", "withheld: B incomplete"]
    text = render_text(res)
    lines = text.splitlines()
    ruler = next(i for i, ln in enumerate(lines) if ln.startswith("---"))
    tbl = page_table(res)
    assert [" ".join(ln.split()) for ln in lines[ruler - 1:ruler] + lines[ruler + 1:ruler + len(tbl)]] == \
        [" ".join(" ".join(r).split()) for r in tbl]
    for w in withheld_lines(res):
        assert w in lines
    b, kb = cut  # the CLI itself (a subprocess), unchanged
    env = {k: v for k, v in os.environ.items() if k != "SSLKEYLOGFILE"}
    env["PYTHONPATH"] = str(ROOT)
    cli = subprocess.run([sys.executable, "-m", "wirefall", "compare", str(A), str(b), "--keylog", str(KA), "--keylog-b", str(kb)],
                         capture_output=True, text=True, env=env, timeout=300, cwd=ROOT)
    assert cli.returncode == 0, cli.stderr
    row = next(ln for ln in cli.stdout.splitlines() if ln.startswith(LOAD))
    assert row.split()[-7:] == ["0.338", "≥", "0.098", "–", "withheld:", "B", "incomplete"], row
    assert next(ln for ln in cli.stdout.splitlines() if ln.startswith("B: ")).endswith(INCOMPLETE)


def _check_page_rows(rows: list[list[str]], res: dict) -> None:
    """Rows (label, A, B, B − A, saving): B's lower bounds "≥", the savings withheld said."""
    from wirefall.analyzer.compare import NO_SPEEDUP, PAGE_ROWS

    assert next(r for r in rows if r[0] == LOAD)[1:] == ["0.338", "≥ 0.098", "–", "withheld: B incomplete"]
    it = iter(rows)
    r = next(it)
    for key, label in PAGE_ROWS:  # (in order: two rows have the same label)
        p = res["page"][key]
        if r[0].strip() != label.strip():  # (a browser page event or HAR row: only when a side has it)
            assert p["a"] is None and p["b"] is None, (label, r)
            continue
        assert not r[2].startswith("≥") or key in res["lower_bounds"]["b"], (label, r)
        if key in res["lower_bounds"]["b"]:
            assert r[2].startswith("≥ "), (label, r)
        assert not r[1].startswith("≥"), (label, r)  # (A is whole)
        assert r[3] == "–", (label, r)  # (no difference given)
        if p["a"] is not None and p["b"] is not None and key not in NO_SPEEDUP:
            assert r[4] == "withheld: B incomplete", (label, r)
        else:
            assert r[4] == "–", (label, r)
        r = next(it, ["(end)"])
    assert r == ["(end)"]


# ------------------------------------------------------------------ the TUI (Textual pilot)


@sync
async def test_tui_compare_view_says_what_the_cli_says(res, cut, truth):
    pytest.importorskip("textual")
    from textual.widgets import DataTable, Static

    from wirefall.analyzer.compare import NOT_IN_INCOMPLETE, normalise_url
    from wirefall.ui.tui.app import WirefallApp
    from wirefall.ui.tui.compare import REQUEST_COLUMNS

    b, kb = cut
    app = WirefallApp(str(A), [str(KA)], compare=str(b), keylogs_b=[str(kb)])
    async with app.run_test(size=(200, 50)) as pilot:
        scr = await wait_compare(pilot, app, steps=600, settle=0.1)
        assert scr.loaded, scr.error
        got = scr.res
        dt = scr.query_one("#cmp-page", DataTable)
        page = [[str(c) for c in dt.get_row_at(i)] for i in range(dt.row_count)]
        title = str(scr.query_one("#cmp-title", Static).render()).splitlines()
        wh = scr.query_one("#cmp-withheld", Static)
        withheld, shown = str(wh.render()), wh.display
        rq = scr.query_one("#cmp-requests", DataTable)
        reqs = [[str(c) for c in rq.get_row_at(i)] for i in range(rq.row_count)]
    assert got["page"] == res["page"] and got["withheld"] == res["withheld"]
    _check_page_rows(page, res)
    # the headers: B's says its page is incomplete, A's does not
    assert title[0].startswith("A: ") and "INCOMPLETE" not in title[0]
    assert title[1].startswith("B: ") and title[1].endswith("; " + INCOMPLETE), title
    # why, under the table: the CLI's line
    assert shown and withheld.startswith("no difference or saving given: B's page is incomplete (")
    assert "4 responses not in the capture" in withheld and "0.098 s from the page's start" in withheld
    # the requests: a cut response's bytes a lower bound, no duration; an unmatched row's reason
    col = {c: i for i, c in enumerate(REQUEST_COLUMNS)}
    cut_rows = [m for m in res["matched"] if m["b"]["response"] == "cut"]
    assert len(cut_rows) == 1
    hero = next(r for r in reqs if r[0] == cut_rows[0]["url"])
    assert hero[col["bytes B"]] == f"≥ {cut_rows[0]['b']['bytes']:,}" and hero[col["dur B"]] == "–"
    assert not hero[col["bytes A"]].startswith("≥") and hero[col["why apart"]] == ""
    assert sum(1 for m in res["matched"] if m["b"]["response"] == "none") == len(truth["unanswered"])
    only = [r for r in reqs if r[0].startswith("A only: ")]
    assert len(only) == len(res["only_a"]) == 4
    for r, e in zip(only, res["only_a"]):
        assert r[col["why apart"]] == e["reason"] == NOT_IN_INCOMPLETE.format(side="B")
        assert normalise_url(e["url"]).endswith(r[0].rsplit("…", 1)[-1].split("A only: ")[-1])


@sync
async def test_tui_whole_sides_show_no_bound_nor_withheld():
    """Both sides whole (page-h1 against page-h2): no "≥", no "withheld", no INCOMPLETE, the
    withheld line hidden — the savings are given."""
    pytest.importorskip("textual")
    from textual.widgets import DataTable, Static

    from wirefall.ui.tui.app import WirefallApp

    app = WirefallApp(str(A), [str(KA)], compare=str(H2), keylogs_b=[str(K2)])
    async with app.run_test(size=(200, 50)) as pilot:
        scr = await wait_compare(pilot, app, steps=600, settle=0.1)
        assert scr.loaded, scr.error
        dt = scr.query_one("#cmp-page", DataTable)
        page = [[str(c) for c in dt.get_row_at(i)] for i in range(dt.row_count)]
        title = str(scr.query_one("#cmp-title", Static).render())
        shown = scr.query_one("#cmp-withheld", Static).display
        res = scr.res
    assert res["comparable"] and not shown and "INCOMPLETE" not in title
    flat = " ".join(" ".join(r) for r in page)
    assert "≥" not in flat and "withheld" not in flat
    load = next(r for r in page if r[0] == LOAD)
    assert load[4].endswith(" %") and load[3].startswith(("+", "-"))


# ------------------------------------------------------------------ the web app (its Dash callback called directly)


def _find(c, ident: str):
    if c is None or isinstance(c, (str, int, float)):
        return None
    if isinstance(c, (list, tuple)):
        return next((x for x in (_find(y, ident) for y in c) if x is not None), None)
    if getattr(c, "id", None) == ident:
        return c
    return _find(getattr(c, "children", None), ident)


def _text(c) -> str:
    out: list[str] = []

    def walk(x):
        if x is None:
            return
        if isinstance(x, (str, int, float)):
            out.append(str(x))
        elif isinstance(x, (list, tuple)):
            for y in x:
                walk(y)
        else:
            walk(getattr(x, "children", None))

    walk(c)
    return " ".join(out)


def _table(tbl) -> tuple[list[str], list[list[str]]]:
    thead, tbody = tbl.children
    head = [_text(th) for th in thead.children.children]
    return head, [[_text(td) for td in tr.children] for tr in tbody.children]


@pytest.fixture(scope="module")
def web():
    from wirefall.ui.web import WebState

    st = WebState(use_cache=False)
    yield st
    st.close()


def test_web_compare_tab_says_what_the_cli_says(res, cut, web):
    from wirefall.analyzer.compare import NOT_IN_INCOMPLETE, page_table
    from wirefall.ui.web.app import cb_compare

    b, kb = cut
    ea = web.add_file(str(A), [str(KA)], name=A.name)
    eb = web.add_file(str(b), [str(kb)], name=b.name)
    for e in (ea, eb):
        web.wait(e.id)
        assert e.status == "done", e.error
    out = cb_compare(web, 1, ea.id, eb.id)
    head, rows = _table(_find(out, "compare-page"))
    assert [head, *rows] == [[c.strip() for c in r] for r in page_table(res)]  # the CLI's cells, one formatter
    _check_page_rows(rows, res)
    assert _text(_find(out, "compare-side-b")).endswith("; " + INCOMPLETE)
    assert "INCOMPLETE" not in _text(_find(out, "compare-side-a"))
    why = _text(_find(out, "compare-withheld"))
    assert why.startswith("no difference or saving given: B's page is incomplete (") and "4 responses not in the capture" in why
    mh, mrows = _table(_find(out, "compare-matched"))
    cutm = next(m for m in res["matched"] if m["b"]["response"] == "cut")
    hero = next(r for r in mrows if r[0] == cutm["url"])
    assert hero[mh.index("bytes B")] == f"≥ {cutm['b']['bytes']}" and hero[mh.index("duration B ms")] == "–"
    oh, orows = _table(_find(out, "compare-only_a"))
    assert len(orows) == 4 and all(r[oh.index("reason")] == NOT_IN_INCOMPLETE.format(side="B") for r in orows)


def test_web_whole_sides_show_no_bound_nor_withheld(web):
    from wirefall.ui.web.app import cb_compare

    ea = web.add_file(str(A), [str(KA)], name=A.name)
    eb = web.add_file(str(H2), [str(K2)], name=H2.name)
    for e in (ea, eb):
        web.wait(e.id)
    out = cb_compare(web, 1, ea.id, eb.id)
    assert _find(out, "compare-withheld") is None
    flat = _text(_find(out, "compare-page")) + _text(_find(out, "compare-side-a")) + _text(_find(out, "compare-side-b"))
    assert "≥" not in flat and "withheld" not in flat and "INCOMPLETE" not in flat
