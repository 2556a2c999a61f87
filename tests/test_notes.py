"""Typed connection notes (analyzer.model.Note): the flow layer's gap notes carry the
packet, direction, stream offset and length tshark reports for the segment a capture lost;
every reader (completeness, the waterfall's loss ticks, the tshark cross-check) reads those
fields, so rewording the text changes no fact; the text the JSON shows is the one it always
was (tests/test_digest.py proves it for every sample)."""
from __future__ import annotations

import pickle
import subprocess

import pytest

from conftest import SAMPLES, need_tool, run_tool
from wirefall.analyzer import completeness
from wirefall.analyzer.model import Note, NoteKind, note_kind, notes_of
from wirefall.analyzer.pipeline import analyze
from wirefall.analyzer.waterfall import connection_loss_events
from wirefall.oracle.crosscheck import _quic_trial_conns, _tcp_gaps, _tls_no_sh_conns

H1 = SAMPLES / "http" / "http1-nginx.pcap"


def _cut(tmp_path, src, packet):
    need_tool("editcap")
    out = tmp_path / "cut.pcap"
    subprocess.run(["editcap", str(src), str(out), str(packet)], check=True, capture_output=True)
    return out


@pytest.fixture(scope="module")
def lost(tmp_path_factory):
    """http1-nginx.pcap without one server→client data segment of its first connection,
    with (packet, stream, relative seq, length) of that segment as tshark reads them."""
    rows = [ln.split("\t") for ln in run_tool("tshark", "-r", str(H1), "-Y", "tcp.len > 1000 && tcp.srcport == 18085",
                                              "-T", "fields", "-e", "frame.number", "-e", "tcp.stream", "-e", "tcp.seq",
                                              "-e", "tcp.len").split("\n") if ln]
    # a segment followed by more data of its connection, so the peer's ACK declares the hole
    pkt, stream, seq, length = (int(x) for x in rows[0])
    cap = _cut(tmp_path_factory.mktemp("lost"), H1, pkt)
    return analyze(str(cap)), pkt, stream, seq, length


def test_gap_note_has_tsharks_segment(lost):
    an, pkt, stream, seq, length = lost
    conn = [c for c in an.connections if c.transport == "tcp"][stream]
    (gap,) = notes_of(conn.notes, NoteKind.GAP)
    assert (gap.direction, gap.offset, gap.length) == (1, seq - 1, length)  # tshark's seq is relative, from 1
    assert gap.packet is not None and gap.packet >= pkt  # declared where the hole became known
    # the text shown (and written to the JSON) is the wording it has always had
    assert gap == f"packet {gap.packet}: {length} bytes missing from the capture in server→client at stream offset {seq - 1}"
    assert conn.stats[1].gap_bytes == gap.length and conn.stats[1].gaps == 1


def test_readers_use_the_fields_not_the_text(lost, monkeypatch):
    an, _pkt, stream, seq, length = lost
    conn = [c for c in an.connections if c.transport == "tcp"][stream]
    (gap,) = notes_of(conn.notes, NoteKind.GAP)
    reworded = Note.render
    monkeypatch.setattr(Note, "render", staticmethod(lambda *a: "reworded: " + reworded(*a)[::-1]))
    conn.notes[conn.notes.index(gap)] = Note(gap.kind, gap.packet, gap.direction, gap.offset, gap.length)
    assert all(n.startswith("reworded") for n in notes_of(conn.notes, NoteKind.GAP))
    an.__dict__.pop("_completeness", None)  # computed afresh, from the reworded notes
    comp = completeness.compute(an)
    lost_issue = [i for i in comp.issues if i.kind == "bytes_lost"]
    assert [(i.connection, i.count) for i in lost_issue] == [(conn.id, length)]
    assert _tcp_gaps(an) == {(conn.id, 1): gap.packet}
    ticks = [e for e in connection_loss_events(an, conn) if e[0] == "gap"]
    assert [(e[2], e[3]) for e in ticks] == [(gap.packet, f"{length} bytes lost (server→client)")]


def test_note_is_an_immutable_fact_that_pickles_as_fields():
    n = Note(NoteKind.RETRANSMISSION_DIFFERS, 7, 0, 100, 20)
    assert n == "packet 7: retransmitted client→server bytes 100..120 differ from the original; the first copy is kept"
    back = pickle.loads(pickle.dumps(n, protocol=5))
    assert type(back) is Note and back == n and (back.kind, back.packet, back.direction, back.offset, back.length) == (
        NoteKind.RETRANSMISSION_DIFFERS, 7, 0, 100, 20)
    with pytest.raises(AttributeError):
        n.packet = 8  # type: ignore[misc]
    assert Note(NoteKind.INTERNAL_ERROR, 3, detail="KeyError: 'x'") == (
        "packet 3: decoding of this connection stopped on an internal error (KeyError: 'x'); frames before it are kept")
    assert note_kind("a decoder's message") is NoteKind.TEXT and note_kind(Note.text("m")) is NoteKind.TEXT
    assert Note.text("HTTP/2: the capture ends inside a frame") == "HTTP/2: the capture ends inside a frame"


def test_quic_keys_by_trial_is_typed():
    """page-h3-late joins its QUIC connection after the handshake: its keys are found by trial."""
    an = analyze(str(SAMPLES / "quic" / "page-h3-late.pcapng"), keylogs=[str(SAMPLES / "quic" / "page-h3-late.keys")])
    trial = {c.id for c in an.connections if any(notes_of(c.notes, NoteKind.KEYS_BY_TRIAL))}
    (cid,) = trial
    (n,) = notes_of(an.connections[cid].notes, NoteKind.KEYS_BY_TRIAL)
    assert n.startswith(f"packet {n.packet}: keys found by trying") and an.connections[cid].quic.decrypted
    assert trial <= _quic_trial_conns(an)


def test_tls_no_server_hello_is_typed(tmp_path):
    """A TLS 1.3 capture without its ServerHello: the note is typed, the oracle finds it."""
    src = SAMPLES / "tls" / "tls13_aes128gcm.pcap"
    out = run_tool("tshark", "-r", str(src), "-Y", "tls.handshake.type==2", "-T", "fields", "-e", "frame.number")
    cap = _cut(tmp_path, src, int(out.split()[0]))
    an = analyze(str(cap), keylogs=[str(src.with_suffix(".keys"))])
    (c,) = [c for c in an.connections if c.tls]
    (n,) = notes_of(c.notes, NoteKind.NO_SERVER_HELLO)
    assert n.detail.startswith("TLS 1.3 assumed, cipher suite TLS_AES_128_GCM_SHA256")
    assert n == f"packet {n.packet}: ServerHello not in the capture; {n.detail}"
    assert _tls_no_sh_conns(an) == {c.id}
