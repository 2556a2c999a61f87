"""The waterfall's filter box as a person uses it (session 32), in headless Chromium (Playwright)
on the lab page over HTTP/2 (sample_captures/page/page-h2.pcapng with its key log):

- the text typed fast is the text applied: the box was dcc's debounced input, whose answers put
  the caret back where it had been a key before once the page's timers lagged the keys; it is now
  applied on Enter or on leaving the box, as the packet filter is (PACKET_FILTER_JS → wf-expr);
- what is typed and not yet applied changes neither the rows nor the address;
- a reload (or the bookmark) shows the filter in the box and applies it, and a person typing while
  the page opens keeps what was typed (the address's filter is the layout's, not a late answer's);
- the Compare tab's captures are in the address (``ca``, ``cb``): a reload showed the tab empty
  ("Pick capture A and capture B").

The rows each filter keeps, and the requests the comparison matches, are the server's own logs of
the loads (nginx's access logs, page-h2.server.log and page-h1.server.log: one line per request
with its path), not wirefall's."""
from __future__ import annotations

import re

import pytest
from conftest import SAMPLES
from webfix import browser_fixture, needs_chromium, new_page, private_cache, row_labels, serving

pytest.importorskip("playwright.sync_api", reason="playwright for Python not installed")
PAGE = SAMPLES / "page"
pytestmark = [needs_chromium]
browser = browser_fixture()


def _paths(name: str = "page-h2") -> list[str]:
    """The paths nginx served, in its log's order ("GET /css/main.css HTTP/2.0")."""
    lines = (PAGE / f"{name}.server.log").read_text().splitlines()
    return [re.search(r'"GET (\S+) HTTP/[\d.]+"', ln).group(1) for ln in lines]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    from wirefall.ui.web import WebState

    d = tmp_path_factory.mktemp("web32")
    with private_cache(d / "xdg"):
        st = WebState(use_cache=False)
        cid = st.add_file(str(PAGE / "page-h2.pcapng"), [str(PAGE / "page-h2.keys")]).id
        h1 = st.add_file(str(PAGE / "page-h1.pcapng"), [str(PAGE / "page-h1.keys")]).id
        st.wait(cid, 60)
        st.wait(h1, 60)
        st.h1 = h1  # (test_compare_is_in_the_address)
        with serving(st) as url:
            yield cid, url, st


def _shows(pg, want: list[str]) -> None:
    """Wait until the waterfall's rows are the requests of the paths ``want`` (each row's label
    ends with its path, as the server logged it), in any order."""
    js = """w => { const t = [...document.querySelectorAll('#waterfall .ytick text')].map(e => e.textContent.replace(/\\u00a0/g, ' ').trim());
        return t.length === w.length && w.every(p => t.filter(x => x.endsWith(p)).length === 1); }"""
    try:
        pg.wait_for_function(js, arg=want, timeout=20_000)
    except Exception:  # noqa: BLE001
        raise AssertionError(f"rows {row_labels(pg)} are not the server's {want}") from None


def _filter_in_address(pg, expr: str) -> None:
    pg.wait_for_function("f => (new URLSearchParams(location.search).get('filter') || '') === f", arg=expr)


def _type(pg, text: str) -> None:
    pg.click("#filter-expr")
    pg.keyboard.press("Control+A")
    pg.keyboard.press("Delete")
    pg.keyboard.type(text, delay=5)


CASES = [  # (what is typed, the server's paths it keeps)
    ('url contains "css"', lambda p: "css" in p),
    ('url contains ".png" || url contains "/js/"', lambda p: ".png" in p or "/js/" in p),
    ('url contains "photo-"', lambda p: "photo-" in p),
]


@pytest.mark.slow
def test_text_typed_fast_is_the_filter_applied(served, browser):
    cid, url, _st = served
    paths = _paths()
    assert len(paths) == 13
    pg = new_page(browser)
    try:
        pg.goto(f"{url}?capture={cid}")
        _shows(pg, paths)
        for expr, keep in CASES:
            _type(pg, expr)
            assert pg.input_value("#filter-expr") == expr
            pg.keyboard.press("Enter")
            want = [p for p in paths if keep(p)]
            _shows(pg, want)
            _filter_in_address(pg, expr)
            assert pg.input_value("#filter-expr") == expr
            assert pg.inner_text("#shown-count").strip() == f"{len(want)} of {len(paths)} requests"
        # typed, not applied: the rows and the address stay those of the filter applied; leaving
        # the box (Tab) applies it, as Enter does
        last = [p for p in paths if CASES[-1][1](p)]
        _type(pg, 'url contains "img"')
        pg.wait_for_timeout(1000)  # (a debounced box would have sent it by now)
        _shows(pg, last)
        assert pg.evaluate("() => new URLSearchParams(location.search).get('filter')") == CASES[-1][0]
        pg.keyboard.press("Tab")
        _shows(pg, [p for p in paths if "img" in p])
        _filter_in_address(pg, 'url contains "img"')
        # cleared: every row, no filter in the address
        _type(pg, "")
        pg.keyboard.press("Enter")
        _shows(pg, paths)
        pg.wait_for_function("() => !new URLSearchParams(location.search).has('filter')")
        assert not pg.errors, pg.errors
    finally:
        pg.context.close()


@pytest.mark.slow
def test_reload_keeps_the_filter_and_what_is_being_typed(served, browser):
    cid, url, _st = served
    paths = _paths()
    expr = 'url contains "css"'
    pg = new_page(browser)
    try:
        pg.goto(f"{url}?capture={cid}")
        _shows(pg, paths)
        _type(pg, expr)
        pg.keyboard.press("Enter")
        _filter_in_address(pg, expr)
        pg.reload()
        _shows(pg, [p for p in paths if "css" in p])
        assert pg.input_value("#filter-expr") == expr
        # typing while the page opens: what is typed stays, and Enter applies it
        pg.reload()
        pg.wait_for_selector("#filter-expr")
        pg.click("#filter-expr")
        pg.keyboard.press("End")
        pg.keyboard.type(' || url contains "json"', delay=5)
        _shows(pg, [p for p in paths if "css" in p])
        pg.wait_for_timeout(500)
        assert pg.input_value("#filter-expr") == expr + ' || url contains "json"'
        pg.keyboard.press("Enter")
        _shows(pg, [p for p in paths if "css" in p or "json" in p])
        _filter_in_address(pg, expr + ' || url contains "json"')
        assert not pg.errors, pg.errors
    finally:
        pg.context.close()


def test_address_filter_is_the_layouts():
    """cb_url_in leaves the waterfall's filter to the layout that made the page (``applied``, the
    store wf-expr): an answer after the layout would undo what the person applied since; a
    layout asked without the address (no Referer) gets it from cb_url_in."""
    from dash import no_update

    from wirefall.ui.web import WebState
    from wirefall.ui.web.app import cb_url_in

    st = WebState(use_cache=False)
    try:
        search = '?filter=url+contains+%22css%22'
        assert cb_url_in(st, "/", search, 'url contains "css"')[1] is no_update
        assert cb_url_in(st, "/", search, "")[1] == 'url contains "css"'
        assert cb_url_in(st, "/", "", "")[1] is no_update and len(cb_url_in(st, "/", search)) == 8
    finally:
        st.close()


@pytest.mark.slow
def test_compare_is_in_the_address(served, browser):
    from webfix import pick

    cid, url, st = served
    both = set(_paths("page-h2")) & set(_paths("page-h1"))
    assert len(both) == 13
    matched = f"Matched requests ({len(both)}, by path and query)"
    out = "(document.querySelector('#compare-out') || {innerText: ''}).innerText"
    pg = new_page(browser)
    try:
        pg.goto(f"{url}?capture={cid}&tab=compare")
        pg.wait_for_selector("#compare-a")
        pick(pg, "compare-a", "page-h2.pcapng")
        pick(pg, "compare-b", "page-h1.pcapng")
        pg.click("#btn-compare")
        pg.wait_for_function(f"t => {out}.includes(t)", arg=matched)
        pg.wait_for_function("([a, b]) => { const q = new URLSearchParams(location.search); return q.get('ca') === a && q.get('cb') === b; }",
                             arg=[cid, st.h1])
        # another callback writes the address (a filter on the waterfall): the comparison stays in it
        pg.click("#tabs >> text=Waterfall")
        _type(pg, 'url contains "css"')
        pg.keyboard.press("Enter")
        _filter_in_address(pg, 'url contains "css"')
        pg.click("#tabs >> text=Compare")
        pg.wait_for_function("() => new URLSearchParams(location.search).get('tab') === 'compare'")
        assert "ca=" + cid in pg.url and "cb=" + st.h1 in pg.url
        # reloaded: the same two captures, compared
        pg.reload()
        pg.wait_for_function(f"t => {out}.includes(t)", arg=matched)
        assert "page-h2.pcapng" in pg.inner_text("#compare-a") and "page-h1.pcapng" in pg.inner_text("#compare-b")
        assert "A = " in pg.evaluate(f"() => {out}")
        assert not pg.errors, pg.errors
    finally:
        pg.context.close()
