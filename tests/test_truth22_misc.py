"""Three small truths, each against an outside oracle.

1. A TLS connection not decrypted has the typed reason QUIC has (``model.DecryptReason``): with
   no key log it says "no key log given" (``reason_kind`` ``no_keylog``), with another
   capture's key log "no key for this client random" (``secret_missing``), in JSON
   ``tls.reason``, the completeness line and ``not_decrypted`` alike — before 2026-12-04 the
   first case read "no key for this client random", as if a key log had been given.  Oracle:
   what tshark decrypts with the same key log (its "Decrypted TLS" data sources, ``-x``).
2. A HAR's ``headersSize`` is the browser's HTTP/1-style header text, not wire bytes: a
   HAR-sourced exchange has its header bytes null (``sources`` "unknown") and the HAR's figure in
   ``browser.headers_size``; wirefall's own HAR keeps its capture's wire and decoded sizes.
   Oracle: tshark's HEADERS frames of the same load (pw-h2.pcapng), WebPageTest's HAR itself.
3. ``requests --json`` counts each request's and response's ``<unknown>`` header fields
   (``request_header_fields_unknown`` / ``response_header_fields_unknown``): their sums are
   ``stats``' ``unknown_fields``, and on a cut h2c capture each equals tshark's count of
   ``http2.header.name == "<unknown>"`` per stream.
"""
from __future__ import annotations

import gzip
import json
import sys
from collections import defaultdict
from pathlib import Path

import pytest
from conftest import SAMPLES, need_tool, run_tool, shared

from wirefall.analyzer import completeness as C
from wirefall.analyzer.sessions.tls import _TRIED
from wirefall.analyzer.jsonout import connection_dict
from wirefall.analyzer.pipeline import analyze

TLS_CAPS = sorted((SAMPLES / "tls").glob("*.pcap")) + [SAMPLES / "page" / "page-h2.pcapng"]
UNKNOWN = "<unknown>"


def _wirefall(*args: str) -> str:
    return run_tool(sys.executable, "-m", "wirefall", *args)


def _keys(cap: Path) -> Path:
    return cap.with_suffix(".keys")


def _tshark_decrypted(cap: Path, keys: Path | None) -> int:
    """Records tshark decrypts: its "Decrypted TLS" data sources in ``-x`` output."""
    out = run_tool("tshark", "-r", str(cap), "-x", *(("-o", f"tls.keylog_file:{keys}") if keys else ()))
    return out.count("\nDecrypted TLS")


# ---------------------------------------------------------------- 1. TLS's typed reason


@pytest.mark.parametrize("cap", TLS_CAPS, ids=lambda p: p.name)
def test_tls_reason_typed_without_with_other_and_with_own_key_log_as_tshark_decrypts(cap, monkeypatch):
    need_tool("tshark")
    monkeypatch.delenv("SSLKEYLOGFILE", raising=False)
    other = _keys(TLS_CAPS[(TLS_CAPS.index(cap) + 1) % len(TLS_CAPS)])
    want = {None: ("no_keylog", "no key log given"), other: ("secret_missing", "no key for this client random")}
    for keys in (None, other, _keys(cap)):
        an = analyze(str(cap), keylogs=[str(keys)] if keys else [])
        comp = C.compute(an)
        tls = [(c, connection_dict(c)["tls"]) for c in an.connections if c.tls is not None]
        assert tls
        theirs = _tshark_decrypted(cap, keys)
        if keys in want:
            assert theirs == 0, (keys, theirs)  # tshark decrypts nothing either
            kind, text = want[keys]
            for c, t in tls:
                assert not t["decrypted"]
                assert (t["reason_kind"], t["reason"]) == (kind, text), (keys, t)
                assert t["missing_secrets"] and t["missing_secrets"][0] in ("CLIENT_RANDOM", "SERVER_HANDSHAKE_TRAFFIC_SECRET")
                # one text everywhere: the completeness line and not_decrypted say the same
                assert comp.not_decrypted[c.id] == text
                (issue,) = [i for i in comp.issues if i.kind == "not_decrypted" and i.connection == c.id]
                assert issue.detail.endswith(f"not decrypted: {text}")
                assert issue.next_step == (C.NEXT_NO_KEYLOG if keys is None else C.NEXT_WRONG_KEYLOG)
        else:  # its own key log: tshark decrypts, and so does wirefall, with no reason left
            assert theirs > 0
            assert all(t["decrypted"] and t["reason"] is None and t["reason_kind"] is None and t["missing_secrets"] == []
                       for _, t in tls), [t for _, t in tls]
            assert not comp.not_decrypted


def test_tls_summary_row_says_no_key_log_given(monkeypatch):
    """The connections table (``summary``) and its JSON say what the completeness line says."""
    monkeypatch.delenv("SSLKEYLOGFILE", raising=False)
    cap = SAMPLES / "page" / "page-h2.pcapng"
    out = _wirefall("summary", str(cap))
    assert "not decrypted: no key log given" in out and "no key for this client random" not in out
    d = json.loads(_wirefall("summary", str(cap), "--json"))
    assert {c["tls"]["reason_kind"] for c in d["connections"] if c.get("tls")} == {"no_keylog"}


def test_tls_joined_midway_is_handshake_not_captured_with_or_without_keys(tmp_path, monkeypatch):
    """A capture cut inside the handshakes: no ClientHello, nothing for tshark to decrypt with
    or without the key log; the reason is the handshake's absence either way."""
    need_tool("editcap")
    monkeypatch.delenv("SSLKEYLOGFILE", raising=False)
    src = SAMPLES / "page" / "page-h2.pcapng"
    cut = tmp_path / "cut.pcapng"
    run_tool("editcap", "-r", str(src), str(cut), "30-75")
    for keys in (None, _keys(src)):
        assert _tshark_decrypted(cut, keys) == 0
        an = analyze(str(cut), keylogs=[str(keys)] if keys else [])
        comp = C.compute(an)
        mid = [connection_dict(c)["tls"] for c in an.connections if c.tls is not None and c.id in comp.joined_midway]
        # (with the key log, its first records were tried against its TLS 1.3 secrets: the reason adds that none opened them)
        said = "no ClientHello in the capture" + ("; " + _TRIED if keys else "")
        assert mid and all((t["reason_kind"], t["reason"]) == ("handshake_not_captured", said) for t in mid), mid


# ---------------------------------------------------------------- 2. HAR headersSize


def _har_entries(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return json.load(f)["log"]["entries"]


def _tshark_header_blocks(cap: Path, keys: Path) -> dict[tuple[int, int], list[int]]:
    """Per (stream, direction 0/1): the header block bytes of its HEADERS frames, from tshark
    (``http2.length`` less the PADDED and PRIORITY fields)."""
    out = run_tool("tshark", "-r", str(cap), "-o", f"tls.keylog_file:{keys}", "-Y", "http2.type == 1", "-T", "json",
                   "--no-duplicate-keys", "-J", "tcp http2")
    got: dict[tuple[int, int], list[int]] = defaultdict(list)
    for p in json.loads(out):
        layers = p["_source"]["layers"]
        d = 0 if int(layers["tcp"]["tcp.dstport"]) < int(layers["tcp"]["tcp.srcport"]) else 1  # (the client's port is the ephemeral one)
        for h2 in (lambda x: x if isinstance(x, list) else [x])(layers.get("http2") or []):
            for s in (lambda x: x if isinstance(x, list) else [x])(h2.get("http2.stream") or []):
                if s.get("http2.type") != "1":
                    continue
                flags = int(s["http2.flags"], 16)
                n = int(s["http2.length"]) - (5 if flags & 0x20 else 0) - ((int(s.get("http2.pad_length", 0)) + 1) if flags & 0x08 else 0)
                got[int(s["http2.streamid"]), d].append(n)
    return got


def test_har_headers_size_is_not_wire_bytes_pw_h2(tmp_path, monkeypatch):
    need_tool("tshark")
    monkeypatch.delenv("SSLKEYLOGFILE", raising=False)
    page = SAMPLES / "page"
    har, cap, keys = page / "pw-h2.har.gz", page / "pw-h2.pcapng", page / "pw-h2.keys"
    entries = {e["request"]["url"]: e for e in _har_entries(har)}
    # the wire's truth: tshark's header blocks per stream equal the capture's exchanges' wire bytes
    blocks = _tshark_header_blocks(cap, keys)
    wire = json.loads(_wirefall("requests", str(cap), "--keylog", str(keys), "--json"))
    assert wire
    for e in wire:
        assert e["request_header_bytes_wire"] == sum(blocks[e["stream_id"], 0]), e["url"]
        assert e["response_header_bytes_wire"] == sum(blocks[e["stream_id"], 1]), e["url"]
        # and the HAR's headersSize of the same request is something else (683 against 432 for /)
        assert entries[e["url"]]["request"]["headersSize"] != e["request_header_bytes_wire"], e["url"]
    # the HAR alone: its header bytes are unknown (null), its headersSize kept as the log's
    alone = json.loads(_wirefall("requests", str(har), "--json"))
    assert len(alone) == len(entries)
    for e in alone:
        for k in ("request_header_bytes_wire", "request_header_bytes_decoded", "response_header_bytes_wire",
                  "response_header_bytes_decoded"):
            assert e[k] is None and e["sources"][k] == "unknown", (e["url"], k)
        h = entries[e["url"]]
        assert e["browser"]["headers_size"] == {"request": h["request"]["headersSize"], "response": h["response"]["headersSize"]}
    # compare of the capture against its HAR: the HAR side's header bytes and compression unknown
    cmp = json.loads(_wirefall("compare", str(cap), str(har), "--keylog", str(keys), "--keylog-b", str(keys), "--json"))
    for k in ("request_header_bytes_wire", "response_header_bytes_wire", "request_header_compression", "response_header_compression"):
        assert cmp["page"][k]["a"] is not None and cmp["page"][k]["b"] is None, (k, cmp["page"][k])


def test_har_headers_size_webpagetest_amazon_unknown():
    har = shared("hars/webpagetest-amazon.har.gz")
    alone = json.loads(_wirefall("requests", str(har), "--json"))
    assert alone
    assert all(e["request_header_bytes_wire"] is None and e["response_header_bytes_wire"] is None for e in alone)
    sizes = {(e["request"]["url"], e["request"]["headersSize"]) for e in _har_entries(har)}
    assert all((e["url"], e["browser"]["headers_size"]["request"]) in sizes for e in alone)


def test_wirefall_har_round_trip_keeps_wire_and_decoded(tmp_path, monkeypatch):
    monkeypatch.delenv("SSLKEYLOGFILE", raising=False)
    page = SAMPLES / "page"
    cap, keys = page / "pw-h2.pcapng", page / "pw-h2.keys"
    out = tmp_path / "own.har"
    _wirefall("export", str(cap), "--keylog", str(keys), "-o", str(out), "--format", "har")
    fields = ("request_header_bytes_wire", "request_header_bytes_decoded", "response_header_bytes_wire", "response_header_bytes_decoded")
    want = {e["url"]: [e[k] for k in fields] for e in json.loads(_wirefall("requests", str(cap), "--keylog", str(keys), "--json"))}
    back = {e["url"]: [e[k] for k in fields] for e in json.loads(_wirefall("requests", str(out), "--json"))}
    assert back == want and all(v[0] > 0 and v[1] > 0 for v in back.values())


# ---------------------------------------------------------------- 3. <unknown> fields per request


def test_unknown_fields_per_request_sum_to_stats_page_h3_late():
    cap, keys = SAMPLES / "quic" / "page-h3-late.pcapng", SAMPLES / "quic" / "page-h3-late.keys"
    reqs = json.loads(_wirefall("requests", str(cap), "--keylog", str(keys), "--json"))
    h = json.loads(_wirefall("stats", str(cap), "--keylog", str(keys), "--json"))["capture"]["headers"]
    got = [sum(e["request_header_fields_unknown"] for e in reqs), sum(e["response_header_fields_unknown"] for e in reqs)]
    assert got == [h["request"]["unknown_fields"], h["response"]["unknown_fields"]] and got[0] > 0
    # each equals the header list's own <unknown> entries
    for e in reqs:
        assert e["request_header_fields_unknown"] == sum(1 for k, v in e["request_headers"] if UNKNOWN in (k, v))


def test_unknown_fields_per_stream_equal_tshark_cut_h2c(tmp_path):
    need_tool("tshark")
    need_tool("editcap")
    src = SAMPLES / "page" / "page-h2c.pcapng"
    cut = tmp_path / "cut.pcapng"
    run_tool("editcap", "-r", str(src), str(cut), "9-33")  # after the first HEADERS: the HPACK table partly unknown
    port = run_tool("tshark", "-r", str(src), "-Y", "tcp.flags.syn == 1 && tcp.flags.ack == 0",
                    "-T", "fields", "-e", "tcp.dstport").split()[0]
    out = run_tool("tshark", "-r", str(cut), "-d", f"tcp.port=={port},http2", "-Y", "http2.type == 1",
                   "-T", "json", "--no-duplicate-keys", "-J", "tcp http2")
    theirs: dict[tuple[int, bool], int] = defaultdict(int)
    as_list = lambda x: [] if x is None else x if isinstance(x, list) else [x]  # noqa: E731
    for p in json.loads(out):
        layers = p["_source"]["layers"]
        request = layers["tcp"]["tcp.dstport"] == port
        for h2 in as_list(layers.get("http2")):
            for s in as_list(h2.get("http2.stream")):
                if s.get("http2.type") == "1":
                    theirs[int(s["http2.streamid"]), request] += sum(
                        1 for h in as_list(s.get("http2.header")) if h["http2.header.name"] == UNKNOWN)
    assert sum(theirs.values()) > 10
    reqs = json.loads(_wirefall("requests", str(cut), "--json"))
    ours = {}
    for e in reqs:
        ours[e["stream_id"], True] = e["request_header_fields_unknown"]
        ours[e["stream_id"], False] = e["response_header_fields_unknown"]
    assert {k: v for k, v in ours.items() if v} == {k: v for k, v in theirs.items() if v}
    st = json.loads(_wirefall("stats", str(cut), "--json"))["capture"]["headers"]
    assert [sum(v for (_, r), v in ours.items() if r), sum(v for (_, r), v in ours.items() if not r)] == [
        st["request"]["unknown_fields"], st["response"]["unknown_fields"]]
