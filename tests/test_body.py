"""The body view (analyzer/body.py) and where it is shown (TUI request view and follow stream,
web request detail): kinds, decoding and escaping against the real bodies the servers sent."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from wirefall.analyzer.body import TEXT_CHARS, body_view, body_views, view_bytes
from wirefall.analyzer.pipeline import analyze

ROOT = Path(__file__).resolve().parent.parent
S = ROOT / "sample_captures"
sys.path.insert(0, str(ROOT / "scripts" / "hostile"))
import objects_inputs  # noqa: E402


def _ex(an, suffix):
    return next(e for e in an.exchanges if (e.url or "").endswith(suffix))


@pytest.fixture(scope="module")
def h3():
    return analyze(str(S / "page/page-h3.pcapng"), keylogs=[str(S / "page/page-h3.keys")])


@pytest.fixture(scope="module")
def page_files(tmp_path_factory):
    """The page's files as the HTTP/1 load delivered them (wirefall objects = tshark's export, tests/test_objects.py)."""
    from wirefall.analyzer.objects import export_objects

    d = tmp_path_factory.mktemp("page")
    export_objects(str(S / "page/page-h1.pcapng"), str(d / "o"), keylogs=[str(S / "page/page-h1.keys")])
    return {p.name: p.read_bytes() for p in (d / "o").iterdir()}


def test_kinds_on_the_http3_page(h3, page_files):
    v = body_view(h3, _ex(h3, "/data/config.json"))
    assert v.kind == "json" and v.mime == "application/json"
    assert v.text == json.dumps(json.loads(page_files["config.json"]), indent=2, ensure_ascii=False)
    v = body_view(h3, _ex(h3, "/img/hero.jpg"))
    assert v.kind == "image" and v.mime == "image/jpeg" and v.data == page_files["hero.jpg"] and v.size == len(v.data)
    v = body_view(h3, _ex(h3, "/css/main.css"))
    assert v.kind == "text" and v.text == page_files["main.css"].decode() and not v.truncated
    req = body_view(h3, _ex(h3, "/css/main.css"), direction=0)
    assert req.kind == "empty"


def test_content_encoding_undone_for_display():
    an = analyze(str(S / "http/h2c-node.pcap"))
    views = body_views(an, [(_ex(an, p), 1) for p in ("/gzip", "/br", "/deflate")])
    texts = {v.text for v in views.values()}
    assert len(texts) == 1 and all(v.decoded and v.size == 94500 for v in views.values())
    assert {v.content_encoding for v in views.values()} == {"gzip", "br", "deflate"}
    post = body_view(an, _ex(an, "/post"), direction=0)
    assert post.kind == "text" and post.size == 50000
    big = body_view(an, _ex(an, "/big"))
    assert big.truncated and len(big.text) <= TEXT_CHARS


def test_hostile_text_is_escaped_and_json_pretty(tmp_path):
    cap = objects_inputs.bomb(tmp_path / "b.pcap", size=4 << 20)
    an = analyze(cap)
    v = body_view(an, _ex(an, "/data.json"))
    assert v.kind == "json"
    assert "\x1b" not in v.text and "\u202e" not in v.text and "\\u001b[31m" in v.text and "\\u202e" in v.text
    assert "<script>" in v.text  # text, not markup: the web app shows it in <pre> (escaped by React)
    b = body_view(an, _ex(an, "/bomb.bin"), budget=1 << 20)
    assert b.kind == "hex" and b.truncated and b.size == 1 << 20 and b.decoded
    assert b.text.splitlines()[0].startswith("0000  00 00 00")


def test_view_bytes_rules():
    assert view_bytes(b"", "text/plain").kind == "empty"
    assert view_bytes(b"\x89PNG\r\n", "image/png").kind == "image"
    assert view_bytes(b"\x89PNG\r\n", "image/png", truncated=True).kind == "hex"  # a cut image is not shown as one
    assert view_bytes(b"<svg/>", "image/svg+xml").kind == "text"  # never rendered: SVG can script
    assert view_bytes(b"{bad json", "application/json").kind == "text"
    assert view_bytes(b"a\r\nb\tc", "text/plain").text == "a\nb\\tc"
    assert view_bytes(bytes(range(256)), None).kind == "hex"
    assert view_bytes(b"plain words", None).kind == "text"
    deep = b"[" * 100_000 + b"]" * 100_000
    assert view_bytes(deep, "application/json").kind == "text"  # too deep for json: shown as text, no crash
    assert view_bytes("é".encode("latin-1"), "text/plain; charset=iso-8859-1").text == "é"


def test_browser_log_has_no_body():
    an = analyze(str(S / "page/pw-h2.har.gz"))
    v = body_view(an, an.exchanges[0])
    assert v.kind in ("unavailable", "empty")


def test_tui_request_view_and_follow_show_content(h3):
    from wirefall.analyzer.waterfall import build
    from wirefall.ui.tui.app import follow_items, request_text

    e = _ex(h3, "/data/config.json")
    wf = build(h3)
    r = next(x for x in wf.rows if x.exchange == e.id)
    text = request_text(h3, e, r).plain
    assert "Response body (json, 3931 bytes)" in text and '"version": 3' in text
    items = follow_items(h3, e.connection, e.stream_id, None, False)
    lines = [i[0] for i in items]
    at = next(k for k, ln in enumerate(lines) if "response body of GET" in ln and "config.json" in ln)
    assert '"version": 3' in lines[at + 2] and items[at][2] is None  # content lines are not frames


def test_web_detail_shows_the_body(h3):
    from wirefall.ui.web.body import body_section

    def walk(c):
        yield c
        ch = getattr(c, "children", None)
        for x in ch if isinstance(ch, list) else ([ch] if ch is not None and not isinstance(ch, str) else []):
            yield from walk(x)

    img = body_section(h3, _ex(h3, "/img/logo.png"))
    tags = [c for c in img if type(c).__name__ == "Img"]
    assert tags and tags[0].src.startswith("data:image/png;base64,")
    txt = body_section(h3, _ex(h3, "/js/app.js"))
    pre = [c for c in txt if type(c).__name__ == "Pre"]
    assert pre and isinstance(pre[0].children, str) and pre[0].children.startswith(pre[0].children[:10])
    assert not any(type(c).__name__ in ("Iframe", "Script", "Embed", "ObjectEl") for c in walk(txt[0]))
