"""A protocol is its registry descriptor plus the modules it names: the packet list, the detail
tree, the display filter and the oracle read every per-protocol fact from there.

- each descriptor's ``hooks_module`` (analyzer/protocols), ``fields_module`` (analyzer/fields)
  and oracle spec (oracle/specs) exist, and no such module is left without a descriptor;
- a protocol the code has never heard of — a descriptor and a hooks module made up here — gets
  its protocol-tree name, type line, flag names, Info text and protocol column in the detail
  tree and the packet list of a real capture, with no edit anywhere else.
"""
from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

from wirefall.analyzer import detail
from wirefall.analyzer.capture import PacketSource
from wirefall.analyzer.pipeline import analyze
from wirefall.dissectors import registry
from wirefall.dissectors.registry import REGISTRY, ProtocolDescriptor

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_captures"


def test_every_named_module_exists_and_none_is_orphaned():
    hooks = {d.hooks_module for d in REGISTRY.values() if d.hooks_module}
    on_disk = {p.stem for p in (ROOT / "analyzer" / "protocols").glob("*.py") if p.stem != "__init__"}
    assert hooks == on_disk
    fields = {d.fields_module for d in REGISTRY.values() if d.fields_module}
    assert fields <= {p.stem for p in (ROOT / "analyzer" / "fields").glob("*.py")}
    from wirefall.analyzer import fields as F

    assert set(F.MODULES) == set(F.LAYERS) | fields | set(F.PSEUDO)
    from wirefall.oracle import crosscheck

    specs = {p.stem for p in (ROOT / "oracle" / "specs").glob("*.py") if p.stem != "__init__"}
    assert specs <= {d.name for d in REGISTRY.values() if d.oracle is not None}
    assert set(crosscheck.PROTOCOLS) == specs


@pytest.fixture
def toy(monkeypatch):
    """A made-up protocol "toy" (wire types 1 PING, 2 DATA; flag 0x1 LAST) and its hooks."""
    mod = types.ModuleType("wf_toy.hooks")

    def summary(fr):
        return f"Toy {fr.type} #{fr.stream_id}"

    def type_node(node, fr):
        node.add(f"Kind: {fr.type}", abbrev="toy.kind", value=fr.type)
        return True

    mod.summary = summary  # type: ignore[attr-defined]
    mod.type_node = type_node  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "wf_toy", types.ModuleType("wf_toy"))
    monkeypatch.setitem(sys.modules, "wf_toy.hooks", mod)
    d = ProtocolDescriptor(name="toy", display="TOY", protocols=("toy/1",), type_names={1: "PING", 2: "DATA"},
                           flags={"DATA": ((0x1, "LAST"),)}, long_name="Toy Transfer Protocol", column_rank=4,
                           hooks_module="wf_toy.hooks")
    registry._load()
    monkeypatch.setitem(registry._DESCRIPTORS, "toy", d)
    yield d
    registry._DESCRIPTORS.version += 1  # (monkeypatch's undo of the item is a __delitem__ too)


def test_a_new_protocol_needs_only_its_descriptor_and_hooks(toy):
    cap = SAMPLES / "http" / "http1-node.pcap"
    an = analyze(str(cap))
    src = PacketSource(str(cap))
    # (a response whose packet ends it: one whose body ends later is TCP's in the column, as tshark's)
    fr = next(f for f in an.frames if f.type == "RESPONSE" and detail.row_columns(an, src, f.packet)[2] == "HTTP"
              and "HTTP/1.1 200" in detail.row_columns(an, src, f.packet)[3])
    before = detail.row_columns(an, src, fr.packet)
    assert before[2] == "HTTP" and "HTTP/1.1 200" in before[3]
    fr.protocol, fr.type, fr.flags, fr.stream_id = "toy/1", "DATA", 0x1, 7
    src_col, dst_col, proto, info = detail.row_columns(an, src, fr.packet)
    assert (src_col, dst_col) == before[:2]
    assert proto == "TOY"  # its column rank is above HTTP's
    assert "Toy DATA #7" in info
    tree = detail.packet_detail(an, src, fr.packet)
    group = next(n for n in tree if n.label.startswith("Toy Transfer Protocol"))
    node = next(n for n in group.walk() if n.label.startswith("TOY: Toy DATA #7"))
    assert node.find("toy.kind").value == "DATA"
    assert node.find("wirefall.type") is None  # the hook wrote the type line
    assert node.find("wirefall.flags").label == "Flags: 0x01 (LAST)"


def test_decrypted_tls_reads_only_the_segments_reassembly_delivered():
    """The detail view's "Decrypted TLS" tab re-reads a record's bytes from the packets the
    pass's offset map names for it (never a scan of the packets between its first and last),
    and opens it: on a lossy page load (retransmissions, segments after holes) every record
    the pass decrypted decrypts again to its recorded plaintext length."""
    cap = SAMPLES / "lossy" / "page-h2.pcapng"
    an = analyze(str(cap), keylogs=[str(SAMPLES / "lossy" / "page-h2.keys")])

    class Counting(PacketSource):
        reads = 0

        def read(self, offset, length):
            Counting.reads += 1
            return super().read(offset, length)

    src = Counting(str(cap))
    packets = sorted({tab.packet[i] for tab in an.tls_records.values() for i in range(len(tab)) if tab.pt_length[i]})
    carriers = checked = 0
    for n in packets:
        for r in detail.decrypted_tls(an, src, n):
            tab = an.tls_records[(r.connection, r.direction)]
            assert r.error is None and len(r.data) == tab.pt_length[r.index], (n, r.error)
            carriers += len(an.maps[(r.connection, r.direction)].packets_between(r.offset, r.offset + 5 + r.length))
            checked += 1
    assert checked > 50
    assert Counting.reads <= carriers  # one read per carrier segment


def test_dissector_notes_are_typed_and_keep_their_words():
    """HTTP/1's protocol switches, HTTP/2's and SPDY's flow-control, stream and end-of-capture
    notes carry a kind (and packet, direction, bytes where known) that the expert view reads;
    their text is the words they always had, and the kind classifies them as those words did.
    The h2c upgrades' notes are on the packets where tshark shows the 101 responses."""
    import shutil
    import subprocess

    from wirefall.analyzer import expert
    from wirefall.analyzer.model import Note, NoteKind, notes_of

    cap = SAMPLES / "http" / "h2c-upgrade.pcap"
    an = analyze(str(cap))
    sw = [n for c in an.connections for n in notes_of(c.notes, NoteKind.PROTOCOL_SWITCH)]
    assert sw and [str(n) for n in sw] == [f"packet {n.packet}: HTTP/1.1 upgraded to h2c" for n in sw]
    if shutil.which("tshark"):
        out = subprocess.run(["tshark", "-n", "-r", str(cap), "-Y", "http.response.code == 101", "-T", "fields", "-e", "frame.number"],
                             capture_output=True, text=True, timeout=120, check=True).stdout.split()
        assert sorted(str(n.packet) for n in sw) == sorted(out)
    typed = {NoteKind.PROTOCOL_SWITCH, NoteKind.FLOW_CONTROL, NoteKind.STREAM_UNSEEN, NoteKind.ENDS_IN_FRAME, NoteKind.STREAM_MISUSE,
             NoteKind.QUIC_RETRY}
    assert set(expert.KIND_RULES) == typed
    seen = set()
    for sub in ("http", "spdy", "lossy", "page"):
        for p in sorted((SAMPLES / sub).glob("*.pcap*")):
            keys = p.with_suffix(".keys")
            a = analyze(str(p), keylogs=[str(keys)] if keys.exists() else None)
            for c in a.connections:
                for n in c.notes:
                    if isinstance(n, Note) and n.kind in typed:
                        seen.add(n.kind)
                        body = str(n).split(": ", 1)[1] if n.packet is not None else str(n)
                        assert expert.KIND_RULES[n.kind] == expert.classify(body), n
                        assert n.direction in (None, 0, 1)
    assert NoteKind.PROTOCOL_SWITCH in seen
