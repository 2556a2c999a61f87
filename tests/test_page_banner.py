"""The completeness banner says what is incomplete and whose: the page's own rows, or only
background traffic beside it — never "Incomplete" for a page whose rows are all whole, never
silent about what is not (analyzer/completeness.py, ``headline``; the figures' subtitle colour,
ui/figures_marks.headline_color).

Cases: the real Chrome load of amazon.com (../shared/captures/pageload-amazon), where the only
thing missing is the start of Chrome's idle QUIC connection to a Google address (PINGs and ACKs,
no stream; it began before the capture); that capture cut at packet 300 (the page's own
challenge.js response cut as well); quic/page-multi-late (the page's own connections joined
mid-way: incomplete, no background part); page/bg-mixed (the metadata long-poll the capture ends
in is background; a connection to static.test not decrypted may be the page's: incomplete).
Outside truth: tshark (the Google connection has no QUIC long header: it began before the
capture) and Chromium's NetLog of the amazon load (its QUIC session there carried no stream
frame)."""
from __future__ import annotations

import gzip
import json
import subprocess
from pathlib import Path

import pytest

from conftest import SAMPLES, need_tool, run_tool, shared

from wirefall.analyzer import completeness as C
from wirefall.analyzer import waterfall
from wirefall.analyzer.pipeline import analyze
from wirefall.ui import figures
from wirefall.ui import figures_marks as M

GOOGLE = "[2001:4860:4829:7700::]:443"
# (since 2026-12-05 the connection joined mid-way with no request seen is of unknown owner, not
# "background traffic (not the page's)": a capture cut from the page's early requests is the same
# to the wire — tests/test_completeness32b.py)
AMAZON_HEAD = ("Page complete: its 15 requests with every field known, their connections seen from the start; "
               "1 QUIC connection joined mid-way, no request seen: whose it is is unknown")


def _amazon(cut: int | None = None, tmp: Path | None = None):
    d = shared("pageload-amazon")
    cap = d / "amazon1.cap.gz"
    if cut is not None:
        need_tool("editcap")
        assert tmp is not None
        out = tmp / f"amazon1-{cut}.pcap"
        subprocess.run(["editcap", "-r", str(cap), str(out), f"1-{cut}"], check=True, capture_output=True)
        cap = out
    return analyze(str(cap), keylogs=[str(d / "amazon1.key_log.txt.gz")])


def _subtitle(an):
    fig = figures.waterfall_figure(waterfall.build(an), hover=False)
    sub = fig.layout.title.subtitle
    return sub.text, sub.font.color


def test_amazon_page_complete_background_said_apart():
    an = _amazon()
    c = C.compute(an)
    (g,) = [x for x in an.connections if x.server == ("2001:4860:4829:7700::", 443)]
    # the truth: tshark sees no QUIC long header on it (no Initial: it began before the capture) …
    need_tool("tshark")
    cap = shared("pageload-amazon") / "amazon1.cap.gz"
    port = g.client[1]
    rows = run_tool("tshark", "-r", str(cap), "-Y", f"udp.port == {port}", "-T", "fields", "-e", "frame.number",
                    "-e", "quic.long.packet_type").splitlines()
    assert len(rows) == 6 and not any(r.split("\t")[1:] != [""] for r in rows)
    # … and Chromium's NetLog: its QUIC session to that address carried no stream frame (no request)
    nl = json.loads(gzip.decompress((shared("pageload-amazon") / "amazon1_netlog.json.gz").read_bytes()))
    names = {v: k for k, v in nl["constants"]["logEventTypes"].items()}
    srcs = {e["source"]["id"] for e in nl["events"] if (e.get("params") or {}).get("peer_address") == GOOGLE}
    assert srcs
    kinds = {names.get(e["type"]) for e in nl["events"] if e["source"]["id"] in srcs}
    assert "QUIC_SESSION_PACKET_RECEIVED" in kinds and not {k for k in kinds if "STREAM_FRAME" in (k or "")}
    # wirefall: the page's 15 rows whole; that connection, no request on it, the only thing missing
    assert not any(e.connection == g.id for e in an.exchanges)
    assert not c.complete and c.page_complete and c.page_requests == 15
    assert c.joined_midway == [g.id] and c.owner_unknown_connections == [g.id] and not c.background_connections
    (i,) = c.issues
    assert i.kind == "joined_midway" and not i.background and i.whose == "unknown" and i.connection == g.id
    assert i.detail.endswith("no request seen on it; its handshake, and what it carried before, are not in the capture; "
                             "whose it is is unknown (what it carried is not in the capture)")
    assert i.next_step.startswith("to know whose it is: start the capture before the page load")
    assert C.headline(an) == AMAZON_HEAD
    d = C.to_dict(c)
    assert d["complete"] is False and d["page_complete"] is True and d["headline"] == AMAZON_HEAD
    assert d["owner_unknown_connections"] == [g.id] and d["issues"][0]["background"] is False
    # the image: the line under the title says it, amber (not the red of a page incomplete, not green)
    text, color = _subtitle(an)
    assert text.startswith("Page complete: its 15 requests") and "1 QUIC connection joined mid-way" in text
    assert color == M.PAGE_COMPLETE_COLOR not in (M.COMPLETE_COLOR, M.INCOMPLETE_COLOR)


def test_amazon_cut_page_incomplete_and_background_both_said(tmp_path):
    """Cut at packet 300: challenge.js (the page's, on the awswaf.com HTTP/2 connection) is cut
    inside its body — the page is incomplete, said first; the Google connection after it."""
    an = _amazon(300, tmp_path)
    c = C.compute(an)
    assert not c.page_complete and len(c.owner_unknown_connections) == 1
    head = C.headline(an)
    assert head == ("Incomplete: 1 request with unknown fields, 1 body size only a lower bound; "
                    "1 QUIC connection joined mid-way, no request seen: whose it is is unknown")
    page_issue = next(i for i in c.issues if not i.background and i.whose != "unknown")
    assert page_issue.kind == "unknown_fields" and page_issue.connection not in c.owner_unknown_connections
    assert _subtitle(an)[1] == M.INCOMPLETE_COLOR


def test_page_itself_incomplete_multi_late():
    """page-multi-late: the page's own connections were opened before the capture — incomplete,
    with nothing said to be background."""
    cap = SAMPLES / "quic" / "page-multi-late.pcapng"
    an = analyze(str(cap), keylogs=[str(cap.with_suffix(".keys"))])
    c = C.compute(an)
    head = C.headline(an)
    assert head.startswith("Incomplete: 4 connections joined mid-way (36 requests with unknown URL)")
    assert "background" not in head and not c.background_connections and not c.page_complete
    assert not any(i.background for i in c.issues)
    assert _subtitle(an)[1] == M.INCOMPLETE_COLOR


def test_a_connection_not_decrypted_is_never_background():
    """bg-mixed: connection to static.test with no key carries nothing wirefall could read: it may
    be the page's, so the page is incomplete; the metadata long-poll's missing status is background."""
    cap = SAMPLES / "page" / "bg-mixed.pcapng"
    an = analyze(str(cap), keylogs=[str(cap.with_suffix(".keys"))])
    c = C.compute(an)
    (nd,) = c.not_decrypted
    assert nd not in c.background_connections and not c.page_complete
    assert C.headline(an) == "Incomplete: 1 connection not decrypted; background traffic (not the page's): 1 request with unknown fields"


@pytest.mark.parametrize("name", ["page/page-h2", "page/page-h3"])
def test_complete_captures_unchanged(name):
    an = analyze(str(SAMPLES / f"{name}.pcapng"), keylogs=[str(SAMPLES / f"{name}.keys")])
    c = C.compute(an)
    assert c.complete and c.page_complete and not c.background_connections
    assert C.headline(an).startswith("Complete: ")
    assert M.headline_color(C.headline(an)) == M.COMPLETE_COLOR


def test_headline_colors():
    assert M.headline_color("Complete: 1 connection …") == M.COMPLETE_COLOR
    assert M.headline_color("Page complete: its 3 requests …; background traffic …") == M.PAGE_COMPLETE_COLOR
    assert M.headline_color("Incomplete: 1 connection joined mid-way") == M.INCOMPLETE_COLOR
