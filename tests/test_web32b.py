"""Web app fixes of session 32 (b), each against an outside truth:

- the Compare view shows the verdict (analyzer.compare.verdict: who got its last response byte
  sooner, where each side's time went, what makes the loads unlike) above its page table, the
  lines `wirefall compare A B` prints there (the CLI's own text, run as a person runs it);
- the request detail's "content encoding": the response's Content-Encoding as tshark reads it
  (http.content_encoding), "none" where the response had none (it was a blank cell), "<unknown>"
  where its headers are not known;
- an upload's line says at once that a new file is being checked (the previous file's line
  stayed until the check ended), and "Analyse upload" pressed meanwhile says so (it answered
  "upload a capture first"): the upload route is held open by the browser test itself.
"""
from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SAMPLES
from webfix import browser_fixture, needs_chromium, new_page, private_cache, serving

PAGE = SAMPLES / "page"
NGINX = SAMPLES / "http" / "http1-nginx.pcap"
browser = browser_fixture()


def _cells(comp, out: list) -> list:
    """Every html.Td's text of a Dash component tree, in order."""
    from dash import html

    if isinstance(comp, (list, tuple)):
        for c in comp:
            _cells(c, out)
        return out
    if isinstance(comp, html.Td):
        out.append(comp.children)
    ch = getattr(comp, "children", None)
    if ch is not None and not isinstance(ch, str):
        _cells(ch, out)
    return out


def _encoding_cell(tree) -> str:
    cells = _cells(tree, [])
    return cells[cells.index("content encoding") + 1]


def _tshark_encodings(frames: list[int]) -> dict[int, str]:
    """Each response's Content-Encoding by the frame its headers start in ("" where it had none):
    tshark's http.content_encoding, or where tshark does not read the frame as a response's start
    (in the pipelined burst tshark takes the HEAD's answer for a response whose body runs to the
    connection's close, and the next answer for that body) the header block in the frame's bytes
    as tshark gives them (tcp.payload)."""
    def run(*args: str) -> list[list[str]]:
        out = subprocess.run(["tshark", "-r", str(NGINX), *args], capture_output=True, text=True, check=True).stdout
        return [ln.split("\t") for ln in out.splitlines()]

    res = {int(f): enc for f, enc in run("-Y", "http.response", "-T", "fields", "-e", "frame.number", "-e", "http.content_encoding")
           if int(f) in frames}
    rest = [f for f in frames if f not in res]
    if rest:
        for f, payload in run("-Y", " || ".join(f"frame.number == {f}" for f in rest), "-T", "fields", "-e", "frame.number",
                              "-e", "tcp.payload"):
            head = bytes.fromhex(payload).split(b"\r\n\r\n")[0].decode("latin-1").split("\r\n")
            assert head[0].startswith("HTTP/1.1 ")
            res[int(f)] = next((ln.split(":", 1)[1].strip() for ln in head[1:] if ln.lower().startswith("content-encoding:")), "")
    return res


def test_detail_content_encoding_is_tsharks_or_none(tmp_path):
    from wirefall.analyzer.request_detail import request_detail as detail_of
    from wirefall.ui.web import WebState, views

    with private_cache(tmp_path / "xdg"):
        st = WebState(use_cache=False)
        try:
            e = st.wait(st.add_file(str(NGINX)).id, 60)
            an = e.analysis
            responded = [x for x in an.exchanges if x.status is not None]
            assert len(responded) == 13  # (nginx's access log: 13 lines)
            shown = {x.response_start_packet: _encoding_cell(views.request_detail(e, x.id)) for x in responded}
            truth = _tshark_encodings(sorted(shown))
            assert list(truth.values()).count("") >= 5 and list(truth.values()).count("gzip") >= 5
            assert shown == {f: enc or "none" for f, enc in truth.items()}
            # headers not known (no response header block read): "<unknown>", not "none" nor a blank
            x = responded[0]
            d = detail_of(an, x)
            gone = dataclasses.replace(d, response_headers=[], sizes=dataclasses.replace(d.sizes, content_encoding=None))
            assert _encoding_cell(views.detail_layout(gone)) == "<unknown>"
            # a header name not decoded might have been Content-Encoding: not "none"
            odd = dataclasses.replace(gone, response_headers=[(":status", "200"), ("<unknown>", "gzip")])
            assert _encoding_cell(views.detail_layout(odd)) == "<unknown>"
        finally:
            st.close()


def _cli_verdict(a: str, b: str) -> list[str]:
    """The verdict lines of `wirefall compare A B`: those between the side lines' blank line and the next."""
    out = subprocess.run([str(Path(sys.executable).parent / "wirefall"), "compare", "--keylog", f"{a}.keys", "--keylog-b", f"{b}.keys",
                          f"{a}.pcapng", f"{b}.pcapng"], capture_output=True, text=True, check=True, cwd=PAGE).stdout.splitlines()
    start = out.index("") + 1
    return out[start:out.index("", start)]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    from wirefall.ui.web import WebState

    d = tmp_path_factory.mktemp("web32b")
    with private_cache(d / "xdg"):
        st = WebState(use_cache=False)
        h1 = st.add_file(str(PAGE / "page-h1.pcapng"), [str(PAGE / "page-h1.keys")]).id
        h2 = st.add_file(str(PAGE / "page-h2.pcapng"), [str(PAGE / "page-h2.keys")]).id
        st.wait(h1, 60)
        st.wait(h2, 60)
        with serving(st) as url:
            yield url, h1, h2


@pytest.mark.slow
@needs_chromium
def test_compare_shows_the_clis_verdict_above_the_page_table(served, browser):
    pytest.importorskip("playwright.sync_api", reason="playwright for Python not installed")
    url, h1, h2 = served
    want = _cli_verdict("page-h1", "page-h2")
    assert want[0].startswith("faster by the last response byte: B (h2)") and len(want) >= 3
    pg = new_page(browser)
    try:
        pg.goto(f"{url}?capture={h1}&tab=compare&ca={h1}&cb={h2}")
        pg.wait_for_selector("#compare-verdict")
        pg.wait_for_selector("#compare-page")
        got = [t.strip() for t in pg.locator("#compare-verdict p").all_inner_texts()]
        assert got == want
        # above the page table
        assert pg.evaluate("() => !!(document.querySelector('#compare-verdict').compareDocumentPosition("
                           "document.querySelector('#compare-page')) & Node.DOCUMENT_POSITION_FOLLOWING)")
        assert not pg.errors, pg.errors
    finally:
        pg.context.close()


@pytest.mark.slow
@needs_chromium
def test_new_upload_replaces_the_message_at_once_and_analyse_waits_for_it(served, browser):
    pytest.importorskip("playwright.sync_api", reason="playwright for Python not installed")
    url, h1, _h2 = served
    held: list = []
    pg = new_page(browser)
    try:
        pg.goto(f"{url}?capture={h1}")
        msg = "#up-capture-msg"
        pg.set_input_files("#up-capture input[type=file]", str(PAGE / "page-h1.pcapng"))
        pg.wait_for_function("s => document.querySelector(s).innerText.includes('page-h1.pcapng (')", arg=msg)
        # the next file's upload held open (the server's check not answered yet)
        pg.route("**/_wirefall/upload/capture*", lambda route: held.append(route))
        pg.set_input_files("#up-capture input[type=file]", str(PAGE / "page-h2.pcapng"))
        pg.wait_for_function("s => document.querySelector(s).innerText.includes('a new capture chosen: being checked')", arg=msg)
        assert "page-h1" not in pg.inner_text(msg)
        for _ in range(100):  # (the route's handler runs as Playwright's events are read: polled, 10 s at most)
            if held:
                break
            pg.wait_for_timeout(100)
        assert held, "the upload was not held"
        pg.click("#btn-open")
        pg.wait_for_function("() => (document.querySelector('#open-msg') || {innerText: ''}).innerText.includes('still being checked')")
        assert "upload a capture first" not in pg.inner_text("#open-msg")
        assert "page-h2.pcapng" in pg.inner_text("#open-msg")
        # the check ends: the line names the file and its size, and Analyse opens it
        held[0].continue_()
        pg.wait_for_function("s => document.querySelector(s).innerText.includes('page-h2.pcapng (')", arg=msg)
        pg.click("#btn-open")
        pg.wait_for_function("() => (document.querySelector('#open-msg') || {innerText: ''}).innerText.includes('opened page-h2.pcapng')")
        assert not pg.errors, pg.errors
    finally:
        pg.unroute("**/_wirefall/upload/capture*")
        pg.context.close()


def _detail_path(pg) -> str:
    return pg.evaluate("() => { const h = document.querySelector('#detail-title'); return h ? h.innerText : ''; }")


@pytest.mark.slow
@needs_chromium
def test_up_down_move_the_selection_and_escape_closes(served, browser):
    """Up / Down select the row below / above as a click on it would (its detail, the address's sel),
    Escape closes the detail; the rows are nginx's requests (page-h2.server.log's paths)."""
    import re

    from webfix import row_labels, wait_rows

    pytest.importorskip("playwright.sync_api", reason="playwright for Python not installed")
    url, _h1, h2 = served
    paths = [re.search(r'"GET (\S+) HTTP/[\d.]+"', ln).group(1) for ln in (PAGE / "page-h2.server.log").read_text().splitlines()]
    pg = new_page(browser)
    try:
        pg.goto(f"{url}?capture={h2}")
        wait_rows(pg, len(paths))
        labels = row_labels(pg)
        ends = [next(p for p in sorted(paths, key=len, reverse=True) if lab.endswith(p)) for lab in labels]
        assert sorted(ends) == sorted(paths)

        def shows(i: int) -> None:  # the detail of row i, and its exchange in the address
            pg.wait_for_function("p => { const h = document.querySelector('#detail-title');"
                                 " return h && h.innerText.endsWith(p) && new URLSearchParams(location.search).has('sel'); }",
                                 arg=ends[i])
            assert not pg.evaluate("() => document.getElementById('detail-side').classList.contains('none')")

        pg.locator("#newcomer").click()  # (the focus on the page, in no box)
        for i in range(3):
            pg.keyboard.press("ArrowDown")
            shows(i)
        pg.keyboard.press("ArrowUp")
        shows(1)
        # typing in a box: the arrows are the box's (had it moved the selection, Down then Up below would end on row 2)
        pg.click("#filter-expr")
        pg.keyboard.press("ArrowDown")
        pg.locator("#newcomer").click()
        pg.keyboard.press("ArrowDown")
        shows(2)
        pg.keyboard.press("ArrowUp")
        shows(1)
        pg.keyboard.press("Escape")
        pg.wait_for_function("() => document.getElementById('detail-side').classList.contains('none')"
                             " && !new URLSearchParams(location.search).has('sel')")
        pg.keyboard.press("ArrowUp")  # nothing selected: Up takes the last row
        shows(len(ends) - 1)
        assert not pg.errors, pg.errors
    finally:
        pg.context.close()
