"""Two truths of the completeness summary (analyzer/completeness.py), review 32.

1. A connection the capture joined mid-way that carries no request in it is nobody's the capture
   can tell: what it carried came before the capture.  The amazon load cut at packet 549 made the
   awswaf connection (10.20.0.3:38863) "background traffic, not the page's", while Chrome's NetLog
   (QUIC session 220, network anonymization key https://amazon.com) shows it carried the page's
   ``inputs`` and ``mp_verify`` requests before the cut; cut at 560, the page's preconnect (port
   46250, session 265) was called the same.  Now: "joined mid-way, no request seen: whose it is is
   unknown" (``Issue.whose`` "unknown", ``owner_unknown_connections``), or, where its server carried
   the page's requests on another connection, tied to the page (``whose`` "page", ``tie``).
2. A TLS record that does not decrypt (damaged bytes) stops decryption in its direction; the
   summary blamed the capture's missing other half and the request detail said "no response in the
   capture".  Now an issue ``record_not_decrypted`` with its own next step, the requests after it
   counted ``requests_not_decrypted``.  Truth: tshark, which decodes no HTTP/2 frame from the
   damaged record on in that direction, and decodes every frame of the undamaged capture.

Captures are built in tmp_path (editcap, tshark -w, a byte flipped by a script): no blob committed.
"""
from __future__ import annotations

import gzip
import json
import struct
import subprocess
from functools import cache
from pathlib import Path

import pytest

from conftest import SAMPLES, need_tool, run_tool, shared

from wirefall.analyzer import completeness as C
from wirefall.analyzer.pipeline import analyze
from wirefall.analyzer.request_detail import request_detail
from wirefall.ui import explain

WHOSE_UNKNOWN = "1 QUIC connection joined mid-way, no request seen: whose it is is unknown"


# ------------------------------------------------------------------ the NetLog's truth


@cache
def _netlog_sessions() -> dict[int, dict]:
    """Chrome's QUIC sessions of the amazon load: id -> {self, peer, key, paths} (its own events)."""
    d = json.loads(gzip.decompress((shared("pageload-amazon") / "amazon1_netlog.json.gz").read_bytes()))
    names = {v: k for k, v in d["constants"]["logEventTypes"].items()}
    out: dict[int, dict] = {}
    for ev in d["events"]:
        sid, t, p = ev["source"]["id"], names[ev["type"]], ev.get("params") or {}
        if t == "QUIC_SESSION":
            out.setdefault(sid, {"paths": []})["key"] = p.get("network_anonymization_key")
        elif t == "QUIC_SESSION_PACKET_RECEIVED" and sid in out:
            out[sid]["self"], out[sid]["peer"] = p["self_address"], p["peer_address"]
        elif t == "HTTP3_HEADERS_SENT" and sid in out:
            out[sid]["paths"] += [h.split(": ", 1)[1] for h in p["headers"] if h.startswith(":path: ")]
    return out


def _amazon(tmp: Path, cut: str | None = None, tshark_filter: str | None = None):
    """The amazon load, whole, cut by editcap (``cut``: the packets kept) or filtered by tshark."""
    d = shared("pageload-amazon")
    cap = tmp / "amazon1.cap"
    cap.write_bytes(gzip.decompress((d / "amazon1.cap.gz").read_bytes()))
    out = tmp / "cut.pcap"
    if cut is not None:
        subprocess.run([need_tool("editcap"), "-r", str(cap), str(out), cut], check=True, capture_output=True)
        cap = out
    elif tshark_filter is not None:
        subprocess.run([need_tool("tshark"), "-r", str(cap), "-Y", tshark_filter, "-w", str(out)], check=True, capture_output=True)
        cap = out
    return analyze(str(cap), keylogs=[str(d / "amazon1.key_log.txt.gz")])


def _conn(an, port: int):
    (c,) = [c for c in an.connections if c.transport == "udp" and c.client[1] == port]
    return c


def _said_unknown(an, port: int, session: int) -> None:
    """The connection of NetLog session ``session`` (client port ``port``) is said "whose it is is
    unknown" everywhere the completeness facts are worded — never background traffic's."""
    s = _netlog_sessions()[session]
    assert s["self"] == f"10.20.0.3:{port}" and s["key"].startswith("https://amazon.com")  # the page's, says Chrome
    c = _conn(an, port)
    assert f"{c.server[0]}:{c.server[1]}" == s["peer"]
    assert not [e for e in an.exchanges if e.connection == c.id]  # (the capture holds none of its requests)
    comp = C.compute(an)
    (i,) = [i for i in comp.issues if i.connection == c.id]
    assert (i.kind, i.whose, i.background, i.tie) == ("joined_midway", "unknown", False, None)
    assert c.id in comp.owner_unknown_connections and c.id not in comp.background_connections
    assert "whose it is is unknown" in i.detail and "not the page's" not in i.detail
    d = C.to_dict(comp)
    (j,) = [j for j in d["issues"] if j["connection"] == c.id]
    assert j["whose"] == "unknown" and not j["background"] and c.id in d["owner_unknown_connections"]
    head = C.headline(an)
    assert "no request seen: whose" in head and "background traffic (not the page's)" not in head, head
    assert not any("not the page's" in line for line in C.render_text(comp)), C.render_text(comp)
    banner = explain.banner(an) or ""
    assert "not the page's" not in banner and "background" not in banner, banner


@pytest.mark.slow
def test_cut_549_the_awswaf_connection_is_not_called_background(tmp_path):
    # NetLog: session 220 carried the page's inputs and mp_verify (before the cut: the full
    # capture's exchanges of those paths are on that connection, their requests before packet 549)
    paths = _netlog_sessions()[220]["paths"]
    assert any("/inputs?" in p for p in paths) and any(p.endswith("/mp_verify") for p in paths)
    full = _amazon(tmp_path)
    on = [e for e in full.exchanges if e.connection == _conn(full, 38863).id]
    assert sorted(e.path for e in on) == sorted(paths)
    assert on and all(max(f.packet for f in _frames(full, e)) < 549 for e in on)
    an = _amazon(tmp_path, cut="549-999999")
    _said_unknown(an, 38863, 220)


def _frames(an, e):
    from wirefall.analyzer.request_detail import exchange_frames

    return exchange_frames(an, e)


@pytest.mark.slow
def test_cut_560_the_page_preconnect_is_not_called_background(tmp_path):
    an = _amazon(tmp_path, cut="560-999999")
    _said_unknown(an, 46250, 265)


@pytest.mark.slow
def test_whole_amazon_google_keepalive_said_unknown_page_still_whole(tmp_path):
    an = _amazon(tmp_path)
    comp = C.compute(an)
    # (the only connection joined mid-way: Chrome's keep-alive to Google, no request in the capture)
    (cid,) = comp.joined_midway
    c = next(c for c in an.connections if c.id == cid)
    assert c.server[0] == "2001:4860:4829:7700::"
    assert comp.page_complete and not comp.complete and comp.background_connections == []
    assert comp.owner_unknown_connections == [cid]
    assert C.headline(an) == ("Page complete: its 15 requests with every field known, their connections seen from the start; "
                              + WHOSE_UNKNOWN)
    assert explain.background_line(an) == "Page complete · 1 connection of unknown owner"


@pytest.mark.slow
def test_a_server_that_carried_the_page_ties_the_connection_to_it(tmp_path):
    """The preconnect (port 46250) without its long-header packets: joined mid-way, no request seen;
    its server 3.167.37.14:443 carried the page's awswaf requests on 38863 — NetLog: both sessions
    to that peer, both with the page's key."""
    need_tool("tshark")
    s220, s265 = _netlog_sessions()[220], _netlog_sessions()[265]
    assert s220["peer"] == s265["peer"] == "3.167.37.14:443" and s220["key"] == s265["key"]
    an = _amazon(tmp_path, tshark_filter="!(udp.port==46250 && quic.header_form==1)")
    c, other = _conn(an, 46250), _conn(an, 38863)
    assert c.connect_start is None and any(e.connection == other.id for e in an.exchanges)
    comp = C.compute(an)
    (i,) = [i for i in comp.issues if i.connection == c.id]
    assert (i.kind, i.whose, i.background) == ("joined_midway", "page", False)
    assert i.tie == f"its server 3.167.37.14:443 carried the page's requests on connection {other.id}"
    assert c.id not in comp.owner_unknown_connections and not comp.page_complete
    head = C.headline(an)
    assert head.startswith("Incomplete: 1 connection joined mid-way (1 with no request seen, its server or SNI the page's)"), head
    assert C.to_dict(comp)["issues"][[j["connection"] for j in C.to_dict(comp)["issues"]].index(c.id)]["tie"] == i.tie


# --------------------------------------------------------- a record that does not decrypt

H2 = SAMPLES / "page" / "page-h2.pcapng"
KEYS = SAMPLES / "page" / "page-h2.keys"
DAMAGED = 46  # a server record of stream 9's body (16 401 bytes, one TCP segment)


def _damage(tmp: Path) -> Path:
    need_tool("editcap")
    plain = tmp / "h2.pcap"
    subprocess.run(["editcap", "-F", "pcap", str(H2), str(plain)], check=True, capture_output=True)
    b = bytearray(plain.read_bytes())
    off, n = 24, 0
    while off < len(b):  # (pcap: 24-byte file header, 16-byte record headers)
        n += 1
        incl = struct.unpack_from("<I", b, off + 8)[0]
        if n == DAMAGED:
            b[off + 16 + incl - 8000] ^= 0xFF  # inside the record's ciphertext
        off += 16 + incl
    out = tmp / "h2-damaged.pcap"
    out.write_bytes(bytes(b))
    return out


def _tshark_h2(cap: Path) -> list[tuple[int, int, str, str]]:
    """(frame, source port, stream ids, :status) of every frame tshark decodes HTTP/2 in."""
    out = run_tool("tshark", "-r", str(cap), "-o", f"tls.keylog_file:{KEYS}", "-Y", "http2", "-T", "fields",
                   "-e", "frame.number", "-e", "tcp.srcport", "-e", "http2.streamid", "-e", "http2.headers.status")
    rows = []
    for line in out.splitlines():
        f = line.split("\t")
        rows.append((int(f[0]), int(f[1]), f[2], f[3]))
    return rows


def test_a_record_that_does_not_decrypt_is_its_own_issue(tmp_path):
    bad = _damage(tmp_path)
    good_rows, bad_rows = _tshark_h2(H2), _tshark_h2(bad)
    an = analyze(str(bad), keylogs=[str(KEYS)])
    (conn,) = [c for c in an.connections if any(e.connection == c.id for e in an.exchanges)]
    server = conn.server[1]
    # tshark: the undamaged capture decodes HTTP/2 in the damaged packet; the damaged one decodes
    # no server frame from it on (decryption failed there), and the client's frames after it still
    assert any(r[0] == DAMAGED for r in good_rows)
    assert max(r[0] for r in bad_rows if r[1] == server) < DAMAGED
    assert any(r[0] > DAMAGED for r in bad_rows if r[1] != server)
    # the streams whose :status tshark shows = the exchanges whose status wirefall knows
    statused = {int(s) for r in bad_rows if r[1] == server and r[3] for s in r[2].split(",")}
    assert {e.stream_id for e in an.exchanges if e.status is not None} == statused
    comp = C.compute(an)
    (i,) = [i for i in comp.issues if i.kind == "record_not_decrypted"]
    lost = [e for e in an.exchanges if C.unknown_fields(e)]
    assert i.connection == conn.id and i.count == len(lost) == comp.requests_not_decrypted
    assert comp.per_connection[conn.id].record_failed == DAMAGED
    assert f"packet {DAMAGED}" in i.detail and "damaged bytes or a wrong key" in i.detail
    # never the capture's missing other half
    assert all(C.NEXT_OTHER_HALF not in x.next_step for x in comp.issues), C.render_text(comp)
    assert i.next_step == C.NEXT_RECORD_FAILED
    (u,) = [x for x in comp.issues if x.kind == "unknown_fields"]
    assert u.next_step.startswith(C.NEXT_RECORD_FAILED)
    head = C.headline(an)
    assert head.startswith(f"Incomplete: 1 TLS record did not decrypt (damaged bytes or a wrong key): {len(lost)} requests "
                           "after it not decrypted"), head
    d = C.to_dict(comp)
    assert d["requests_not_decrypted"] == len(lost)
    (pc,) = d["per_connection"]
    assert (pc["record_failed"], pc["requests_not_decrypted"]) == (DAMAGED, len(lost))
    # the request detail: not "no response in the capture" for a response whose bytes are there
    for e in lost:
        err = request_detail(an, e, bodies=False).error or ""
        assert "no response in the capture" not in err and "did not decrypt" in err, err
        assert err.startswith("response decrypted only in part" if e.response_start is not None else "no response decrypted")
        assert "did not decrypt" in (C.entry_comment(comp, e) or "")
    # (the undamaged capture: no such issue)
    assert not [x for x in C.compute(analyze(str(H2), keylogs=[str(KEYS)])).issues if x.kind == "record_not_decrypted"]
