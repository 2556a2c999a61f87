"""QUIC / HTTP/3 / gQUIC against outside truth (session 32).

- A PRIORITY_UPDATE that comes before its request (Chromium sends it on the control stream just
  before the request's HEADERS, in the same packet) is that request's priority.  It was dropped
  (no exchange yet), so on quic/page-multi-late — where each request's own ``priority`` header
  is a QPACK entry from before the capture — every www/img request showed no priority.  Truth:
  Chromium's NetLog (``HTTP3_PRIORITY_UPDATE_SENT``: element id, field value, per session).
- Lenient QPACK: a field that refers to an entry the capture saw inserted by a Duplicate of an
  entry from before it was ``["<unknown>", "<unknown>"]`` and not counted in
  ``qpack_unknown_refs`` (13 where page-multi-late's beacon requests show 14 ``<unknown>``).
  Truth: the NetLog's own header lists (``HTTP3_HEADERS_SENT`` / ``_DECODED``).
- gQUIC handshake messages (CHLO…) had ``length`` 0; tshark's ``gquic.data_len`` is their size.
- A QUIC packet not decrypted for want of any key log said "no SECRET in the key log for this
  client random" (frames, notes, expert), as if a key log had been searched; tshark: "Secrets
  are not available" on the same packets.
"""
from __future__ import annotations

import gzip
import json
from functools import cache

import pytest

from conftest import SAMPLES, need_tool, run_tool, shared

from wirefall.analyzer.pipeline import analyze

MULTI = SAMPLES / "quic" / "page-multi-late"


@cache
def _multi():
    return analyze(str(MULTI.with_suffix(".pcapng")), keylogs=[str(MULTI.with_suffix(".keys"))])


@cache
def _netlog() -> tuple[dict, dict, dict, dict]:
    """(host -> {stream: last PRIORITY_UPDATE value sent}, {(host, stream): header lists sent},
    {(host, stream): header lists received}, server address -> host) from the NetLog."""
    d = json.loads(gzip.decompress(MULTI.with_suffix(".netlog.json.gz").read_bytes()))
    names = {v: k for k, v in d["constants"]["logEventTypes"].items()}
    hosts = {e["source"]["id"]: e["params"]["host"] for e in d["events"]
             if names.get(e["type"]) == "QUIC_SESSION" and e.get("phase") == 1}

    def pair(h: str) -> tuple[str, str]:
        if h.startswith(":"):
            k, _, v = h[1:].partition(": ")
            return ":" + k, v
        k, _, v = h.partition(": ")
        return k, v

    prio: dict[str, dict[int, str]] = {}
    sent: dict[tuple[str, int], list] = {}
    got: dict[tuple[str, int], list] = {}
    for e in d["events"]:
        t = names.get(e["type"])
        host = hosts.get(e["source"]["id"])
        if host is None:
            continue
        p = e.get("params") or {}
        if t == "HTTP3_PRIORITY_UPDATE_SENT":
            prio.setdefault(host, {})[p["prioritized_element_id"]] = p["priority_field_value"]
        elif t in ("HTTP3_HEADERS_SENT", "HTTP3_HEADERS_DECODED"):
            (sent if t == "HTTP3_HEADERS_SENT" else got).setdefault((host, p["stream_id"]), []).append(
                [pair(h) for h in p["headers"]])
    manifest = json.loads(MULTI.with_suffix(".manifest.json").read_text())
    addr = {v["address"]: k for k, v in manifest["origins"].items()}
    return prio, sent, got, addr


def test_a_priority_update_before_its_request_is_its_priority():
    an = _multi()
    prio, _sent, _got, addr = _netlog()
    checked = 0
    for e in an.exchanges:
        if not (e.protocol or "").startswith("h3"):
            continue
        host = addr[an.connections[e.connection].server[0]]
        want = prio.get(host, {}).get(e.stream_id)
        if want is None:
            continue
        assert e.priority is not None and e.priority["urgency_incremental"] == want, (e.id, host, e.stream_id, e.priority)
        checked += 1
    # (the requests of the three QUIC connections joined mid-way, www's and img's among them)
    assert checked >= 60


def test_lenient_qpack_unknown_fields_are_counted_and_shaped_as_documented():
    an = _multi()
    _prio, sent, got, addr = _netlog()
    frames = [f for f in an.frames if f.protocol.startswith("h3") and f.type == "HEADERS" and f.headers is not None]
    dup = 0
    for f in frames:
        host = addr[an.connections[f.connection].server[0]]
        chrome = (sent if f.direction == 0 else got)[(host, f.stream_id)][-1]
        assert len(f.headers) == len(chrome), (f.packet, f.stream_id)
        shown = 0
        for (k, v), (ck, cv) in zip(f.headers, chrome):
            if k == "<unknown>":
                shown += 1
                # ["<unknown>", ""] (the entry unknown), or ["<unknown>", its literal value]: never a made-up value
                assert v in ("", cv), (f.packet, f.stream_id, ck, v)
                dup += (ck, cv) == (":authority", "www.lab.test") and v == ""
            else:
                assert (k, v) == (ck, cv), (f.packet, f.stream_id)
        assert (f.fields or {}).get("qpack_unknown_refs", 0) == shown, (f.packet, f.stream_id)
    # the beacons' :authority, a Duplicate of an entry from before the capture (packets 519, 520)
    assert dup >= 2
    # and the exchanges count the same fields (jsonout.unknown_fields)
    from wirefall.analyzer.jsonout import unknown_fields

    by_stream = {(f.connection, f.stream_id): f for f in frames if f.direction == 0}
    for e in an.exchanges:
        f = by_stream.get((e.connection, e.stream_id))
        if f is not None and e.request_headers is f.headers:
            assert unknown_fields(e.request_headers) == (f.fields or {}).get("qpack_unknown_refs", 0)


def test_gquic_handshake_message_length_is_tsharks_data_len():
    need_tool("tshark")
    cap = shared("gquic/dragon3.pcap")
    out = run_tool("tshark", "-r", str(cap), "-Y", "gquic.tag", "-T", "fields", "-e", "frame.number", "-e", "gquic.tag",
                   "-e", "gquic.data_len")
    truth = {(int(n), tag): int(ln) for n, tag, ln in (row.split("\t") for row in out.splitlines() if row)}
    assert len(truth) == 3
    an = analyze(str(cap))
    ours = {(f.packet, f.type): f.length for f in an.frames if f.protocol == "gquic" and f.type not in ("PACKET", "PUBLIC_RESET")}
    assert ours == truth  # {(1, 'CHLO'): 469, (4, 'CHLO'): 460, (823, 'CHLO'): 459}


LABELS = {(2, 0): "CLIENT_HANDSHAKE_TRAFFIC_SECRET", (2, 1): "SERVER_HANDSHAKE_TRAFFIC_SECRET",
          (3, 0): "CLIENT_TRAFFIC_SECRET_0", (3, 1): "SERVER_TRAFFIC_SECRET_0", (1, 0): "CLIENT_EARLY_TRAFFIC_SECRET"}


@pytest.mark.parametrize("keys,words", [(None, "no key log given"), ("empty", "the key log given holds no secret")])
def test_packets_not_decrypted_without_a_key_log_do_not_cite_one(tmp_path, keys, words):
    need_tool("tshark")
    cap = shared("pcap2qlog/multi_stream.pcap")
    # truth: the packets holding a QUIC packet tshark cannot open (its quic.remaining_payload: "Secrets are
    # not available"), and who sent them
    out = run_tool("tshark", "-r", str(cap), "-Y", "quic", "-T", "fields", "-e", "frame.number", "-e", "udp.srcport",
                   "-e", "quic.remaining_payload")
    rows = [r.split("\t") for r in out.splitlines() if r]
    client = int(rows[0][1])
    failed = {int(n): int(sport) != client for n, sport, rest in rows if rest}
    assert len(failed) > 10
    kl = []
    if keys == "empty":
        (tmp_path / "empty.keys").write_text("\n")
        kl = [str(tmp_path / "empty.keys")]
    an = analyze(str(cap), keylogs=kl)
    prot = [f for f in an.frames if f.protocol == "quic" and f.type == "PROTECTED"]
    assert {f.packet for f in prot} == set(failed)
    from wirefall.dissectors.quic import EPOCH

    for f in prot:
        label = LABELS[(EPOCH[f.fields["packet_type"]], int(failed[f.packet]))]
        assert f.error == f"cannot decrypt {f.fields['packet_type']} packet: {words} ({label} needed)", f.error
    assert not any("in the key log" in str(n) for c in an.connections for n in c.notes)


def test_a_key_log_without_this_client_random_still_says_so():
    """A key log of another load: the packet's reason names the secret it lacks (unchanged)."""
    cap = shared("pcap2qlog/multi_stream.pcap")
    an = analyze(str(cap), keylogs=[str(SAMPLES / "quic" / "aioquic-h3.keys")])
    errs = {f.error for f in an.frames if f.type == "PROTECTED"}
    assert errs and all(e.endswith("in the key log for this client random") for e in errs), errs
