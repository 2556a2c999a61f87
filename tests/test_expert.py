"""Expert information (analyzer.expert) against tshark 4.0, packet by packet.

For every packet, the TCP items (tcp.analysis flags, SYN/SYN+ACK/FIN/RST, who closes first,
D-SACK) and the HTTP/1 chat items wirefall lists equal tshark's ``_ws.expert.message``,
``.severity`` and ``.group`` on that packet, as a multiset (tshark with the decode-as ports and
out-of-order reassembly oracle/crosscheck.py gives it).  Inputs: the real lossy page loads,
other real samples, and real samples made lossy and reordered by
scripts/crosscheck/make_tcp_analysis_captures.py (segments deleted, neighbours swapped, packets
duplicated) plus its hand-built scenarios (every TCP analysis flag).  The grouped counts equal
``tshark -q -z expert``'s; wirefall's own items are checked against what tshark decodes of the
same frames (RST_STREAM error codes, response status codes).
"""
from __future__ import annotations

import collections
import json
import os
import re
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest
import tshark_tap
from field_oracle import tshark_expert_items

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from wirefall.analyzer import expert  # noqa: E402
from wirefall.analyzer.pipeline import analyze  # noqa: E402
from scripts.crosscheck import make_tcp_analysis_captures as mk  # noqa: E402

SAMPLES = ROOT / "sample_captures"
pytestmark = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")

# the tshark items wirefall makes too (the others — TLS, QUIC, HTTP/2 — are not compared)
_COMPARED = re.compile(r"^(This frame is a|This frame (initiates|undergoes)|Previous segment|ACKed segment|TCP |Duplicate ACK|"
                       r"Connection (establish|finish|reset)|D-SACK|A new tcp|ACK to a TCP|"
                       # the TCP option items (session 37: analyzer/fields/tcp.option_items)
                       r"4 NOP in a row|The (non-)?SYN packet does|Window scale shift|suboption would|Non-zero header padding|"
                       r"option length|[^:]*\((length byte past|with too-short|option length =)|Malformed Packet)|\\r\\n$")


def _keys(path: Path) -> Path | None:
    k = path.with_suffix(".keys")
    return k if k.exists() else None


@cache
def _analysis(path: str):
    p = Path(path)
    k = _keys(p)
    return analyze(path, [str(k)] if k else None)


_tshark_args = tshark_tap.decode_args


def _tshark_cmd(path: Path, *extra: str) -> list[str]:
    cmd = ["tshark", "-n", "-r", str(path)]
    k = _keys(path)
    if k:
        cmd += ["-o", f"tls.keylog_file:{k}"]
    return cmd + _tshark_args(_analysis(str(path))) + list(extra)


@cache
def _tshark_items(path: str) -> dict[int, collections.Counter]:
    return tshark_expert_items(_tshark_cmd(Path(path)), _COMPARED)


def _ours(path: str) -> dict[int, collections.Counter]:
    res: dict[int, collections.Counter] = collections.defaultdict(collections.Counter)
    for it in expert.compute(_analysis(path)):
        if it.origin == expert.Origin.WIRESHARK:
            assert it.packet is not None
            res[it.packet][(it.summary, int(it.severity), int(it.group))] += 1
    return res


def _differences(path, http: bool = True) -> tuple[int, list[str]]:
    """(tshark's items compared, packets whose items differ); ``http=False``: TCP items only."""
    path = str(path)
    ours, theirs = _ours(path), _tshark_items(path)
    bad = []
    keep = (lambda c: c) if http else (lambda c: collections.Counter({k: v for k, v in c.items() if not k[0].endswith("\\r\\n")}))
    for n in sorted(set(ours) | set(theirs)):
        a, b = keep(ours.get(n, collections.Counter())), keep(theirs.get(n, collections.Counter()))
        if a != b:
            bad.append(f"packet {n}: wirefall only {dict(a - b)}, tshark only {dict(b - a)}")
    return sum(sum(c.values()) for c in theirs.values()), bad


REAL = [SAMPLES / "lossy" / f"page-{p}.pcapng" for p in ("h1", "h2", "spdy", "h3")] + [
    SAMPLES / "page" / "page-h1.pcapng", SAMPLES / "page" / "page-h2.pcapng", SAMPLES / "tcp-port-reuse.pcap",
    SAMPLES / "http" / "h2c-node.pcap", SAMPLES / "http" / "h2c-upgrade.pcap", SAMPLES / "http" / "h2-tls.pcap"]


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_tcp_and_http_items_equal_tsharks_packet_by_packet(path):
    n, bad = _differences(path)
    assert not bad, f"{path.name}: {len(bad)} packets differ from tshark:\n" + "\n".join(bad[:20])
    if "h3" not in path.name:  # (QUIC only: no TCP item to compare)
        assert n > 0


@pytest.fixture(scope="module")
def reordered(tmp_path_factory):
    """Real samples made lossy and reordered, and the hand-built TCP scenarios."""
    d = tmp_path_factory.mktemp("expert")
    out = {"scenarios": mk.scenarios(d / "tcp-scenarios.pcap")}
    srcs = {"h2": SAMPLES / "lossy" / "page-h2.pcapng", "h1": SAMPLES / "page" / "page-h1.pcapng"}
    for name, s in srcs.items():
        for v, kw in {"drop7": dict(drop_every=7), "swap3": dict(swap_every=3), "mixed": dict(drop_every=11, swap_every=4, dup_every=9)}.items():
            out[f"{name}-{v}"] = mk.derive(s, d / f"{name}-{v}.pcap", **kw)
    return out


def test_tcp_items_equal_tsharks_on_reordered_and_lossy_captures(reordered):
    """TCP items only: with segments deleted, tshark's HTTP reassembly and wirefall's part ways
    (wirefall declares a gap and goes on; tshark waits for bytes that never come)."""
    kinds: collections.Counter = collections.Counter()
    for name, path in reordered.items():
        n, bad = _differences(path, http=False)
        assert not bad, f"{name}: {len(bad)} packets differ from tshark:\n" + "\n".join(bad[:20])
        kinds.update(it.kind for it in expert.compute(_analysis(str(path))) if it.origin == expert.Origin.WIRESHARK)
    # the crafted captures reach the items, so the comparison above compared something
    for k in ("tcp.analysis.retransmission", "tcp.analysis.fast_retransmission", "tcp.analysis.out_of_order",
              "tcp.analysis.lost_segment", "tcp.analysis.ack_lost_segment", "tcp.analysis.duplicate_ack",
              "tcp.analysis.zero_window", "tcp.analysis.window_full", "tcp.analysis.keep_alive", "tcp.analysis.window_update",
              "tcp.connection.syn", "tcp.connection.synack", "tcp.connection.fin_active", "tcp.connection.fin_passive",
              "tcp.connection.rst"):
        assert kinds[k], f"no {k} item in the crafted captures"


def _z_expert(path: Path) -> list[tuple[str, int, str, str, str]]:
    """tshark -q -z expert as (section, frequency, group, protocol, summary) rows."""
    out = subprocess.run(_tshark_cmd(path, "-q", "-z", "expert"), capture_output=True, text=True, timeout=600, check=True).stdout
    rows, section = [], ""
    for line in out.splitlines():
        m = re.match(r"^(\w+) \(\d+\)$", line)
        if m:
            section = m.group(1)
            continue
        m = re.match(r"^\s+(\d+)\s+(\S+)\s+(\S+)\s\s(.*)$", line)
        if m and section:
            rows.append((section, int(m.group(1)), m.group(2), m.group(3), m.group(4)))
    return rows


def test_grouped_counts_equal_tshark_z_expert():
    path = SAMPLES / "lossy" / "page-h2.pcapng"
    items = [it for it in expert.compute(_analysis(str(path))) if it.origin == expert.Origin.WIRESHARK]
    ours = sorted((expert.SECTION[sev], n, g.label, p, s) for sev, rows in expert.grouped(items) for n, g, p, s in rows)
    theirs = sorted(r for r in _z_expert(path) if _COMPARED.search(r[4]))
    assert ours == theirs
    # and the text output prints the same table
    text = expert.render_text(items)
    for sec, n, g, p, s in theirs:
        assert re.search(rf"^\s+{n}\s+{g}\s+{p}\s\s{re.escape(s)}$", text, re.M), (sec, n, s)


def test_stream_errors_and_response_codes_are_tsharks_frames():
    """wirefall's own items name what tshark decodes on the same packets: RST_STREAM error
    codes and the status of 4xx/5xx responses (h2c-node: a 404, an INTERNAL_ERROR, a CANCEL)."""
    from wirefall.dissectors.http2 import error_name

    path = SAMPLES / "http" / "h2c-node.pcap"
    an = _analysis(str(path))
    out = subprocess.run(_tshark_cmd(path, "-Y", "http2.type == 3 || http2.headers.status >= 400", "-T", "fields", "-E", "occurrence=a",
                                     "-E", "aggregator=,", "-e", "frame.number", "-e", "http2.type", "-e", "http2.rst_stream.error",
                                     "-e", "http2.headers.status", "-e", "http2.streamid"),
                         capture_output=True, text=True, timeout=300, check=True).stdout
    want = set()
    for line in out.splitlines():
        n, types, errs, status, sids = (line.split("\t") + [""] * 5)[:5]
        types_l, sids_l = types.split(","), sids.split(",")
        errs_l = iter(e for e in errs.split(",") if e)
        for t, sid in zip(types_l, sids_l, strict=False):
            if t == "3":
                want.add(("rst", int(n), int(sid), error_name(int(next(errs_l)))))
        for st in (s for s in status.split(",") if s):
            if int(st) >= 400:
                want.add(("status", int(n), int(st)))
    got = set()
    for it in expert.compute(an):
        if it.kind == "wirefall.stream_error" and it.args[1].startswith("RST_STREAM"):
            got.add(("rst", it.packet, int(it.args[1].split()[-1]), it.args[2]))
        elif it.kind == "wirefall.response_code":
            got.add(("status", it.packet, it.args[1]))
    assert got == want and len(want) >= 3
    sev = {it.args[2]: it.severity for it in expert.compute(an) if it.kind == "wirefall.stream_error"}
    assert sev["CANCEL"] == expert.Severity.NOTE and sev["INTERNAL_ERROR"] == expert.Severity.WARN


def test_notes_and_undecrypted_packets_become_items_with_their_packet():
    """A QUIC capture without keys: one Decryption warning per packet the session noted, on
    that packet; the frame errors that repeat the notes are not listed twice."""
    path = SAMPLES / "quic" / "aioquic-h3-cut.pcap"
    an = analyze(str(path))  # no key log
    items = expert.compute(an)
    notes = [(c.id, int(m.group(1)), m.string[m.end():]) for c in an.connections for n in c.notes if (m := re.match(r"packet (\d+): ", n))]
    assert notes
    got = [(it.connection, it.packet, it.summary) for it in items if it.kind == "wirefall.note"]
    assert sorted(got) == sorted(notes)
    assert all(it.group == expert.Group.DECRYPTION for it in items if it.kind == "wirefall.note" and "decrypt" in it.summary)
    assert not [it for it in items if it.kind == "wirefall.malformed" and (it.connection, it.packet, it.args[2]) in set(notes)]
    assert any(it.kind == "wirefall.completeness.not_decrypted" for it in items)


def _cli(*args, expect=0) -> subprocess.CompletedProcess:
    r = subprocess.run([sys.executable, "-m", "wirefall", *args], capture_output=True, text=True, timeout=300, cwd=ROOT,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == expect, r.stderr
    return r


def test_cli_expert_text_json_and_filter():
    path = SAMPLES / "lossy" / "page-h2.pcapng"
    keys = str(path.with_suffix(".keys"))
    js = json.loads(_cli("expert", str(path), "--keylog", keys, "--json").stdout)
    items = expert.compute(_analysis(str(path)))
    assert len(js["items"]) == len(items) and js["items"][0] == expert.item_dict(items[0])
    assert sum(js["counts"].values()) == len(items)
    txt = _cli("expert", str(path), "--keylog", keys).stdout
    head, _, rows = txt.partition(" packet  conn  severity")
    assert head.startswith("Warns (") and len(rows.splitlines()) - 1 == len(items)
    # -Y keeps the items of the packets the filter shows: the RSTs, as tshark's -Y tcp.flags.reset == 1 shows them
    rst = json.loads(_cli("expert", str(path), "--keylog", keys, "--json", "-Y", "tcp.flags.reset == 1").stdout)
    pk = subprocess.run(["tshark", "-n", "-r", str(path), "-Y", "tcp.flags.reset == 1", "-T", "fields", "-e", "frame.number"],
                        capture_output=True, text=True, check=True).stdout.split()
    assert sorted({i["packet"] for i in rst["items"]}) == [int(p) for p in pk]
    assert {i["kind"] for i in rst["items"]} == {"tcp.connection.rst"}
    r = _cli("expert", str(path), "-Y", "tcp.prot == 1", expect=2)
    assert "unknown field 'tcp.prot'" in r.stderr and "Traceback" not in r.stderr


def test_items_are_typed_and_text_only_when_shown():
    an = _analysis(str(SAMPLES / "lossy" / "page-h2.pcapng"))
    it = next(i for i in expert.compute(an) if i.kind == "tcp.analysis.duplicate_ack")
    assert isinstance(it.severity, expert.Severity) and isinstance(it.group, expert.Group)
    assert it.args and isinstance(it.args[0], int) and it.summary == f"Duplicate ACK (#{it.args[0]})"
    with pytest.raises(AttributeError):
        it.packet = 1  # type: ignore[misc]
    assert expert.compute(an) is expert.compute(an)  # computed once


def test_tui_expert_tab_lists_the_items_and_enter_goes_to_the_packet():
    import asyncio

    from textual.widgets import TabbedContent

    from wirefall.ui.tui.app import WirefallApp
    from wirefall.ui.tui.expert import ExpertList, item_line
    from wirefall.ui.tui.widgets import PacketList

    path = SAMPLES / "lossy" / "page-h2.pcapng"
    want = expert.compute(_analysis(str(path)))

    async def run():
        app = WirefallApp(str(path), [str(path.with_suffix(".keys"))])
        async with app.run_test(size=(200, 50)) as pilot:
            for _ in range(300):
                await pilot.pause(0.05)
                if app.loaded or app.load_error:
                    break
            await pilot.press("5")
            lst = app.query_one(ExpertList)
            for _ in range(300):
                await pilot.pause(0.05)
                if lst.count:
                    break
            assert app.query_one(TabbedContent).active == "expert"
            assert [item_line(i) for i in lst.items] == [item_line(i) for i in want]
            assert lst.visible_lines()[0] == item_line(want[0])
            k = next(i for i, it in enumerate(lst.items) if it.kind == "tcp.connection.rst")
            lst.move_to(k)
            await pilot.press("enter")
            await pilot.pause(0.1)
            assert app.query_one(TabbedContent).active == "packets"
            assert app.query_one(PacketList).current_packet == lst.items[k].packet

    asyncio.run(run())


def test_web_expert_tab_rows_and_click_go_to_the_packet(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    import dash_ag_grid as dag

    from wirefall.ui.web import WebState
    from wirefall.ui.web import expert as wexpert
    from wirefall.ui.web.app import TABS, create_app, layout

    path = SAMPLES / "lossy" / "page-h2.pcapng"
    st = WebState(use_cache=False)
    try:
        e = st.add_file(str(path), [str(path.with_suffix(".keys"))], name=path.name)
        st.wait(e.id)
        assert e.status == "done", e.error
        counts, rows = wexpert.cb_expert(e, "expert")
        want = expert.compute(_analysis(str(path)))
        assert [r["packet"] for r in rows] == [it.packet for it in want]
        assert [(r["severity"], r["group"], r["summary"]) for r in rows] == [
            (it.severity.label.lower(), it.group.label, it.summary) for it in want]
        assert "Warns: 14" in str(counts)  # tshark -z expert: Warns (14) on this capture
        assert wexpert.cb_expert(e, "packets") == (wexpert.no_update, wexpert.no_update)  # only the tab on show computes
        rst = next(r for r in rows if r["kind"] == "tcp.connection.rst")
        assert wexpert.cb_expert_go({"data": rst, "colId": "summary"}) == ("packets", rst["packet"])
        assert wexpert.cb_expert_go({"data": {"packet": None}}) == (wexpert.no_update, wexpert.no_update)
        # the tab is in the page, its grid an AgGrid, its name a valid tab in the URL
        lay = layout(st)
        grid = next(c for c in lay._traverse() if getattr(c, "id", None) == "expert-grid")
        assert isinstance(grid, dag.AgGrid) and "expert" in TABS
        app = create_app(st)
        outs = " ".join(str(k) for k in app.callback_map)
        assert "expert-grid.rowData" in outs and "expert-counts.children" in outs
    finally:
        st.close()


@pytest.mark.parametrize("rel,keys", [("pcap2qlog/ngtcp2-29-dsb.pcapng", None), ("retina/quic_retry.pcapng", None),
                                      ("pageload-amazon/amazon1.cap.gz", "pageload-amazon/amazon1.key_log.txt.gz")])
def test_quic_reused_offsets_are_tsharks(rel, keys, tmp_path):
    """quic.retransmission (a CRYPTO frame resent: after a Retry, a lost Handshake flight) on
    the packets tshark marks, as many times — and not on Chromium's shuffled ClientHello frames
    or a resent STREAM frame, which tshark 4.0 does not mark."""
    import gzip

    sh = ROOT.parent / "shared" / "captures"
    if not (sh / rel).exists():
        pytest.skip(f"{rel} not present")
    p, k = sh / rel, (sh / keys if keys else None)
    if rel.endswith(".gz"):
        p = tmp_path / "c.pcap"
        p.write_bytes(gzip.decompress((sh / rel).read_bytes()))
        k = tmp_path / "k.txt"
        k.write_bytes(gzip.decompress((sh / keys).read_bytes()))
    an = analyze(str(p), [str(k)] if k else None)
    ours = sorted(i.packet for i in expert.compute(an) if i.kind == "quic.retransmission")
    cmd = ["tshark", "-r", str(p), "-Y", "quic.retransmission", "-T", "fields", "-e", "frame.number", "-e", "_ws.expert.message"]
    if k:
        cmd[3:3] = ["-o", f"tls.keylog_file:{k}"]
    theirs = []
    for line in subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.splitlines():
        n, msgs = line.split("\t")
        theirs += [int(n)] * msgs.count("reused stream offset")
    assert ours == sorted(theirs)
    if "amazon" not in rel:
        assert ours
