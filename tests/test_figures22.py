"""The waterfall figure's row labels (host whole, then the path's start; the query elided
first) and a filtered figure (its rows' own numbers, "N of M requests shown — filter: …",
no marker of a request it does not show): the web review's findings 4 and 6
(docs/WATERFALL.md, "Rows" and "The image")."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from functools import lru_cache
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from wirefall.analyzer import waterfall
from wirefall.analyzer.pipeline import analyze
from wirefall.ui import exports, figures
from wirefall.ui import figures_marks as M
from wirefall.ui import waterfall_layout as L

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "sample_captures" / "page"
AMAZON = ROOT.parent / "shared" / "captures" / "pageload-amazon"
H3 = 'protocol == "h3"'


@lru_cache(maxsize=4)
def _analysis(cap: str, keys: str):
    return analyze(cap, keylogs=[keys])


@lru_cache(maxsize=4)
def _requests_json(cap: str, keys: str) -> tuple[dict, ...]:
    out = subprocess.run([sys.executable, "-m", "wirefall", "requests", cap, "--keylog", keys, "--json"], capture_output=True,
                         text=True, cwd=ROOT.parent, timeout=300)
    assert out.returncode == 0, out.stderr[-500:]
    return tuple(json.loads(out.stdout))


def _amazon() -> tuple[str, str]:
    cap, kl = AMAZON / "amazon1.cap.gz", AMAZON / "amazon1.key_log.txt.gz"
    if not cap.exists():
        pytest.skip("amazon capture not present")
    return str(cap), str(kl)


def _page_h2() -> tuple[str, str]:
    return str(PAGE / "page-h2.pcapng"), str(PAGE / "page-h2.keys")


def _labels(fig) -> list[str]:
    return [re.sub(r"<[^>]*>", "", t).replace("\xa0", " ") for t in fig.layout.yaxis.ticktext]


def _host_in(label: str, host: str) -> bool:
    """The host whole in the label, or cut in its middle with both ends kept (3 characters of
    its start at least, and its registrable domain where that leaves a quarter for the start)."""
    if host in label:
        return True
    for word in label.split():
        a, sep, b = word.partition("…")
        b = b.split("/", 1)[0].removesuffix("…")  # (a path's directories elided: "host…/file")
        if sep and len(a) >= 3 and len(b) >= 3 and host.startswith(a) and host.endswith(b) and len(a) + len(b) < len(host):
            return True
    return False


@pytest.mark.slow
@pytest.mark.parametrize("which", ["amazon", "page-h2"])
def test_every_label_names_its_host_and_fits_the_label_column(which):
    """Each row's label holds the request's host as `requests --json` gives it (whole, or its
    elided form keeps both ends and the registrable domain), and fits in the figure's label
    column (its left margin); two hosts never read the same."""
    cap, keys = _amazon() if which == "amazon" else _page_h2()
    truth = {r["id"]: r for r in _requests_json(cap, keys)}
    wf = waterfall.build(_analysis(cap, keys))
    for url_chars in (L.LABEL_CHARS, 24):
        fig = figures.waterfall_figure(wf, hover=False, url_chars=url_chars)
        labels = _labels(fig)
        host_text: dict[str, set[str]] = {}
        for r, lab in zip(wf.rows, labels):
            host = urlsplit(truth[r.exchange]["url"]).netloc
            assert _host_in(lab, host), (lab, host)
            path = urlsplit(truth[r.exchange]["url"]).path
            if url_chars == L.LABEL_CHARS and len(host) + 3 + len(path.rstrip("/").rsplit("/", 1)[-1]) <= url_chars:
                assert host in lab, (lab, host)  # (the host whole where the file fits beside it: session 30 cuts it before the file)
            short = L.short_url(r.url, url_chars)
            assert len(short) <= url_chars and "?" not in short.replace("?…", ""), short  # (the query is elided first)
            host_text.setdefault(short.split("/", 1)[0], set()).add(host)
            assert len(lab) * figures.CHAR_PX + 8 <= fig.layout.margin.l, (lab, fig.layout.margin.l)
        assert all(len(hs) == 1 for hs in host_text.values()), host_text


def test_short_url_keeps_the_host_and_the_file_and_drops_the_query_first():
    """WebPageTest labels a row by host and file; the leading directories of a site's assets
    (amazon's /images/G/01/…) are the same on every row, so the file is kept before them (a
    review: rows read ``imag…d08d.js``, ``imag…79_.png``, told apart only by hovering)."""
    assert L.short_url("https://fls-na.amazon.com/1/batch/1/OE/") == "fls-na.amazon.com/1/batch/1/OE/"
    u = "https://images-na.ssl-images-amazon.com/images/G/01/AUIClients/AmazonUI-3c913031596ca78a3768f4e934b1cc02ce238101.secure.min._V1_.css"
    s = L.short_url(u)
    # (review 27: the file's start first; session 30: the file before the host — it read "images-na.ssl-images-amazon.com/…/Amazo….css")
    assert s == "images-na.s…amazon.com/…/AmazonUI-3c9…1_.css" and len(s) == L.LABEL_CHARS, s
    assert L.short_url(u, 66) == "images-na.ssl-images-amazon.com/…/AmazonUI-3c913031596ca…._V1_.css"  # (the host whole with room)
    assert L.short_url("https://h.example/images/G/01/csminstrumentation/csm-captcha-instrumentation.min.js", 36) == \
        "h.example/…/csm-captcha-inst….min.js"
    assert L.short_url("https://h.example/images/G/01/x/csm.min.js", 30) == "h.example/images/…/csm.min.js"
    # files that differ only before their extension stay apart at every width (page-h1's photo-1/-2)
    for n in range(24, 45):  # (24: the narrowest label column the figures draw)
        a, b = L.short_url("https://127.0.0.1:59887/img/photo-1.jpg", n), L.short_url("https://127.0.0.1:59887/img/photo-2.jpg", n)
        assert a != b and a.endswith(".jpg"), (n, a, b)
    q = L.short_url("https://www.example.com/search/results?q=" + "x" * 80)
    assert q == "www.example.com/search/results?…", q
    long_host = "1c5c1ecf7303.c0b160fb.us-east-1.token.awswaf.com"
    s = L.short_url(f"https://{long_host}/1c5c1ecf7303/d6a7a58005ec/04c5ab18cd2d/challenge.js")
    host, path = s.split("/", 1)
    assert host.startswith("1c5c1ecf7303") and host.endswith("awswaf.com") and "…" in host, s
    assert path == "…/challenge.js", s  # (the path's start "1c5…" was kept before the host: session 30 gives it to the host)
    assert L.registrable("images-na.ssl-images-amazon.com") == "ssl-images-amazon.com"
    assert L.registrable("www.bbc.co.uk") == "bbc.co.uk" and L.registrable("127.0.0.1:59833") == "127.0.0.1:59833"
    for n in (8, 12, 24, 38, 44, 60):
        for url in (u, f"https://{long_host}/x", "https://[2600:9000:215a:6200:7:49a5:5fd6:da1]:443/a/b/c/d/e/f/g.js", "", "https://x.com"):
            assert len(L.short_url(url, n)) <= max(n, len("(no URL)")), (url, n)


def _amazon_filtered():
    cap, keys = _amazon()
    an = _analysis(cap, keys)
    wf = waterfall.build(an)
    shown = exports._filtered(an, wf, H3)
    return wf, shown


@pytest.mark.slow
def test_a_filtered_figure_keeps_the_rows_numbers_and_says_it_is_filtered():
    """amazon1, `protocol == "h3"`: the six rows keep the numbers the unfiltered view gives
    them (3, 4, 6, 7, 12, 13; they were 1-6), their connections keep their ids, the title
    says "6 of 15 requests shown — filter: protocol == "h3"", the HTML's first byte (request 1,
    not shown) is not drawn, and the page's last byte says its request is not shown."""
    wf, shown = _amazon_filtered()
    want = [r.index + 1 for r in wf.rows if r.protocol == "h3"]
    assert want == [3, 4, 6, 7, 12, 13] and len(shown.rows) == 6
    fig = figures.waterfall_figure(shown, hover=False, unfiltered=wf, filter_text=H3)
    nums = [int(lab.split()[0]) if lab.split()[0].isdigit() else int(lab.split()[1]) for lab in _labels(fig)]
    assert nums == want, _labels(fig)
    title = fig.layout.title.text
    assert "6 of 15 requests shown — filter: protocol == \"h3\"" in title, title
    notes = [a.text for a in fig.layout.annotations]
    assert not any("First byte of the HTML" in t for t in notes), notes
    assert any(t.startswith("Last byte of the last response (request 15, not shown)") for t in notes), notes
    conns = [t.split()[0] for t in fig.layout.yaxis2.ticktext]
    assert conns == [f"#{cn.connection}" for cn in wf.connection_rows if any(wf.rows[i].protocol == "h3" for i, _a, _b in cn.requests)], conns
    # unfiltered: the same figure as before, every milestone, no note
    full = figures.waterfall_figure(wf, hover=False)
    assert "requests shown" not in full.layout.title.text
    assert any("First byte of the HTML" in a.text for a in full.layout.annotations)


@pytest.mark.slow
def test_export_with_a_filter_writes_it_in_the_html(tmp_path):
    cap, keys = _amazon()
    an = _analysis(cap, keys)
    out = tmp_path / "h3.html"
    exports.export(an, str(out), expr=H3)
    text = out.read_text()
    assert "6 of 15 requests shown — filter: protocol == \\\"h3\\\"" in text
    assert "First byte of the HTML" not in text and "(request 15, not shown)" in text
    with pytest.raises(ValueError):  # (a filter applies to the images only)
        exports.export(an, str(tmp_path / "h3.har"), expr=H3)
    out2 = tmp_path / "none.html"
    exports.export(an, str(out2), expr='url contains "no-such-thing"')
    assert "0 of 15 requests shown" in out2.read_text() and "no request matches the filter" in out2.read_text()


def test_the_filter_text_is_escaped_and_cut():
    cap, keys = _page_h2()
    an = _analysis(cap, keys)
    wf = waterfall.build(an)
    shown = L.subset(wf, wf.rows[2:5])
    evil = 'url contains "<img src=x onerror=alert(1)>"' + " or url contains \"x\"" * 20
    fig = figures.waterfall_figure(shown, hover=True, unfiltered=wf, filter_text=evil)
    title = fig.layout.title.text
    assert "<img" not in title and "&lt;img src=x onerror=alert(1)&gt;" in title and "3 of 13 requests shown" in title
    assert len(M.filter_note(3, 13, evil)) < 200
    nums = [lab.split()[0] for lab in _labels(fig)]
    assert nums == ["3", "4", "5"], nums
    assert "wirefall — page-h2.pcapng — 3 of 13 requests shown" in figures.html_document(fig).decode()


def test_only_a_hidden_requests_milestones_change():
    """Every milestone of an unfiltered figure is drawn as before (each request milestone finds
    its row); a subset without the HTML's row leaves its first byte out and says the page's
    last byte belongs to a request not shown; without ``unfiltered`` (the web app's subset
    alone) the same, its request not named."""
    for name in ("page-h2", "page-h1", "bg-mixed"):
        cap, keys = str(PAGE / f"{name}.pcapng"), str(PAGE / f"{name}.keys")
        wf = waterfall.build(_analysis(cap, keys))
        assert [(ms, ms.label) for ms in wf.milestones] == M.shown_milestones(wf), name
        for ms in wf.milestones:
            if ms.name in M.REQUEST_MILESTONES + M.PAGE_ROW_MILESTONES:
                assert M.milestone_rows(ms, wf.rows, wf.page_info.document), (name, ms)
    cap, keys = _page_h2()
    wf = waterfall.build(_analysis(cap, keys))
    html_row = M.milestone_rows(wf.milestone("html_first_byte"), wf.rows)[0]
    last_rows = M.milestone_rows(wf.milestone("page_load"), wf.rows)  # (responses that ended in the same packet: each)
    shown = L.subset(wf, [r for r in wf.rows if r is not html_row and r not in last_rows])
    names = {ms.name: label for ms, label in M.shown_milestones(shown, None, None)}
    assert "html_first_byte" not in names and names["page_load"].endswith("(its request not shown)"), names
    numbers = {r.exchange: r.index + 1 for r in wf.rows}
    names = {ms.name: label for ms, label in M.shown_milestones(shown, numbers, wf)}
    assert names["page_load"].endswith(f"(request {last_rows[-1].index + 1}, not shown)"), names


def test_cli_export_takes_a_display_filter(tmp_path):
    """`wirefall export -Y EXPR` draws the requests the filter keeps and says so; a data format
    with a filter, or a bad filter, is refused with exit 2 (nothing written)."""
    cap, keys = PAGE / "page-h2.pcapng", PAGE / "page-h2.keys"
    out = tmp_path / "css.html"
    cmd = [sys.executable, "-m", "wirefall", "export", str(cap), "--keylog", str(keys), "-o"]
    r = subprocess.run([*cmd, str(out), "-Y", 'url contains "css"'], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    an = analyze(str(cap), keylogs=[str(keys)])
    css = [e for e in an.exchanges if "css" in (e.url or "")]
    assert len(css) == 2
    assert f"{len(css)} of {len(an.exchanges)} requests shown" in out.read_text()
    for bad, fname in (('url contains "css"', "x.json"), ("url == ", "y.html")):
        r = subprocess.run([*cmd, str(tmp_path / fname), "-Y", bad], capture_output=True, text=True, timeout=120)
        assert r.returncode == 2 and not (tmp_path / fname).exists(), r.stderr


@pytest.mark.parametrize("which", ["amazon", "page-h1"])
def test_a_preconnected_rows_text_is_its_requests_own_time_first(which):
    """A request sent ≥ PRECONNECT_IDLE after its connection was ready (amazon's h3 document,
    on a connection Chrome raced for the favicon; page-h1's third connection) is labelled with
    its own time, request's first byte to response's last (the exchange's wire times, checked
    against tshark elsewhere), then the connection's lead — not the total a reader quoted (278 ms
    for a 25 ms request).  Every other row: its total.  The figure draws that text."""
    cap, keys = _amazon() if which == "amazon" else (str(PAGE / "page-h1.pcapng"), str(PAGE / "page-h1.keys"))
    an = _analysis(cap, keys)
    wf = waterfall.build(an)
    exs = {e.id: e for e in an.exchanges}
    fig = figures.waterfall_figure(wf, hover=False)
    texts = {a.text for a in fig.layout.annotations or []} | {t for d in fig.data for t in (getattr(d, "text", None) or ()) if isinstance(t, str)}
    pre = 0
    for r in wf.rows:
        e = exs[r.exchange]
        txt = L.row_duration_text(r)
        if waterfall.preconnected(r.phases) is None:
            assert txt == L.duration_text(r.duration)
            continue
        pre += 1
        own, lead = e.response_end - e.request_start, e.request_start - r.start
        assert lead >= waterfall.PRECONNECT_IDLE
        assert txt == f"{L.duration_text(round(own, 6))} (+{L.duration_text(round(lead, 6))} preconnect)", (txt, own, lead)
        assert any(txt in t for t in texts), txt
    assert pre == 1
