"""What the capture does not show is said with the same counts on every surface (issue 20,
item 2: "a user must never read an incomplete waterfall as a complete one").

Inputs: two real Chromium page loads the capture joined late (sample_captures/quic:
page-multi-late — three QUIC and one HTTP/2 connection opened before tcpdump started;
page-h3-late — one QUIC connection), with their key logs and, for "connections not decrypted
and why", page-h3-late without its key log; for body sizes that are only lower bounds, an
aioquic exchange captured from inside its responses (scripts/quic/h3_midstream.py).

Outside truth: tshark on the same files (a TCP stream without its SYN, a QUIC connection
without a client Initial: joined mid-way; tshark cannot decrypt without the key log either),
aioquic's own record of which streams the capture cut.  The facts are those of
``analyzer.completeness``; every surface must state its headline's counts — ``wirefall
summary`` (text, --json), ``wirefall stats`` (text, --json), the HAR's comments, the SVG and
HTML waterfalls' subtitle, the TUI's notice line (its status line the headline's word, its
waterfall header not again: said once, report 28), the web app's waterfall box (its status line
the word, its figure's subtitle not again) (Textual pilot, Dash callbacks).
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from tuifix import sync

from conftest import ROOT, SAMPLES, need_tool, run_tool

from wirefall.analyzer import completeness as C
from wirefall.analyzer.pipeline import analyze

QUIC = SAMPLES / "quic"
CASES = {
    "multi-late": (QUIC / "page-multi-late.pcapng", QUIC / "page-multi-late.keys"),
    "h3-late": (QUIC / "page-h3-late.pcapng", QUIC / "page-h3-late.keys"),
    "h3-late-no-keys": (QUIC / "page-h3-late.pcapng", None),
}
pytestmark = pytest.mark.skipif(not CASES["multi-late"][0].exists(), reason="sample captures missing")
sys.path.insert(0, str(ROOT / "scripts" / "quic"))


def _env() -> dict:
    env = {k: v for k, v in os.environ.items() if k != "SSLKEYLOGFILE"}
    env["PYTHONPATH"] = str(ROOT)
    return env


@pytest.fixture(autouse=True)
def _no_keylog_env(monkeypatch, tmp_path_factory):
    monkeypatch.delenv("SSLKEYLOGFILE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.getbasetemp() / "xdg-cache"))


def _cli(*args: str) -> str:
    p = subprocess.run([sys.executable, "-m", "wirefall", *args], capture_output=True, text=True, env=_env(), timeout=300)
    assert p.returncode == 0, p.stderr
    return p.stdout


def _keyargs(keys: Path | None) -> list[str]:
    return ["--keylog", str(keys)] if keys is not None else []


class Case:
    def __init__(self, name: str):
        self.name = name
        self.cap, self.keys = CASES[name]
        self.an = analyze(str(self.cap), keylogs=[str(self.keys)] if self.keys else [])
        self.comp = C.compute(self.an)
        self.facts = C.to_dict(self.comp)
        self.head = C.headline(self.an)


_CASES: dict[str, Case] = {}


@pytest.fixture(params=list(CASES), scope="module")
def case(request) -> Case:
    if request.param not in _CASES:
        _CASES[request.param] = Case(request.param)
    return _CASES[request.param]


def counts(text: str) -> dict[str, object]:
    """The completeness counts a line of text states (the headline's phrasing)."""
    def n(pat: str) -> int:
        m = re.search(r"(\d+) " + pat, text)
        return int(m.group(1)) if m else 0

    lost = re.search(r"(\d+(?:\.\d)? [KM]?B) lost", text)
    return {"incomplete": "Incomplete" in text, "joined": n(r"connections? joined mid-way"),
            "unknown_url": n(r"requests? with unknown URL"), "unknown_other": n(r"requests? with unknown fields"),
            "body": n(r"body sizes? only a lower bound"), "lost": lost.group(1) if lost else None,
            "not_decrypted": n(r"connections? not decrypted")}


def _want(case: Case) -> dict[str, object]:
    f = case.facts
    url = f["unknown"]["url"]
    return {"incomplete": not f["complete"], "joined": len(f["joined_midway"]), "unknown_url": url,
            "unknown_other": f["requests_unknown"] - url, "body": f["unknown"]["body"],
            "lost": C._kb(f["bytes_lost"]) if f["bytes_lost"] else None, "not_decrypted": len(f["not_decrypted"])}


def _says(text: str, case: Case, where: str) -> None:
    """``text`` states the capture's completeness with the same counts as the model."""
    assert case.head in text, (where, case.head, text[:2000])
    assert counts(text) == _want(case), where


# ------------------------------------------------------------------ the facts against tshark


def _tshark_joined(cap: Path) -> int:
    """Connections opened before the capture, as tshark sees them: TCP streams without a SYN,
    UDP streams (DNS apart: the rest of these captures is QUIC) without a QUIC Initial (tshark
    itself cannot tell such a stream is QUIC: it shows it as UDP)."""
    need_tool("tshark")
    rows = run_tool("tshark", "-r", str(cap), "-T", "fields", "-E", "separator=\t", "-e", "tcp.stream", "-e", "tcp.flags.syn",
                    "-e", "tcp.flags.ack", "-e", "udp.stream", "-e", "quic.long.packet_type",
                    "-Y", "tcp || (udp && !dns)").splitlines()
    tcp, syn, udp, initial = set(), set(), set(), set()
    for ln in rows:
        ts, fs, fa, us, lpt = (ln.split("\t") + [""] * 5)[:5]
        if ts:
            tcp.add(ts)
            if fs in ("1", "True") and fa in ("0", "False"):
                syn.add(ts)
        if us:
            udp.add(us)
            if "0" in lpt.split(","):  # an Initial long header (client's or server's)
                initial.add(us)
    return len(tcp - syn) + len(udp - initial)


def test_the_facts_are_the_captures(case):
    f = case.facts
    assert len(f["joined_midway"]) == _tshark_joined(case.cap)
    assert f["requests"] == len(case.an.exchanges)
    if case.keys is None:  # tshark without the key log decrypts no HTTP/3 either
        assert not run_tool("tshark", "-r", str(case.cap), "-Y", "http3", "-T", "fields", "-e", "frame.number").strip()
        assert f["not_decrypted"] == {str(c.id): c.quic.reason for c in case.an.connections if c.quic is not None}
        assert f["requests"] == 0
    else:
        assert f["requests_unknown"] > 0 and not f["not_decrypted"]
    # the headline states those counts (the phrase every surface below carries)
    assert counts(case.head) == _want(case)


# ------------------------------------------------------------------ CLI: summary, stats


def test_summary_and_stats_text_and_json(case):
    ka = _keyargs(case.keys)
    for cmd in ("summary", "stats"):
        text = _cli(cmd, str(case.cap), *ka)
        _says(text, case, cmd)
        for i in case.comp.issues:  # every issue, with its reason (not decrypted: why) and next step
            assert f"  - {i.detail}; next: {i.next_step}" in text, (cmd, i.detail)
        d = json.loads(_cli(cmd, str(case.cap), *ka, "--json"))
        assert d["completeness"] == case.facts, cmd


# ------------------------------------------------------------------ HAR, SVG, HTML


def test_har_comments(case, tmp_path):
    out = tmp_path / "x.har"
    _cli("export", str(case.cap), *_keyargs(case.keys), "-o", str(out), "--format", "har")
    log = json.loads(out.read_text())["log"]
    _says(log["comment"], case, "HAR log.comment")
    for cid, reason in case.facts["not_decrypted"].items():  # why, even when no entry can say it
        assert f"connection {cid} not decrypted: {reason}" in log["comment"]
    entries = log["entries"] + log.get("_orphans", [])
    comments = [e.get("comment") or "" for e in entries]
    f = case.facts
    assert len(entries) == f["requests"]
    assert sum("unknown in the capture: " in c for c in comments) == f["requests_unknown"]
    assert sum("opened before the capture started" in c for c in comments) == f["requests_on_joined"]
    assert sum("bodySize is a lower bound" in c for c in comments) == f["unknown"]["body"]
    nd = {int(k) for k in f["not_decrypted"]}
    assert sum("was not decrypted" in c for c in comments) == sum(1 for e in case.an.exchanges if e.connection in nd)


def _html_subtitle(html: str) -> str:
    m = re.search(r'"subtitle":\{"font":\{[^{}]*\},"text":("(?:[^"\\]|\\.)*")', html)
    assert m, "no subtitle in the HTML's figure JSON"
    return json.loads(m.group(1))


def test_html_figure_subtitle(case, tmp_path):
    from wirefall.ui.exports import export

    out = tmp_path / "w.html"
    export(case.an, str(out), "html")
    page = out.read_text()
    _says(_html_subtitle(page).replace("<br>", " "), case, "HTML subtitle")  # (wrapped to the figure's width)
    m = re.search(r'"text":("no requests: (?:[^"\\]|\\.)*")', page)  # the empty image's annotation
    assert bool(m) == (not case.facts["requests"])
    _says_why_when_empty(case, json.loads(m.group(1)).replace("<br>", " ") if m else "")


def _flat(s: str) -> str:
    return re.sub(r"\s+", "", s)


def _says_why_when_empty(case: Case, text: str) -> None:
    """An image without a row says why (the reason each connection was not decrypted)."""
    for reason in case.facts["not_decrypted"].values():
        assert _flat(reason) in _flat(text), text


@pytest.mark.parametrize("name", ["multi-late", "h3-late-no-keys"])
def test_svg_subtitle(name, tmp_path):
    from wirefall.ui.exports import export

    case = _CASES.get(name) or _CASES.setdefault(name, Case(name))
    out = tmp_path / "w.svg"
    export(case.an, str(out), "svg")
    svg = out.read_text()
    texts = " ".join(re.sub(r"<[^>]+>", "", t) for t in re.findall(r"<text[^>]*>.*?</text>", svg, re.S))
    import html as _h

    texts = _h.unescape(texts).replace("\xa0", " ")
    _says(texts, case, "SVG text")
    _says_why_when_empty(case, texts)
    assert bool(case.facts["not_decrypted"]) == ("no requests: 1 connection not decrypted" in texts)


# ------------------------------------------------------------------ the TUI


@sync
async def test_tui_status_notice_and_waterfall_header(case):
    pytest.importorskip("textual")
    from wirefall.ui.tui.app import WirefallApp
    from wirefall.ui.tui.widgets import WaterfallView

    app = WirefallApp(str(case.cap), [str(case.keys)] if case.keys else [])
    async with app.run_test(size=(200, 40)) as pilot:
        for _ in range(400):
            await pilot.pause(0.05)
            if app.loaded or app.load_error:
                break
        await pilot.pause(0.1)
        assert app.loaded and app.load_error is None

        def text(sel: str) -> str:
            return str(app.query_one(sel).render()).replace("\n", " ")

        # the headline once (report 28): the notice line whole, the status bar its word
        assert text("#status").endswith(" · Incomplete") and case.head not in text("#status")
        notice = text("#notice")
        _says(notice, case, "TUI notice")
        for reason in case.facts["not_decrypted"].values():
            assert reason in notice  # why
        await pilot.press("2")
        await pilot.pause(0.1)
        note = text("#wf-note")
        if app.query_one(WaterfallView).count:  # the notice line says it: the header does not again
            assert case.head not in note
        else:  # no row: the header says why (the counts are on the lines below)
            assert app.query_one("#wf-note").display
            reason, = case.facts["not_decrypted"].values()
            assert note.startswith("no requests: 1 connection not decrypted") and reason[:30] in note


# ------------------------------------------------------------------ the web app


def _text(component) -> str:
    out: list[str] = []

    def walk(c):
        if c is None:
            return
        if isinstance(c, (str, int, float)):
            out.append(str(c))
        elif isinstance(c, (list, tuple)):
            for x in c:
                walk(x)
        else:
            walk(getattr(c, "children", None))

    walk(component)
    return " ".join(out)


@pytest.fixture(scope="module")
def web():
    from wirefall.ui.web import WebState

    st = WebState(use_cache=False)
    yield st
    st.close()


def test_web_status_line_and_waterfall_header(case, web):
    from wirefall.ui.web.app import cb_poll, cb_waterfall

    e = web.add_file(str(case.cap), [str(case.keys)] if case.keys else [], name=case.cap.name)
    web.wait(e.id)
    assert e.status == "done", e.error
    _opts, _value, status, *_ = cb_poll(web, 1, e.id, None, None, None)
    # the headline once (report 28): the box whole, the status line its word, the page's figure not
    assert "· Incomplete (what and why: the Waterfall tab)" in _text(status) and case.head not in _text(status)
    fig, _err, _count, why = cb_waterfall(web, e.id, "v", [], [], [], [], "")
    box = _text(why)
    for reason in case.facts["not_decrypted"].values():
        assert reason in box  # why
    if case.facts["requests"]:
        _says(box, case, "web waterfall box")
        assert case.head not in str(fig.layout.title.subtitle.text or "").replace("<br>", " ")  # (the image keeps it: test_html_figure_subtitle)
    else:
        assert box.startswith("no requests: 1 connection not decrypted")


# ------------------------------------------------------------------ body sizes that are lower bounds


def test_lower_bound_body_sizes_say_so_everywhere(tmp_path):
    from h3_midstream import run

    from wirefall.analyzer.request_detail import request_detail
    from wirefall.ui.tui.request_view import detail_text
    from wirefall.ui.web.views import detail_layout

    cap = run(bodies=[[3000, 3000, 3000, 1000], [2500, 1200, 800, 400, 300], [500] * 8], cut=4, grease=True, trailers=True)
    pcap, keys = tmp_path / "m.pcap", tmp_path / "m.keys"
    pcap.write_bytes(cap.pcap)
    keys.write_text(cap.keys)
    cut = {sid for sid, st in cap.streams.items() if st.first}  # aioquic: streams the capture joined inside
    assert len(cut) >= 2
    an = analyze(str(pcap), keylogs=[str(keys)])
    facts = C.to_dict(C.compute(an))
    assert facts["unknown"]["body"] == len(cut)
    head = C.headline(an)
    assert f"{len(cut)} body sizes only a lower bound" in head
    # summary: the headline; requests: "≥N" exactly on the cut streams
    assert head in _cli("summary", str(pcap), "--keylog", str(keys))
    table = _cli("requests", str(pcap), "--keylog", str(keys)).splitlines()[2:]
    by_stream = {int(ln.split()[3]): ln for ln in table}  # (id conn protocol stream …)
    rows = {e.stream_id: e for e in an.exchanges}
    rows_by_id = {e.id: e for e in an.exchanges}
    for sid, ln in by_stream.items():
        size = rows[sid].response_body_bytes
        assert (f"≥{size}" in ln.split()) == (sid in cut), ln
        if sid not in cut:
            assert str(size) in ln.split()
    # HAR: bodySize the number counted, the comment says it is a lower bound
    har = tmp_path / "m.har"
    _cli("export", str(pcap), "--keylog", str(keys), "-o", str(har), "--format", "har")
    log = json.loads(har.read_text())["log"]
    assert head in log["comment"]
    ents = log["entries"] + log.get("_orphans", [])
    low = [x for x in ents if "response bodySize is a lower bound" in (x.get("comment") or "")]
    assert sorted(x["response"]["bodySize"] for x in low) == sorted(rows[s].response_body_bytes for s in cut)
    # the waterfall's hover text (web app, HTML export)
    from wirefall.analyzer.waterfall import build

    for r in build(an).rows:
        sid = rows_by_id[r.exchange].stream_id
        assert any(ln.startswith("body ≥") for ln in r.hover) == (sid in cut), r.hover
    # the TUI's request view and the web's request detail
    for sid, e in rows.items():
        d = request_detail(an, e, bodies=False)
        tui = str(detail_text(d))
        webt = _text(detail_layout(d))
        want = f"≥{e.response_body_bytes}" if sid in cut else None
        assert (f"response body     {want} on the wire" in tui) == (want is not None), tui
        assert (f"{want} bytes on the wire" in webt) == (want is not None), webt
