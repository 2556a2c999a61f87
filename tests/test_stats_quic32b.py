"""``wirefall stats`` on QUIC: what the capture shows carried again, and what it lacks.

The TCP ``retransmissions`` (and the text tables' ``retrans``) read 0 / 0 on QUIC connections —
"nothing was sent twice" — where the amazon load's connection 18 (client port 38863) sent 1,208
bytes of stream 4 twice (packet 520 repeats offset 7228 of packet 497).  The stats now carry, per
connection and direction, the STREAM and CRYPTO bytes the capture carried again
(``quic_data_again``) and the application-space packet numbers missing from it
(``quic_packets_missing``), and the text tables show ``-`` for TCP's columns on QUIC rows.

Outside truth: tshark 4.0's decrypted QUIC (``-T json``): each STREAM frame's stream id, offset and
length (``quic.stream.*``; a frame without a length runs to its packet's end: its
``quic.stream_data``), each CRYPTO frame's offset and length per packet type, and
``quic.packet_number`` of each short-header (1-RTT) and 0-RTT packet per direction."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import SAMPLES, run_tool, shared

from wirefall.analyzer import stats as S
from wirefall.analyzer.pipeline import analyze

LOSSY_H3 = SAMPLES / "lossy" / "page-h3.pcapng"
PAGE_H2 = SAMPLES / "page" / "page-h2.pcapng"


def _list(x) -> list:
    return [] if x is None else x if isinstance(x, list) else [x]


def _tshark_quic(cap: Path, keys: Path) -> dict:
    """Per (client port, direction) from tshark: {"again": bytes of STREAM/CRYPTO data already
    carried, "pns": application-space packet numbers}.  Direction 0 = from the client (the port
    that is not 443 / the lower-numbered server's)."""
    out = run_tool("tshark", "-r", str(cap), "-o", f"tls.keylog_file:{keys}", "-Y", "quic", "-T", "json",
                   "--no-duplicate-keys", "-J", "frame udp quic")
    seen: dict[tuple, list[tuple[int, int]]] = {}  # (client port, dir, "s"/"c", stream id or packet type) -> ranges
    res: dict[tuple[int, int], dict] = {}
    server_ports = {443, 34476, 4433}
    for pkt in json.loads(out):
        lay = pkt["_source"]["layers"]
        sp, dp = int(lay["udp"]["udp.srcport"]), int(lay["udp"]["udp.dstport"])
        d = 0 if dp in server_ports else 1
        port = sp if d == 0 else dp
        r = res.setdefault((port, d), {"again": 0, "pns": set()})
        for q in _list(lay.get("quic")):
            if not isinstance(q, dict):
                continue
            short = q.get("quic.short")
            ptype = None if short is not None else q.get("quic.long.packet_type")
            pn = (short or {}).get("quic.packet_number") if short is not None else q.get("quic.packet_number")
            if pn is not None and (short is not None or ptype == "1"):  # 1-RTT, 0-RTT: the application space
                r["pns"].add(int(pn))
            for f in _list(q.get("quic.frame")):
                if not isinstance(f, dict):
                    continue
                if "quic.stream.stream_id" in f:
                    key = (port, d, "s", int(f["quic.stream.stream_id"]))
                    off = int(f.get("quic.stream.offset", 0))
                    ln = f.get("quic.stream.length")
                    data = f.get("quic.stream_data") or ""
                    n = int(ln) if ln is not None else (len(data) + 1) // 3
                elif "quic.crypto.offset" in f:
                    key = (port, d, "c", "short" if short is not None else ptype)
                    off, n = int(f["quic.crypto.offset"]), int(f["quic.crypto.length"])
                else:
                    continue
                prev = seen.setdefault(key, [])
                r["again"] += sum(max(0, min(off + n, b) - max(off, a)) for a, b in _merge(prev))
                prev.append((off, off + n))
    return res


def _merge(rs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[list[int]] = []
    for a, b in sorted(rs):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def _missing(pns: set[int]) -> int:
    return max(pns) - min(pns) + 1 - len(pns) if pns else 0


def _check_against_tshark(an, st: S.Stats, truth: dict) -> set[int]:
    """Every QUIC connection tshark decrypts: its data again and packet numbers missing, per
    direction, are tshark's.  The client ports compared."""
    ports = set()
    for c, cb in zip(an.connections, st.connections):
        if not cb.quic_connections:
            continue
        port = c.client[1]
        if (port, 0) not in truth or not (truth[(port, 0)]["pns"] or truth.get((port, 1), {}).get("pns")):
            continue  # (tshark did not decrypt it: amazon's connection 16 joined mid-way, opened here by trial)
        ports.add(port)
        t = [truth.get((port, d), {"again": 0, "pns": set()}) for d in (0, 1)]
        assert cb.quic_data_again == [t[0]["again"], t[1]["again"]], (c.id, port)
        assert cb.quic_packets_missing == [_missing(t[0]["pns"]), _missing(t[1]["pns"])], (c.id, port)
        assert cb.quic_not_decrypted == [0, 0]
        assert cb.retransmissions == [0, 0]  # (TCP's meaning kept: no TCP segment)
    return ports


@pytest.fixture(scope="module")
def amazon_keys(tmp_path_factory) -> tuple[Path, Path]:
    import gzip

    cap = shared("pageload-amazon/amazon1.cap.gz")
    keys = tmp_path_factory.mktemp("amz") / "amazon1.key_log.txt"
    keys.write_bytes(gzip.decompress(shared("pageload-amazon/amazon1.key_log.txt.gz").read_bytes()))
    return cap, keys


@pytest.mark.slow
def test_amazon_quic_data_again_and_missing_numbers_are_tsharks(amazon_keys):
    cap, keys = amazon_keys
    an = analyze(str(cap), keylogs=[str(keys)])
    st = S.compute(an, tcp_analysis=True)
    truth = _tshark_quic(cap, keys)
    # the review's case, in tshark's own frames: packet 520 repeats stream 4 at offset 7228, carried by 497
    rows = run_tool("tshark", "-r", str(cap), "-o", f"tls.keylog_file:{keys}", "-Y", "frame.number == 497 || frame.number == 520",
                    "-T", "fields", "-e", "udp.srcport", "-e", "quic.stream.stream_id", "-e", "quic.stream.offset").split("\n")
    assert rows[:2] == ["38863\t4\t7228", "38863\t4\t7228"]
    assert truth[(38863, 0)]["again"] == 1208 and truth[(38863, 1)]["again"] == 0
    ports = _check_against_tshark(an, st, truth)
    assert ports == {38863, 46250, 47668, 54950}
    (c18,) = [cb for c, cb in zip(an.connections, st.connections) if c.client[1] == 38863]
    assert c18.quic_data_again == [1208, 0] and c18.quic_packets_missing == [1, 0]  # (client pn 21: Chrome skips one before a probe)
    # the h3 row and the capture's add their connections' (connection 16, joined mid-way, is "quic")
    h3 = st.protocols["h3"]
    assert h3.quic_connections == 4 and h3.quic_data_again == [1208, 0]
    assert st.capture.quic_connections == 5 and st.capture.quic_data_again == [1208, 0]
    assert st.capture.quic_packets_missing == [sum(cb.quic_packets_missing[0] for cb in st.connections),
                                               sum(cb.quic_packets_missing[1] for cb in st.connections)]
    # JSON: retransmissions keeps TCP's meaning, the QUIC figures are new names; no QUIC on a TCP row: null
    j = S.to_dict(st)
    (j18,) = [b for b in j["connections"] if b["name"] == f"connection {next(c.id for c in an.connections if c.client[1] == 38863)}"]
    assert j18["retransmissions"] == [0, 0] and j18["tcp_retransmissions"] == [0, 0]
    assert (j18["quic_connections"], j18["quic_data_again"], j18["quic_packets_missing"], j18["quic_not_decrypted"]) == (
        1, [1208, 0], [1, 0], [0, 0])
    assert j["protocols"]["h2"]["quic_data_again"] is None and j["protocols"]["h2"]["quic_connections"] == 0
    # text: the QUIC row's TCP columns are "-", not "0 / 0"; "QUIC again" has the bytes
    text = S.render_text(st)
    lines = text.splitlines()
    head = next(i for i, ln in enumerate(lines) if ln.startswith("protocol  conns"))
    cols = _columns(lines[head])
    h3_row = next(ln for ln in lines[head:] if ln.startswith("h3 "))
    assert _cell(h3_row, cols, "retrans") == "-" and _cell(h3_row, cols, "QUIC again") == "1,208 / 0"
    all_row = next(ln for ln in lines[head:] if ln.startswith("all "))
    assert _cell(all_row, cols, "QUIC again") == "1,208 / 0"
    chead = next(i for i, ln in enumerate(lines) if ln.startswith("id  protocol"))
    ccols = _columns(lines[chead])
    row18 = next(ln for ln in lines[chead:] if "10.20.0.3:38863" in ln)
    assert [_cell(row18, ccols, k) for k in ("retrans", "gaps", "QUIC again", "PN gaps")] == ["-", "-", "1,208 / 0", "1 / 0"]
    assert "no figure from the capture alone counts that loss" in " ".join(text.split())


def _columns(header: str) -> dict[str, tuple[int, int]]:
    """Column name -> (start, end) in a right-aligned table's header (names end where cells end)."""
    import re

    out = {}
    prev = 0
    for m in re.finditer(r"\S+(?: \S+)*", header):  # (names with one space: "wire bytes", "QUIC again")
        out[m.group()] = (prev, m.end())
        prev = m.end()
    return out


def _cell(row: str, cols: dict, name: str) -> str:
    a, b = cols[name]
    return row[a:b].strip()


def test_lossy_h3_missing_packet_numbers_are_tsharks_and_carried_again_none():
    """The lossy HTTP/3 load lost 11 server packets before the capture point: QUIC sent their data
    again in new packets, so the capture holds no second copy (data again 0 / 0, as tshark's
    frames say), and their numbers are the server's packet numbers missing (tshark's: 11)."""
    keys = LOSSY_H3.with_suffix(".keys")
    an = analyze(str(LOSSY_H3), keylogs=[str(keys)])
    st = S.compute(an)
    truth = _tshark_quic(LOSSY_H3, keys)
    assert _check_against_tshark(an, st, truth) == {57706}
    assert _missing(truth[(57706, 1)]["pns"]) == 11 and truth[(57706, 1)]["again"] == 0
    (cb,) = st.connections
    assert cb.quic_packets_missing == [0, 11] and cb.quic_data_again == [0, 0]
    text = S.render_text(st)
    assert "lost before the capture point, or a number the sender skipped" in " ".join(text.split())


def test_without_keys_quic_figures_are_unknown_not_zero():
    """No key log: the 1-RTT packets are not opened, their numbers and data unknown: counted in
    ``quic_not_decrypted`` and shown "?" (tshark opens none of them either)."""
    an = analyze(str(LOSSY_H3))
    st = S.compute(an)
    (cb,) = st.connections
    assert cb.quic_connections == 1 and cb.quic_not_decrypted == [1, 1] and cb.quic_packets_missing == [0, 0]
    j = S.block_dict(cb)
    assert j["quic_not_decrypted"] == [1, 1]
    text = S.render_text(st)
    lines = text.splitlines()
    chead = next(i for i, ln in enumerate(lines) if ln.startswith("id  protocol"))
    row = lines[chead + 2]
    cols = _columns(lines[chead])
    assert [_cell(row, cols, k) for k in ("retrans", "QUIC again", "PN gaps")] == ["-", "? / ?", "? / ?"]
    assert "QUIC ≥: packets that way not decrypted" in text
    # (tshark, without keys, sees no STREAM frame either: what they carried is not in sight)
    assert not run_tool("tshark", "-r", str(LOSSY_H3), "-Y", "quic.stream.stream_id", "-T", "fields", "-e", "frame.number").strip()


def test_a_tcp_capture_has_no_quic_columns_and_null_quic_fields():
    st = S.compute(analyze(str(PAGE_H2), keylogs=[str(PAGE_H2.with_suffix(".keys"))]))
    text = S.render_text(st)
    assert "QUIC again" not in text and "PN gaps" not in text
    j = S.to_dict(st)
    assert j["capture"]["quic_connections"] == 0
    assert all(j["capture"][k] is None for k in ("quic_data_again", "quic_packets_missing", "quic_not_decrypted"))
