"""The TUI's waterfall names each request's file on an 80-column terminal (session 31), against
WebPageTest's own result of the amazon load (../shared/captures/hars/webpagetest-amazon.har.gz,
its first page: the same 15 requests as pageload-amazon/amazon1.cap, in the same order), which
labels each row ``host - file``; measured as tests/test_labels30.py measures the figures.

Before: at 80 columns the label's method and host…path had 22 characters (the bars kept 38
columns), ``short_url`` gave the host half of the URL's 18: 9 of the 15 rows showed fewer than
10 characters of their file (``images…/csm-ca….js``, ``www.am…/favic….ico``).  Now the bars keep
2/5 of the columns (32 of 80), a narrow terminal's label drops "GET" (other methods stay) and a
file that would be cut keeps its room before the host, cut to its start
(``images…/csm-captcha-i…min.js``): every row shows at least 10 characters of its file (all of a
shorter one), grouped by connection too; from 100 columns the label is as it was."""
from __future__ import annotations

from types import SimpleNamespace

import pytest
from test_labels30 import CAP, KEYS, _check_rows, _need, _wpt, counts, file_chars_shown, file_name
from tuifix import sync, wait_loaded

from wirefall.ui.tui.widgets import WaterfallView, narrow_url
from wirefall.ui.waterfall_layout import short_url


def _texts(wv: WaterfallView) -> tuple[list[str], SimpleNamespace]:
    """Each drawn label's host/path text (the word before badge and status), in the rows' numbers'
    order (WebPageTest's: the rows may be grouped), and those rows."""
    rows = sorted(wv.rows, key=lambda r: r.exchange)
    assert [r.exchange for r in rows] == list(range(1, len(rows) + 1))
    return [wv.label_text(r).split()[-3] for r in rows], SimpleNamespace(rows=rows)


def _check(wv: WaterfallView) -> list[str]:
    """Every row names its request as WebPageTest does (``_check_rows``: its file's start and
    extension, its host's start) with at least 10 characters of its file, no two URLs alike, every
    label as wide as the axis's and the bars drawn beside it."""
    texts, rows = _texts(wv)
    urls = [u for u, _h, _f in _wpt()]
    assert counts(urls, texts) == (0, 0), texts
    _check_rows(texts, rows)
    for (_u, _h, fname), text in zip(_wpt(), texts):
        assert file_chars_shown(text) >= min(10, len(fname)), (fname, text)
    labels = [wv.label_text(r) for r in wv.rows]
    assert len({len(x) for x in labels}) == 1 and wv.axis_text().index("┊") == len(labels[0]) + 1, labels
    assert all(wv.bar_text(i).strip() for i in range(wv.count))
    return texts


@pytest.mark.slow
@sync
async def test_an_80_column_terminal_names_each_amazon_file():
    """(80, 24) as a person opens it, the waterfall tab, then ``c`` (grouped by connection: 5
    columns less), then (120, 40): each row's file as WebPageTest's HAR names it, the bars 2/5 of
    the terminal at 80 (were 38 of 80 beside labels showing 6 characters of a file), the label as
    before from 100 columns ("GET" and the host's registrable domain)."""
    _need()
    from wirefall.ui.tui.app import WirefallApp

    app = WirefallApp(str(CAP), [str(KEYS)])
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app, must_load=True)
        await pilot.press("2")
        await pilot.pause(0.3)
        wv = app.query_one(WaterfallView)
        assert wv.size.width == 80 and wv.count == 15
        texts = _check(wv)
        # WebPageTest: "images-na.ssl-images-amazon.com - csm-captcha-instrumentation.min.js"; was "images…/csm-ca….js"
        assert texts[8] == "images…/csm-captcha-i…min.js", texts
        assert texts[4] == "www.amazon.com/favicon.ico" and texts[1].endswith("/challenge.js"), texts  # (whole: short_url's)
        label = wv.label_text(wv.rows[0])
        assert wv.size.width - len(label) - 2 >= 32, label  # (the bars: 2/5 of the 80 columns)
        assert " GET " not in label and " POST " in wv.label_text(wv.rows[3])  # (GET left out, POST kept)
        await pilot.press("c")
        for _ in range(100):
            await pilot.pause(0.05)
            if wv.group_by == "connection":
                break
        assert wv.group_by == "connection" and wv.rows[1].exchange == 5  # (www.amazon.com's connection: rows 1 and 5)
        _check(wv)
        await pilot.press("c")
        await pilot.pause(0.3)
        await pilot.resize_terminal(120, 40)
        await pilot.pause(0.3)
        assert wv.group_by is None and wv.size.width == 120
        texts = _check(wv)
        assert texts[8] == "images-…amazon.com/…/csm-captc…in.js" and " GET " in wv.label_text(wv.rows[8]), texts


def test_narrow_url_shows_at_least_short_urls_file():
    """On each of WebPageTest's URLs of the load and any width: no more characters than asked,
    never fewer of the file than ``short_url`` shows (which gives the host half: 11 of the file at
    28 and at 19), the file whole where ``short_url`` has it whole (its text then), else all but the
    host's start before it."""
    _need()
    for url, host, fname in _wpt():
        for n in range(14, 60):
            s, was = narrow_url(url, n), short_url(url, n)
            assert len(s) <= n and file_chars_shown(s) >= file_chars_shown(was), (n, s, was)
            if file_chars_shown(was) == len(file_name(url)):
                assert s == was
            assert host.startswith(s.split("…", 1)[0].split("/", 1)[0]), (host, s)
            if fname:  # (all but the host's start, its "…/" and the file's "…": ``images…/csm-captcha-i…min.js`` at 28)
                assert file_chars_shown(s) >= min(n - 9, len(fname)), (n, s)
