"""The TCP options' expert items in ``wirefall expert`` (analyzer/expert.py), against tshark 4.0
item by item, on the 50 built connections of tests/test_tcp_options37.py (its capture, built by
its ``_write``): an EOL followed by other bytes, NOP runs, length bytes missing, too short or
running past the options, window scale shifts over 14, options of a wrong length, an MSS on a
data segment, SYNs without MSS, SACK options cut short, D-SACK blocks, SACK options tshark
throws on.

Before (session 37) the detail tree showed these items and ``wirefall expert`` listed only the
D-SACK one: the tree decided them, the list did not.  Both now take them from one function,
``analyzer.fields.tcp.option_items``.

Outside truth: tshark 4.0's ``-T pdml`` — every expert item under its ``Options:`` line and
the ``Malformed Packet`` of a throw, with its expert field, message, severity and group, in
order — and its ``-z expert`` table (frequency, group, protocol, summary).  tshark's ``-q -z
expert`` (no tree built) leaves "4 NOP in a row" out — its NOP count runs only with a tree —
while its tree, ``-V -z expert``, ``-T fields -e _ws.expert.message`` and Wireshark's Expert
Info dialog list it: wirefall lists it, as its tree shows it."""
from __future__ import annotations

import collections
import json
import os
import random
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conftest import need_tool, run_tool
from test_tcp_options37 import CASES, NAMES, _packet, _write
from wirefall.analyzer import expert
from wirefall.analyzer.fields.tcp import option_items, plain_options

ROOT = Path(__file__).resolve().parents[1]

# the expert fields tshark 4.0 raises on TCP options (packet-tcp.c), and the throw's
OPTION_KINDS = {"tcp.nop", "tcp.options.mss.present", "tcp.options.mss.absent", "tcp.option.len.invalid",
                "tcp.options.wscale.shift.invalid", "tcp.suboption_malformed", "tcp.options.sack.dsack",
                "tcp.non_zero_bytes_after_eol", "_ws.malformed.expert"}

Item = tuple[str, str, str, str]  # (expert field, message, severity, group)


@pytest.fixture(scope="module")
def capture(tmp_path_factory) -> Path:
    need_tool("tshark")
    path = tmp_path_factory.mktemp("tcpexpert37") / "options.pcap"
    _write(path)
    return path


def _wirefall(*args: str) -> str:
    r = subprocess.run([sys.executable, "-m", "wirefall", *args], capture_output=True, text=True, timeout=300, cwd=ROOT,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.fixture(scope="module")
def ours(capture) -> dict:
    return json.loads(_wirefall("expert", str(capture), "--json"))


def _label(cls, value: str) -> str:
    return cls(int(value)).label


@pytest.fixture(scope="module")
def theirs(capture) -> dict[int, list[Item]]:
    """packet -> tshark's expert items under its Options line and in its Malformed Packet, in
    tree order."""
    out: dict[int, list[Item]] = {}
    root = ET.fromstring(run_tool("tshark", "-n", "-r", str(capture), "-T", "pdml"))
    for pkt in root.iter("packet"):
        n = int(next(f for f in pkt.iter("field") if f.get("name") == "frame.number").get("show") or 0)
        where = [f for f in pkt.iter("field") if f.get("name") == "tcp.options"]
        where += [p for p in pkt.iter("proto") if p.get("name") == "_ws.malformed"]
        for w in where:
            for e in w.iter("field"):
                if e.get("name") != "_ws.expert":
                    continue
                sub = {f.get("name"): f for f in e.findall("field")}
                field = next(f.get("name") for f in e.findall("field") if not (f.get("name") or "").startswith("_ws.expert"))
                out.setdefault(n, []).append((field or "", sub["_ws.expert.message"].get("show") or "",
                                              _label(expert.Severity, sub["_ws.expert.severity"].get("show") or ""),
                                              _label(expert.Group, sub["_ws.expert.group"].get("show") or "")))
    return out


def _ours_by_packet(js: dict) -> dict[int, list[Item]]:
    out: dict[int, list[Item]] = {}
    for it in js["items"]:
        if it["kind"] in OPTION_KINDS:
            assert (it["origin"], it["protocol"]) == ("wireshark", "TCP"), it
            out.setdefault(it["packet"], []).append((it["kind"], it["summary"], it["severity"].capitalize(), it["group"]))
    return out


def _case_of(n: int) -> str:
    return f"{NAMES[(n - 1) // 5]} frame {(n - 1) % 5 + 1}"


def test_items_are_tsharks_packet_by_packet(ours, theirs):
    """Every TCP-option item on every packet: its expert field (the JSON's ``kind``), message
    (``summary``), severity and group as tshark's, in tshark's order; none more, none fewer."""
    mine = _ours_by_packet(ours)
    bad = [f"{_case_of(n)}: wirefall {mine.get(n)} tshark {theirs.get(n)}" for n in sorted(set(mine) | set(theirs))
           if mine.get(n) != theirs.get(n)]
    assert not bad, "\n".join(bad)


def test_the_comparison_reaches_every_kind(theirs):
    """(tshark raises every kind of the list here, and none other under the options)"""
    kinds = collections.Counter(k for items in theirs.values() for k, _, _, _ in items)
    assert set(kinds) == OPTION_KINDS
    words = {m for items in theirs.values() for _, m, _, _ in items}
    for w in ("Window scale (length byte past end of options)", "Window scale (with too-short option length = 1 byte)",
              "Window scale (with too-short option length = 0 bytes)", "option length should be 10",
              "SACK (option length = 18 bytes says option goes past end of options)", "Unknown (0x09) (length byte past end of options)"):
        assert w in words
    # two D-SACK items on one packet (one per SACK option marked), a throw after a D-SACK
    assert [k for k, _, _, _ in theirs[_packet("dsack_in_two_options", 5)]] == ["tcp.options.sack.dsack"] * 2
    assert [k for k, _, _, _ in theirs[_packet("dsack_then_short", 5)]] == ["tcp.options.sack.dsack", "tcp.suboption_malformed",
                                                                             "_ws.malformed.expert"]


def _table(text: str) -> list[tuple[str, int, str, str, str]]:
    """The ``-z expert`` table's rows (section, frequency, group, protocol, summary) of ``text``
    (tshark's, or wirefall expert's, which prints the table first)."""
    rows, section = [], ""
    for line in text.splitlines():
        m = re.match(r"^(Errors|Warns|Notes|Chats|Comments) \(\d+\)$", line)
        if m:
            section = m.group(1)
            continue
        if not line.strip():
            if rows:
                section = ""
            continue
        m = re.match(r"^\s+(\d+)\s+(\S+)\s+(\S+)\s\s(.*)$", line)
        if m and section:
            rows.append((section, int(m.group(1)), m.group(2), m.group(3), m.group(4)))
    return rows


def test_text_table_is_tsharks(capture):
    """``wirefall expert``'s table: every row of tshark's ``-z expert`` (with its tree built:
    ``-V``), the TCP-option rows included, frequency, group, protocol and words; tshark's ``-q
    -z expert`` the same but for "4 NOP in a row" (the one item its faked tree leaves out)."""
    mine = sorted(_table(_wirefall("expert", str(capture))))
    full = run_tool("tshark", "-n", "-r", str(capture), "-V", "-z", "expert")
    full = full[full.rindex("\n\nErrors (") :]  # (the table, after the packets' trees)
    with_tree = sorted(_table(full))
    assert mine == with_tree
    quiet = sorted(_table(run_tool("tshark", "-n", "-r", str(capture), "-q", "-z", "expert")))
    assert quiet == [r for r in with_tree if not r[4].startswith("4 NOP in a row")]
    assert ("Warns", 5, "Protocol", "TCP", "4 NOP in a row - a router may have removed some options") in with_tree
    assert ("Notes", 50, "Protocol", "TCP", "The SYN packet does not contain a MSS option") in with_tree
    assert ("Errors", 5, "Malformed", "TCP", "Malformed Packet (Exception occurred)") in with_tree


def test_tree_and_list_say_the_same(capture, ours):
    """The detail tree's items on the options (and its Malformed Packet) are the list's, in
    order: one decision (``option_items``) behind both."""
    from wirefall.analyzer.capture import PacketSource
    from wirefall.analyzer.detail import packet_detail
    from wirefall.analyzer.pipeline import analyze

    an = analyze(str(capture))
    mine = _ours_by_packet(ours)
    src = PacketSource(str(capture))
    try:
        for n in range(1, 5 * len(CASES) + 1):
            got = []
            for top in packet_detail(an, src, n):
                under = [x for x in top.walk() if x.label.startswith("Options: (")] if top.label.startswith("Transmission") else \
                        [top] if top.label == "[Malformed Packet: TCP]" else []
                got += [(e.children[0].abbrev, e.label) for u in under for e in u.walk() if e.label.startswith("[Expert Info (")]
            want = [(k, f"[Expert Info ({s}/{g}): {m}]") for k, m, s, g in mine.get(n, [])]
            # (the tree names a field only where the filter knows it: tcp.options.sack.dsack …)
            assert [t for _, t in got] == [t for _, t in want], _case_of(n)
            assert all(a in (None, k) for (a, _), (k, _) in zip(got, want, strict=True)), (_case_of(n), got)
    finally:
        src.close()


# ------------------------------------------------------------------ the fast path


_SYNS = [  # (a template of the SYNs' usual options: "M" the MSS value, "T" timestamps, "W" the shift)
    "0204MMMM 0402 080aTTTTTTTTTTTTTTTT 010303WW",  # Linux
    "0204MMMM 010303WW 0101 0402",  # Windows
    "0204MMMM 010303WW 0101080aTTTTTTTTTTTTTTTT 04020000",  # macOS
    "0204MMMM 01010402 010303WW",
    "0204MMMM",
]


def _fill(template: str, rnd: random.Random, shift: int) -> bytes:
    h = template.replace(" ", "").replace("WW", f"{shift:02x}")
    return bytes.fromhex("".join(f"{rnd.randrange(16):x}" if c in "MT" else c for c in h))


def _terms():
    return 11, lambda x: (x - 1000) & 0xFFFFFFFF


def test_fast_path_skips_only_what_raises_nothing():
    """``plain_options`` (the layouts ``_tcp_items`` does not walk) holds only for options
    ``option_items`` finds nothing on: the SYNs' usual layouts with shifts 0-14 and any MSS and
    timestamps, a data segment's NOP NOP Timestamps — and not for the same with a shift over
    14, on a segment of the other kind (a SYN's MSS on data, a data segment's layout on a SYN:
    no MSS), or cut or mutated."""
    rnd = random.Random(37)
    plain = 0
    for _ in range(400):
        t = rnd.choice(_SYNS)
        syn_opts = _fill(t, rnd, rnd.randrange(15))
        data_opts = bytes.fromhex("0101080a") + rnd.randbytes(8)
        assert plain_options(syn_opts, True) and not option_items(syn_opts, True, _terms)
        assert plain_options(data_opts, False) and not option_items(data_opts, False, _terms)
        assert not plain_options(syn_opts, False) and option_items(syn_opts, False, _terms)  # (an MSS without SYN)
        assert not plain_options(data_opts, True) and option_items(data_opts, True, _terms)  # (a SYN without MSS)
        if "WW" in t:
            assert not plain_options(_fill(t, rnd, rnd.randrange(15, 256)), True)
        # any change: plain only where nothing is raised
        for opts, syn in ((syn_opts, True), (data_opts, False)):
            b = bytearray(opts)
            b[rnd.randrange(len(b))] = rnd.randrange(256)
            cut = bytes(b)[: rnd.randrange(len(b) + 1)]
            for o in (bytes(b), cut):
                if plain_options(o, syn):
                    plain += 1
                    assert not option_items(o, syn, _terms), o.hex()
    assert plain > 100


def test_fast_path_on_the_built_capture(ours):
    """(every packet of the built capture whose options the fast path skips has no item)"""
    mine = _ours_by_packet(ours)
    for case, (syn, synack, last) in CASES.items():
        for frame, opts, is_syn in ((1, syn, True), (2, synack, True), (5, last, False)):
            if opts and plain_options(opts, is_syn):
                assert _packet(case, frame) not in mine, (case, frame)
