"""Row labels readable at a glance (session 30), against WebPageTest's own result of the amazon
load (../shared/captures/hars/webpagetest-amazon.har.gz, its first page: the same 15 requests
as pageload-amazon/amazon1.cap, in the same order), which labels each row ``host - file``.

Before: the label's host…path had 44 characters at any width and kept the host whole, so the
six images-na.ssl-images-amazon.com rows showed 5-6 characters of their file names
(``…/csm-ca….js``, ``…/Client….js``) on the web page at 1100/1500/1920 px, in the HTML and PNG
exports alike: 6 of the 13 rows with a file showed fewer than 10 of its characters.  Now the
label takes its share of the figure's width (``figures.url_chars_for``), the file comes
before the host (the host cut to its start and registrable domain, ``host_floor``), and a cut
file keeps its start and its end (``csm-captcha-inst….min.js``): no row shows fewer than 10
characters of its file, and no two URLs read the same."""
from __future__ import annotations

import gzip
import json
import re
from functools import lru_cache
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from wirefall.ui import figures
from wirefall.ui import waterfall_layout as L

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "captures"
CAP, KEYS = SHARED / "pageload-amazon" / "amazon1.cap.gz", SHARED / "pageload-amazon" / "amazon1.key_log.txt.gz"
HAR = SHARED / "hars" / "webpagetest-amazon.har.gz"


def file_name(url: str) -> str:
    """The file a URL names: its path's last segment (no query; a directory's last name)."""
    return urlsplit(url).path.rstrip("/").rsplit("/", 1)[-1]


def file_chars_shown(text: str) -> int:
    """How many characters of its file a label's host/path text shows (its last segment, ``…`` not counted)."""
    t = text.removesuffix("?…").rstrip("/")
    return len(t.rsplit("/", 1)[-1].replace("…", ""))


def counts(urls: list[str], texts: list[str]) -> tuple[int, int]:
    """(a) rows whose text is another row's of a different URL, (b) rows showing fewer than 10
    characters of their file (all of a shorter one)."""
    a = sum(1 for u, t in zip(urls, texts) if any(t == t2 and u != u2 for u2, t2 in zip(urls, texts)))
    b = sum(1 for u, t in zip(urls, texts) if file_name(u) and file_chars_shown(t) < min(10, len(file_name(u))))
    return a, b


def _need() -> None:
    if not (CAP.exists() and KEYS.exists() and HAR.exists()):
        pytest.skip("../shared/captures (amazon load and WebPageTest's HAR) not present")


@lru_cache(maxsize=1)
def _wpt() -> tuple[tuple[str, str, str], ...]:
    """WebPageTest's rows of the load: (URL, host, file) as its waterfall labels them (``_host`` - file)."""
    log = json.loads(gzip.decompress(HAR.read_bytes()))["log"]
    first = log["pages"][0]["id"]
    return tuple((e["request"]["url"], e["_host"], file_name("https://h" + e["_url"])) for e in log["entries"]
                 if e["pageref"] == first)


@lru_cache(maxsize=1)
def _wf():
    from wirefall.analyzer import waterfall
    from wirefall.analyzer.pipeline import analyze

    return waterfall.build(analyze(str(CAP), keylogs=[str(KEYS)]))


def _texts(fig) -> list[str]:
    """The host/path text of each drawn label (its last word: number, marks, glyphs and badge before it)."""
    import html

    return [html.unescape(re.sub(r"<[^>]*>", "", t)).replace("\xa0", " ").split()[-1] for t in fig.layout.yaxis.ticktext]


def _check_rows(texts: list[str], wf) -> None:
    """Each label names its request as WebPageTest does: its file's start and extension, its host
    (whole, or its start — what tells a domain's hosts apart — and its end)."""
    wpt = _wpt()
    assert [r.url for r in wf.rows] == [u for u, _h, _f in wpt]  # (the same load: WebPageTest's first page)
    for (_url, host, fname), text in zip(wpt, texts):
        shown_host = text.split("/", 1)[0]
        assert shown_host == host or ("…" in shown_host and host.startswith(shown_host.split("…")[0][:6])
                                      and host.endswith(shown_host.rsplit("…", 1)[1])), (host, text)
        if fname:
            assert fname[:8] in text, (fname, text)
            ext = fname.rsplit(".", 1)[1] if "." in fname[1:] else ""
            assert not ext or len(ext) > 4 or text.removesuffix("?…").endswith("." + ext), (fname, text)


@pytest.mark.slow
def test_amazon_labels_show_each_file_as_webpagetest_names_it():
    """The PNG (1400 px) and the HTML page / web page (laid out for 1200 px): no row shows fewer
    than 10 characters of its file (6 did), no two URLs read the same, every row its number."""
    _need()
    wf = _wf()
    urls = [r.url for r in wf.rows]
    png = figures.waterfall_figure(wf, hover=False)
    page = figures.waterfall_figure(wf, hover=True, responsive=True)
    for fig in (png, page):
        texts = _texts(fig)
        assert counts(urls, texts) == (0, 0), texts
        _check_rows(texts, wf)
        nums = [re.sub(r"<[^>]*>", "", t).replace("\xa0", " ").split() for t in fig.layout.yaxis.ticktext]
        assert [next(w for w in ws if w.isdigit() and int(w) == i + 1) for i, ws in enumerate(nums)]  # (its number, after a mark)
    t = _texts(png)
    # WebPageTest: "images-na.ssl-images-amazon.com - csm-captcha-instrumentation.min.js"; was ".../…/csm-ca….js"
    assert t[8] == "images-na.ssl-images-amazon.com/…/csm-captcha-instrume….min.js"
    assert t[1] == "1c5c1ecf7303.c0b160fb.us-east-1.toke…awswaf.com/…/challenge.js"  # (the file whole, its host cut first)
    assert t[12].startswith("images-na.ssl-images-amazon.com/…/ClientSideMetrics") and t[12].endswith("._V2_.js")
    assert _texts(page)[8] == "images-na.ssl-…amazon.com/…/csm-captcha-in….min.js"  # (the file before the host)
    # a wider graph (a 1920 px page's, as the web page gives it: views.label_room_for): the whole file names
    wide = _texts(figures.waterfall_figure(wf, hover=True, responsive=True, label_room=1800))
    _check_rows(wide, wf)
    assert wide[8] == "images-na.ssl-images-amazon.com/images/G/01/…/csm-captcha-instrumentation.min.js"
    whole = [f for (_u, _h, f), text in zip(_wpt(), wide) if f and f in text]
    assert len(whole) == 10, wide  # (all but the 56-, 69- and 132-character names, cut with both ends)


def test_the_label_budget_follows_the_room():
    """The host…path characters grow with the figure's width (44 at any width before), the badge
    column is as wide as the widest badge (8 for "h2" before), and the page's graph width sets the
    web figure's room in steps of 100 px (else the width it is laid out for)."""
    from wirefall.ui.web import views

    fixed = L.row_label_fixed(2) + 10
    got = [figures.url_chars_for(px, fixed) for px in (670, 900, 1200, 1400, 1900)]
    assert got == sorted(got) and got[0] == figures.URL_CHARS_MIN and got[-1] > 80, got
    assert figures.url_chars_for(1200, fixed) > L.LABEL_CHARS  # (the page laid out for 1200 px: more than the old 44)
    assert views.label_room_for(1200) == 1200 and views.label_room_for(670) == 670
    assert views.label_room_for(1200, 1472) == 1400 and views.label_room_for(1200, 1892) == 1800
    assert views.label_room_for(1200, 10**6) == views.LABEL_ROOM_MAX and views.label_room_for(1200, float("nan")) == 1200

    class R:  # (a row as row_label reads it)
        index, badge, markers, url = 0, "h2", (), "https://www.example.com/a.js"

    assert L.badge_width([R]) == 2 and L.row_label(R, 24, badge_chars=2) == "   1      h2 www.example.com/a.js    "


def test_short_url_keeps_the_file_before_the_host():
    """The cut keeps the file's start and end and the host's start and registrable domain; with
    more room the file never loses characters (44 kept the host whole and the file 10: 43 gave
    it 21); directories are whole or elided, never cut."""
    u9 = "https://images-na.ssl-images-amazon.com/images/G/01/csminstrumentation/csm-captcha-instrumentation.min.js"
    waf = "https://1c5c1ecf7303.c0b160fb.us-east-1.token.awswaf.com/1c5c1ecf7303/d6a7a58005ec/04c5ab18cd2d/challenge.js"
    assert L.host_floor("1c5c1ecf7303.c0b160fb.us-east-1.token.awswaf.com") == "1c5c1e…awswaf.com"
    assert L.host_floor("images-na.ssl-images-amazon.com") == "images-na.ssl-images-amazon.com"  # (its domain: ssl-images-amazon.com)
    assert L.host_floor("www.bbc.co.uk") == "www.bbc.co.uk" and L.host_floor("127.0.0.1:8080") == "127.0.0.1:8080"
    shown = [file_chars_shown(L.short_url(u9, n)) for n in range(36, 70)]
    # (a character a host's dot gave back may go to the file: at most 1 less at the next width)
    assert all(b >= a - 1 for a, b in zip(shown, shown[1:])) and shown[-1] == len("csm-captcha-instrumentation.min.js"), shown
    assert all(b >= a for a, b in zip(shown, shown[2:])), shown
    for n in range(24, 90):
        for url in (u9, waf):
            s = L.short_url(url, n)
            assert len(s) <= n and ("/…/" in s or "…/" in s), (n, s)
            assert not re.search(r"/[^/…]+…/", s), (n, s)  # (no directory cut in its middle: "/im…/")
    assert L.short_url(u9, 54) == "images-na.ssl-im…amazon.com/…/csm-captcha-inst….min.js"
    assert L.short_url(waf, 40) == "1c5c1ecf7303.c…awswaf.com/…/challenge.js"  # (the host cut, not the file)
    assert L.short_url(waf, 30) == "1c5c…awswaf.com/…/challenge.js"  # (its registrable domain kept)
    assert L.short_host("images-na.ssl-images-amazon.com", 20) == "images-na…amazon.com"  # (was "images-na.…mazon.com")


@pytest.mark.slow
def test_the_web_page_draws_the_labels_and_keeps_the_full_url():
    """The amazon load in the web app at 1500 px, as a person sees it (Playwright, headless
    Chromium): the labels drawn show each file (the counts above: 0 and 0, were 0 and 6); the
    hover text and the request detail hold the full URL.  Screenshot: SHOTS/labels30-amazon-1500.png."""
    _need()
    pytest.importorskip("playwright.sync_api")
    import sys
    import tempfile

    sys.path.insert(0, str(Path(__file__).parent))
    from webfix import CHROMIUM, chromium, new_page, private_cache, row_labels, serving, shot, wait_rows

    if not Path(CHROMIUM).exists():
        pytest.skip("chromium not installed")
    from wirefall.ui.web import WebState

    urls = [u for u, _h, _f in _wpt()]
    d = Path(tempfile.mkdtemp(prefix="labels30-"))
    with private_cache(d / "xdg"):
        st = WebState()
        cid = st.add_file(str(CAP), [str(KEYS)], name="amazon1.cap").id
        assert st.wait(cid, 300).status == "done"
        with serving(st) as url, chromium() as browser:
            pg = new_page(browser, width=1500, height=900)
            pg.goto(url + f"?capture={cid}")
            wait_rows(pg, 15)
            labels = row_labels(pg)
            texts = [x.split()[-1] for x in labels]
            assert counts(urls, texts) == (0, 0), labels
            _check_rows(texts, _wf())
            assert texts[8] == "images-na.ssl-images-amazon.com/…/csm-captcha-instrume….min.js", texts  # (the 1500 px page: its graph is 1400 px wide)
            shot(pg, "labels30-amazon-1500.png")
            hover = pg.evaluate("""() => JSON.stringify(document.querySelector('#waterfall .js-plotly-plot').data
                                   .map(t => t.hovertext || t.text || ''))""")
            assert urls[8] in hover
            pg.goto(url + f"?capture={cid}&sel=9")
            pg.wait_for_function("u => document.querySelector('#request-detail') && "
                                 "document.querySelector('#request-detail').innerText.replace(/\\s+/g, '').includes(u)",
                                 arg=urls[8])
            assert not pg.errors, pg.errors
