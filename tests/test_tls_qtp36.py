"""A ClientHello's pre_shared_key and the QUIC transport parameters (quic_transport_parameters,
0x39, and the drafts' 0xffa5; a ClientHello's and a server's EncryptedExtensions') in the detail
tree are tshark 4.0's: every line under the extension — ``Parameter: max_idle_timeout (len=4)
60000 ms`` with its Type, Length, Value and value lines; ``Pre-Shared Key extension`` with
Identities Length, each PSK Identity (Identity Length, Identity, Obfuscated Ticket Age), PSK
Binders length and PSK Binders — in tshark's words and order, with tshark's field names (PDML
``name=``) and byte ranges (from the extension's first byte; absolute where the record is whole
in the packet), compared line for line with ``tshark -n -T pdml`` (with the key log) on real
captures, and on crafted ClientHellos and ServerHellos that carry every parameter type.

Before (session 35): the two extensions' Type and Length lines only.

What the tree leaves out of tshark's: expert items (``Dissector processed too much data``, a
malformed length's), and the gQUIC tags tshark reads inside google_quic_params (0x4751, gQUIC's
CHLO, replaced by Chrome's own parameters since T051).  A handshake wirefall shows again where a
client sends its ClientHello anew (after a Retry) is compared with the one tshark shows once.

Hostile bytes (``_extensions`` directly): every parameter type with cut, overlong and garbage
lengths and values, and a client's pre_shared_key cut anywhere, never raise and give lines that
stay inside their extension."""
from __future__ import annotations

import ipaddress
import itertools
import struct
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fuzz.profiles import fuzz_settings
from wirefall.analyzer.capture import PacketSource
from wirefall.analyzer.detail import Node, _filterable, packet_detail
from wirefall.analyzer.pipeline import analyze

import pdml
from conftest import capture_and_keys
from test_tls_ext35 import _tree  # (the nodes _extensions writes for a list of extensions)

HEADS = ("Extension: quic_transport_parameters", "Extension: pre_shared_key")
# a line: (words, offset from the extension's first byte, length, depth under the extension, field name)
Line = tuple[str, "int | None", "int | None", int, "str | None"]
# tshark's extension: its lines, each line's value as PDML shows it, its offset, its handshake message's type, its bytes
Ext = tuple[list[Line], list[str], int, int, bytes]

# (where, capture, key log) -> (extensions compared on the packet tshark shows them on, at least;
# the lines they must hold among them)
CAPTURES = {
    "aioquic-h3": (("sample", "quic/aioquic-h3.pcap", "quic/aioquic-h3.keys"), 2,
                   ("Parameter: stateless_reset_token (len=16)", "Chosen Version: 1 (0x00000001)", "max_idle_timeout: 60000")),
    "aioquic-post": (("sample", "quic/aioquic-post.pcap", "quic/aioquic-post.keys"), 2, ("Parameter: initial_max_streams_uni",)),
    "aioquic-qlog": (("sample", "quic/aioquic-qlog.pcap", "quic/aioquic-qlog.keys"), 2, ("Parameter: version_information (len=12)",)),
    "aioquic-h3-cut": (("sample", "quic/aioquic-h3-cut.pcap", "quic/aioquic-h3-cut.keys"), 2, ("Parameter: ack_delay_exponent (len=1)",)),
    "page-h3": (("sample", "quic/page-h3.pcapng", "quic/page-h3.keys"), 1,
                ("Parameter: GREASE", "Google Connection options: ", "Type: GREASE (0x")),
    "page-multi-late": (("sample", "quic/page-multi-late.pcapng", "quic/page-multi-late.keys"), 1, ("Parameter: ",)),
    "quic-illustrated": (("shared", "quic-illustrated/capture.pcap", "quic-illustrated/keylog.txt"), 2,
                         ("Parameter: max_udp_payload_size", "original_destination_connection_id: ")),
    # no key log: its Initial packets decrypt from the client's DCID
    "retina-quic": (("shared", "retina/quic.pcap", None), 9,
                    ("Parameter: Unknown 0xff73db (len=12)", "Google QUIC version: 1 (0x00000001)", "Google Initial RTT: ",
                     "Initial Source Connection ID: <MISSING>", "PSK Identity (length: ", "Obfuscated Ticket Age: ")),
    "retina-retry": (("shared", "retina/quic_retry.pcapng", None), 2, ("Parameter: ",)),
    # QUIC draft-29: the drafts' extension type, 0xffa5 (key log inside the pcapng)
    "ngtcp2-29": (("shared", "pcap2qlog/ngtcp2-29-dsb.pcapng", None), 2,
                  ("Extension: quic_transport_parameters (drafts version) (len=", "Retry Source Connection ID: ")),
    # (session 36: Chrome's ClientHellos reassembled from their scattered CRYPTO frames, all compared)
    "amazon": (("shared", "pageload-amazon/amazon1.cap.gz", "pageload-amazon/amazon1.key_log.txt.gz"), 8, ("Parameter: ",)),
    # a client's pre_shared_key (TLS 1.3 resumption), over TCP
    "tls13_resumed": (("sample", "tls/tls13_resumed.pcap", "tls/tls13_resumed.keys"), 2,
                      ("Identities Length: 214", "PSK Identity (length: 208)", "PSK Binders length: 49", "PSK Binders")),
    "tls13_0rtt": (("sample", "tls/tls13_0rtt.pcap", "tls/tls13_0rtt.keys"), 2, ("PSK Identity (length: ",)),
    "page-h1": (("sample", "page/page-h1.pcapng", "page/page-h1.keys"), 4, ("Identity: ", "Selected Identity: ")),
    "pw-h1": (("sample", "page/pw-h1.pcapng", "page/pw-h1.keys"), 4, ("Obfuscated Ticket Age: ",)),
    # its ClientHellos span segments: the lines' words without bytes
    "lossy-h1": (("sample", "lossy/page-h1.pcapng", "lossy/page-h1.keys"), 4, ("PSK Identity (length: 224)",)),
}
OVER_TCP = frozenset({"tls13_resumed", "tls13_0rtt", "page-h1", "pw-h1", "lossy-h1"})  # (every one of tshark's is compared)


def _skipped(f) -> bool:
    """An expert item of tshark's (and the text line made to hold one), or gQUIC's tags: not in the tree."""
    name = f.get("name") or ""
    return (f.get("hide") == "yes" or name.startswith(("_ws.expert", "tls.malformed", "gquic."))
            or not name and any((c.get("name") or "").startswith("_ws.expert") for c in f.findall("field")))


def _theirs(path: str, keys: str | None) -> dict[int, list[Ext]]:
    """Packet -> tshark's two extensions on it, in order."""
    args = ["-n", "-r", path, *(["-o", f"tls.keylog_file:{keys}"] if keys else [])]
    out: dict[int, list[Ext]] = {}
    for num, pkt in pdml.packets(*args):
        for h in pkt.iter("field"):
            if h.get("name") != "tls.handshake":
                continue
            msg = int(next((c.get("show") for c in h.findall("field") if c.get("name") == "tls.handshake.type"), None) or 0)
            for f in h.findall("field"):
                text = f.get("showname") or f.get("show") or ""
                if not text.startswith(HEADS):
                    continue
                base = int(f.get("pos") or 0)
                lines: list[Line] = [(text, 0, int(f.get("size") or 0), 0, None)]
                values: list[str] = [""]

                def walk(e, depth: int, base: int = base, lines: list[Line] = lines, values: list[str] = values) -> None:
                    for c in e.findall("field"):
                        if _skipped(c):
                            continue
                        lines.append((pdml.label(c.get("showname") or c.get("show") or ""), int(c.get("pos") or 0) - base,
                                      int(c.get("size") or 0), depth, c.get("name") or None))
                        values.append(f"{c.get('show')}\0{c.get('value')}")
                        walk(c, depth + 1)
                walk(f, 1)
                out.setdefault(num, []).append((lines, values, base, msg, bytes.fromhex(f.get("value") or "")))
    return out


def _ours_of(tree: list[Node]) -> list[tuple[list[Line], list[str], Node]]:
    """The two extensions' nodes in a packet's tree, in order: (lines, values, the extension's node)."""
    out = []
    for top in tree:
        for x in top.walk():
            if not x.label.startswith(HEADS):
                continue
            lines: list[Line] = []
            values: list[str] = []

            def walk(y: Node, depth: int, x: Node = x, lines: list[Line] = lines, values: list[str] = values) -> None:
                placed = x.start >= 0
                lines.append((pdml.label(y.label), y.start - x.start if placed else None, y.end - y.start if placed else None,
                              depth, y.abbrev))
                values.append("" if y.value is None else str(y.value))
                for c in y.children:
                    walk(c, depth + 1)
            walk(x, 0)
            out.append((lines, values, x))
    return out


def _masked(theirs: list[Line], ours: list[Line]) -> list[Line]:
    """tshark's lines as ours can have them: without their bytes where ours have none (a record
    reassembled from segments), without the field names the display filter lacks (the tree
    drops those, analyzer.detail._filterable_names; the crafted hellos' test holds every name)."""
    placed = not ours or ours[0][1] is not None
    out: list[Line] = []
    for k, (w, at, size, depth, name) in enumerate(theirs):
        mine = ours[k][4] if k < len(ours) else name
        if mine is None and name is not None and not _filterable(name):
            name = None
        out.append((w, at, size, depth, name) if placed else (w, None, None, depth, name))
    return out


def _first_difference(theirs: list[Line], ours: list[Line]) -> str:
    for k, (t, o) in enumerate(itertools.zip_longest(theirs, ours)):
        if t != o:
            return f"line {k}: tshark {t!r}, ours {o!r}"
    return "same"


def _value_is_tsharks(ours: str, theirs: str) -> bool:
    """Our value is PDML's ``show`` (a number, an address, words), or the bytes PDML's ``value`` holds."""
    show, raw = theirs.split("\0")
    return ours in (show, raw, show.replace(":", "")) or (ours == "" and show in ("", "None"))


def _compare(ours: list[Line], values: list[str], theirs: Ext, where: str) -> None:
    t_lines, t_values = theirs[0], theirs[1]
    assert ours == _masked(t_lines, ours), f"{where}: {_first_difference(_masked(t_lines, ours), ours)}"
    for (w, *_, abbrev), o, t in zip(ours, values, t_values):
        if abbrev is not None:  # (a field's: a text line's value is its words)
            assert _value_is_tsharks(o, t), f"{where}: {w}: value {o!r}, tshark's {t!r}"


def _check_capture(path: str, keys: str | None, tcp: bool) -> tuple[int, int, list[str]]:
    """Every extension of the two in wirefall's trees is tshark's: (those on the packet tshark
    shows them on, those tshark shows on another packet, all their lines' words)."""
    want = _theirs(path, keys)
    anywhere = [x for exts in want.values() for x in exts]
    an = analyze(path, keylogs=[keys] if keys else [])
    src = PacketSource(path)
    same = moved = 0
    words: list[str] = []
    for n in range(1, len(an.index) + 1):
        pool = list(want.get(n, []))
        for lines, values, node in _ours_of(packet_detail(an, src, n)):
            words += [w for w, *_ in lines]
            hit = next((t for t in pool if _masked(t[0], lines) == lines), None)
            if hit is not None:
                pool.remove(hit)
                same += 1
                _compare(lines, values, hit, f"packet {n}")
                if node.start >= 0 and node.source == 0:  # (the record whole in the packet: tshark's offsets are the packet's)
                    assert node.start == hit[2], f"packet {n}: the extension at {node.start}, tshark's at {hit[2]}"
                continue
            here = next((t for t in pool if t[0][0][0] == lines[0][0]), None)
            if here is not None:  # (tshark shows this extension here: ours must be it)
                _compare(lines, values, here, f"packet {n}")
            # a ClientHello sent anew (after a Retry): tshark shows its handshake once, on another packet
            other = next((t for t in anywhere if _masked(t[0], lines) == lines), None)
            assert not tcp and other is not None, f"packet {n}: {lines[0][0]} is none of tshark's"
            _compare(lines, values, other, f"packet {n}")
            moved += 1
        if tcp:
            assert not pool, f"packet {n}: tshark also shows {[t[0][0][0] for t in pool]}"
    return same, moved, words


@pytest.mark.parametrize("name", sorted(CAPTURES))
def test_extensions_are_tsharks(name, tmp_path):
    """The packet trees' extensions (those whose handshake message a QUIC CRYPTO frame holds whole,
    or a TCP segment or a record reassembled from segments)."""
    (where, cap, keys), least, _ = CAPTURES[name]
    path, kpath = capture_and_keys(where, cap, keys, tmp_path)
    same, moved, words = _check_capture(path, kpath, name in OVER_TCP)
    assert same >= least, f"{same} extensions compared (of at least {least})"
    assert moved <= same and any(w.startswith(("Parameter: ", "Identities Length: ", "Selected Identity: ")) for w in words)


@pytest.mark.parametrize("name", sorted(CAPTURES))
def test_every_extension_of_tsharks_reads_as_its(name, tmp_path):
    """Every one of the two extensions tshark shows (also those it reassembles from several QUIC
    CRYPTO frames, which the tree leaves out), its bytes read by ``_extensions``: tshark's lines,
    with every field name."""
    (where, cap, keys), _, must = CAPTURES[name]
    path, kpath = capture_and_keys(where, cap, keys, tmp_path)
    words = _check_bytes(_theirs(path, kpath))
    for m in must:
        assert any(w.startswith(m) for w in words), f"no line {m!r}"


def _check_bytes(want: dict[int, list[Ext]]) -> list[str]:
    """Each of tshark's extensions, its bytes read by ``_extensions`` (as the message tshark read
    it in): tshark's lines, field names and values; their words."""
    exts = [x for _, xs in sorted(want.items()) for x in xs]
    assert exts
    words: list[str] = []
    for k, ext in enumerate(exts):
        top = _tree(ext[4], ext[3])[1]  # (after the list's length)
        lines: list[Line] = []
        values: list[str] = []

        def walk(y: Node, depth: int, top: Node = top, lines: list[Line] = lines, values: list[str] = values) -> None:
            lines.append((y.label, y.start - top.start, y.end - y.start, depth, y.abbrev))
            values.append("" if y.value is None else str(y.value))
            for c in y.children:
                walk(c, depth + 1)
        walk(top, 0)
        assert lines == ext[0], f"extension {k} ({ext[0][0][0]}): {_first_difference(ext[0], lines)}"
        _compare(lines, values, ext, f"extension {k}")
        words += [w for w, *_ in lines]
    return words


# ---------------------------------------------------------------- crafted hellos: every parameter type

def _varint(v: int, size: int | None = None) -> bytes:
    size = size or (1 if v < 1 << 6 else 2 if v < 1 << 14 else 4 if v < 1 << 30 else 8)
    return (v | {1: 0, 2: 1, 4: 2, 8: 3}[size] << (8 * size - 2)).to_bytes(size, "big")


def _tp(t: int, value: bytes, length: int | None = None) -> bytes:
    return _varint(t) + _varint(len(value) if length is None else length) + value


def _ext(t: int, data: bytes) -> bytes:
    return t.to_bytes(2, "big") + len(data).to_bytes(2, "big") + data


def _hello(kind: int, exts: list[bytes]) -> bytes:
    """A TLS record of one ClientHello (``kind`` 1) or ServerHello (2) with these extensions."""
    body = b"\x03\x03" + bytes(range(32)) + b"\x00" + (b"\x00\x02\x13\x01\x01\x00" if kind == 1 else b"\x13\x01\x00")
    e = b"".join(exts)
    body += len(e).to_bytes(2, "big") + e
    hs = bytes([kind]) + len(body).to_bytes(3, "big") + body
    return b"\x16\x03\x01" + len(hs).to_bytes(2, "big") + hs


def _pcap(path: Path, payloads: list[tuple[bytes, bool]]) -> None:
    """One TCP segment per payload, each a connection of its own (client port 40000 + k, server 443)."""
    def csum(b: bytes) -> int:
        s = sum(struct.unpack(f"!{len(b) // 2}H", b))
        while s >> 16:
            s = (s & 0xFFFF) + (s >> 16)
        return ~s & 0xFFFF
    out = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)]
    for k, (payload, to_server) in enumerate(payloads):
        a, b, sp, dp = bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]), 40000 + k, 443
        if not to_server:
            a, b, sp, dp = b, a, dp, sp
        tcp = struct.pack("!HHIIBBHHH", sp, dp, 1, 1, 5 << 4, 0x18, 65535, 0, 0)
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 40 + len(payload), 1, 0, 64, 6, 0, a, b)
        ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
        frame = bytes(range(12)) + b"\x08\x00" + ip + tcp + payload
        out.append(struct.pack("<IIII", 1000 + k, 0, len(frame), len(frame)) + frame)
    path.write_bytes(b"".join(out))


_ADDRESS = (bytes([192, 0, 2, 1]) + (4433).to_bytes(2, "big") + ipaddress.IPv6Address("2001:db8::1").packed
            + (4434).to_bytes(2, "big") + b"\x04\xaa\xbb\xcc\xdd" + bytes(range(16)))
# every parameter tshark 4.0 reads, well formed
ALL = b"".join([
    _tp(0x00, bytes.fromhex("0102030405060708")), _tp(0x01, _varint(30000, 4)), _tp(0x02, bytes(range(16))),
    _tp(0x03, _varint(1472, 2)), _tp(0x04, _varint(1 << 20, 4)), _tp(0x05, _varint(1 << 18, 4)), _tp(0x06, _varint(1 << 18, 4)),
    _tp(0x07, _varint(1 << 18, 4)), _tp(0x08, _varint(100, 2)), _tp(0x09, _varint(3)), _tp(0x0A, _varint(3)),
    _tp(0x0B, _varint(25)), _tp(0x0C, b""), _tp(0x0D, _ADDRESS), _tp(0x0E, _varint(8)), _tp(0x0F, b""),
    _tp(0x10, bytes.fromhex("deadbeef")), _tp(0x11, bytes.fromhex("000000016b3343cf1a2a3a4aff00001d")),
    _tp(0x20, _varint(65535, 4)), _tp(0x1000, _varint(4) + _varint(2)), _tp(0x1057, _varint(1)), _tp(0x2AB2, b""),
    _tp(0x7157, b""), _tp(0x7158, _varint(3)), _tp(0x7158, _varint(7)), _tp(0xDE1A, _varint(1000, 2)),
    _tp(0xFF03DE1A, _varint(1000, 2)), _tp(0x3127, _varint(100000, 4)), _tp(0x3128, b"ABCDEFGH"), _tp(0x3129, b"Chrome/120"),
    _tp(0x312A, b""), _tp(0x312B, b""), _tp(0x4752, bytes.fromhex("51303530")), _tp(0xFF00, _varint(1)),
    _tp(0x3A, b"\x01\x02"), _tp(0x1B, b"\x07"), _tp(0x1234, b"\x09"), _tp(0xFF73DB, bytes(12)), _tp(0xFF02DE1A, b""),
    _tp(0x3CD9081BC4325F0B, b"\x17\xb4"), _tp(0x4751, bytes(4) + b"VER\x00" + bytes(4)),
])
# lengths that say other than the value (inside the extension: tshark reads on into the next parameter)
ODD = b"".join([
    _tp(0x01, b""), _tp(0x0E, b"\x01"),  # (an integer of no bytes: tshark reads the next parameter's type)
    _tp(0x01, b"\x05\xff\xff\xff"),  # (an integer of 1 byte in 4)
    _tp(0x11, b"\x00\x00\x00\x01\x00\x00"),  # (6 bytes of versions: the second read across the next parameter)
    _tp(0x0D, _ADDRESS[:24] + b"\x19" + bytes(range(25)) + bytes(16)),  # (a 25-byte connection ID: longer than 20)
    _tp(0x02, b"\x01" * 8),  # (a token of 8 bytes: tshark reads 16)
    _tp(0x04, b"\x01\x02"), _tp(0x05, b""), _tp(0x0A, b""), bytes(24),
])
OLD = (lambda ps: len(ps).to_bytes(2, "big") + ps)(b"".join(  # (draft 26 and older: 16-bit ids and lengths)
    t.to_bytes(2, "big") + len(v).to_bytes(2, "big") + v
    for t, v in ((0x01, _varint(30000, 4)), (0x0F, b"\x01\x02"), (0x11, bytes.fromhex("00000001")), (0x3A, b""), (0x0C, b""))))


def _psk(identities: list[tuple[bytes, int]], binders: list[bytes], ids_len: int | None = None, id_len: int | None = None) -> bytes:
    ids = b"".join((len(i) if id_len is None else id_len).to_bytes(2, "big") + i + age.to_bytes(4, "big") for i, age in identities)
    bs = b"".join(bytes([len(b)]) + b for b in binders)
    return (len(ids) if ids_len is None else ids_len).to_bytes(2, "big") + ids + len(bs).to_bytes(2, "big") + bs


HELLOS = [
    (_hello(1, [_ext(57, ALL)]), True),
    (_hello(2, [_ext(57, ALL)]), False),
    (_hello(1, [_ext(0xFFA5, ALL)]), True),
    (_hello(1, [_ext(57, ODD), _ext(21, bytes(40))]), True),
    (_hello(1, [_ext(0xFFA5, OLD)]), True),
    (_hello(1, [_ext(57, b""), _ext(0xFFA5, _tp(0x0F, bytes(range(20))))]), True),
    (_hello(1, [_ext(41, _psk([(b"\x01" * 40, 7), (bytes(range(100)), 0xFFFFFFFF)], [bytes(32), b"\x02" * 48]))]), True),
    (_hello(1, [_ext(41, _psk([(b"\x05" * 10, 1)], [bytes(32)], id_len=12))]), True),  # (an identity past its list)
    (_hello(1, [_ext(41, _psk([(b"", 9)], [bytes(32)]))]), True),  # (an empty identity)
]


def test_every_parameter_type_is_tsharks(tmp_path):
    path = tmp_path / "hellos.pcap"
    _pcap(path, HELLOS)
    same, moved, words = _check_capture(str(path), None, True)
    assert (same, moved) == (len(HELLOS) + 1, 0)  # (one hello has two)
    assert _check_bytes(_theirs(str(path), None)) == words  # (and with every field name, which the tree keeps for the filter's)
    for m in ("Parameter: max_idle_timeout (len=4) 30000 ms", "ipv6Address: 2001:db8::1", "connectionId: aabbccdd",
              "statelessResetToken: 000102030405060708090a0b0c0d0e0f", "Parameter: cibir_encoding (len=2) Length: 4, Offset: 2",
              "Other Version: Unknown (0x1a2a3a4a) (GREASE)", "Other Version: draft-29 (0xff00001d)",
              "Enable TimestampV2: Unknown (7)", "Parameter: google_initial_rtt (len=4) 100000 us", "Google UserAgent: Chrome/120",
              "Google Support Handshake Done", "Google QUIC version: Google Q050 (0x51303530)", "Parameter: Unknown 0x001b (len=1)",
              "Type: GREASE (0x3cd9081bc4325f0b)", "Parameter: GREASE (len=0)", "Parameters Length: ", "Google Unknown Field: 00000000",
              "Parameter: max_idle_timeout (len=0) 14 ms", "Length: 25", "PSK Identity (length: 12)", "Identity: <MISSING>",
              "Obfuscated Ticket Age: 4294967295", "Extension: quic_transport_parameters (drafts version) (len="):
        assert any(w.startswith(m) for w in words), m


def test_a_servers_google_versions():
    """EncryptedExtensions' google_quic_version: the version, then the server's list (packet-tls-utils.c;
    no capture here has one, and EncryptedExtensions are not in the clear over TCP)."""
    versions = bytes.fromhex("51303530" "0c" "00000001" "51303530" "fafafafa")
    lines = [(n.label, n.start, n.end - n.start, n.abbrev) for n in _tree(_ext(57, _tp(0x4752, versions)), 8)[4:]]
    assert lines == [  # (the extension's bytes from 6: the list's length, its type and length first)
        ("Parameter: google_quic_version (len=17)", 6, 22, None),  # (0x4752: an id of 4 bytes)
        ("Type: google_quic_version (0x4752)", 6, 4, "tls.quic.parameter.type"),
        ("Length: 17", 10, 1, "tls.quic.parameter.length"),
        ("Value: 513035300c0000000151303530fafafafa", 11, 17, "tls.quic.parameter.value"),
        ("Google QUIC version: Google Q050 (0x51303530)", 11, 4, "tls.quic.parameter.google.quic_version"),
        ("Google Supported Versions Length: 12", 15, 1, "tls.quic.parameter.google.supported_versions_length"),
        ("Google Supported Version: 1 (0x00000001)", 16, 4, "tls.quic.parameter.google.supported_version"),
        ("Google Supported Version: Google Q050 (0x51303530)", 20, 4, "tls.quic.parameter.google.supported_version"),
        ("Google Supported Version: Unknown (0xfafafafa) (GREASE)", 24, 4, "tls.quic.parameter.google.supported_version"),
    ]
    # a ClientHello's is the version alone
    assert [n.label for n in _tree(_ext(57, _tp(0x4752, versions)), 1)][-1] == "Google QUIC version: Google Q050 (0x51303530)"


# ---------------------------------------------------------------- hostile bytes



def _inside(nodes: list[Node], size: int) -> None:
    """Every line of the extension (the list's length, 2 bytes, first) stays in its bytes."""
    for n in nodes:
        assert 0 <= n.start <= n.end <= size + 2, (n.label, n.start, n.end, size)


PARAMETER_TYPES = [*range(0x12), 0x20, 0x1000, 0x1057, 0x2AB2, 0x7157, 0x7158, 0xDE1A, 0xFF03DE1A, 0x3127, 0x3128, 0x3129,
                   0x312A, 0x312B, 0x4751, 0x4752, 0xFF00, 0x1B, 0x3A, 0x1234, 0xFF73DB, 0x3CD9081BC4325F0B]
GARBAGE = [b"", b"\x00", b"\xff", b"\x40", b"\x80\x00", b"\xc0\x00\x00", b"\xff" * 7, bytes(range(30)), b"\xff" * 60, bytes(45)]


@pytest.mark.parametrize("t", PARAMETER_TYPES)
@pytest.mark.parametrize("msg", [1, 8])
def test_hostile_parameters_stay_inside_their_extension(t, msg):
    for value, say in itertools.product(GARBAGE, (None, 0, 1, 3, 17, 100, 1 << 30, (1 << 62) - 1)):
        param = _tp(t, value, say)
        for data in (param, param + _tp(0x01, b"\x19"), param[:-1], param[: len(param) // 2], b"\xff" + param):
            for kind in (57, 0xFFA5):
                ext = _ext(kind, data)
                nodes = _tree(ext, msg)  # (never raises)
                _inside(nodes, len(ext))
                assert len(nodes) <= 8 + 12 * len(data)
    # a length past the extension: the parameter's lines end with it, its words say the length
    data = _tp(t, b"\x05\x06", 100)
    nodes = _tree(_ext(57, data), msg)
    param = next(n for n in nodes if n.label.startswith("Parameter: "))
    assert "(len=100)" in param.label and (param.start, param.end) == (6, 6 + len(data))
    value = next(n for n in nodes if n.abbrev == "tls.quic.parameter.value")
    assert (value.label, value.start, value.end) == ("Value: 0506", 6 + len(data) - 2, 6 + len(data))


def _params(ext: bytes, msg: int = 1) -> list[str]:
    """The words of the lines under an extension after its Type and Length."""
    return [n.label for n in _tree(ext, msg)[4:]]


def test_hostile_parameter_details():
    # a preferred address cut before its IPv6 port: nothing past what the bytes hold
    cut = _tree(_ext(57, _tp(0x0D, _ADDRESS[:20])))
    assert not any(n.abbrev and n.abbrev.startswith("tls.quic.parameter.preferred_address.") for n in cut)
    # its connection ID's length past the extension: cut to it, no token after
    cid = _tree(_ext(57, _tp(0x0D, _ADDRESS[:24] + b"\xff" + b"\x01\x02")))
    assert [(n.label, n.end - n.start) for n in cid if n.abbrev and "connectionid" in n.abbrev] == [
        ("Length: 255", 1), ("connectionId: 0102", 2)]
    assert not any(n.abbrev and n.abbrev.endswith("statelessresettoken") for n in cid)
    # an integer cut by the extension's end: no value line, no value in the parameter's words
    assert _params(_ext(57, b"\x01\x04\x80")) == ["Parameter: max_idle_timeout (len=4)", "Type: max_idle_timeout (0x01)",
                                                   "Length: 4", "Value: 80"]
    # an id or a length cut: the list ends
    assert _params(_ext(57, _tp(0x04, b"\x01") + b"\x40"))[-1] == "initial_max_data: 1"
    assert _params(_ext(57, _tp(0x04, b"\x01") + b"\x05\x80"))[-1] == "initial_max_data: 1"
    # a 64-bit length: its low 32 bits in the parameter's words (as tshark's), all of it in the Length line
    big = _params(_ext(57, _tp(0x1234, b"", (1 << 32) + 3) + b"abc"))
    assert big == ["Parameter: Unknown 0x1234 (len=3)", "Type: Unknown (0x1234)", f"Length: {(1 << 32) + 3}", "Value: 616263"]
    # 27 is no GREASE id for tshark 4.0 (27 + 31 N from N = 1), 11 neither
    assert [x for x in _params(_ext(57, _tp(0x1B, b"") + _tp(0x3A, b"") + _tp(0x0B, b"\x01"))) if x.startswith("Parameter: ")] == [
        "Parameter: Unknown 0x001b (len=0)", "Parameter: GREASE (len=0)", "Parameter: max_ack_delay (len=1) 1"]


def test_hostile_psk_offers_stay_inside_their_extension():
    good = _psk([(b"\x01" * 20, 5), (b"\x02" * 3, 6)], [bytes(32)])
    for a, b in itertools.combinations(range(len(good) + 1), 2):
        for data in (good[a:b], good[:a] + b"\xff" + good[a + 1 :]):
            ext = _ext(41, data)
            _inside(_tree(ext, 1), len(ext))
    for ids_len, id_len in itertools.product((0, 1, 2, 5, 29, 34, 35, 1000), (None, 0, 1, 19, 25, 60000)):
        ext = _ext(41, _psk([(b"\x01" * 20, 5), (b"\x02" * 3, 6)], [bytes(32)], ids_len, id_len))
        _inside(_tree(ext, 1), len(ext))
    # an identity's length past its list: cut to the list, the age after it as tshark reads it
    nodes = _tree(_ext(41, _psk([(b"\x05" * 10, 1)], [bytes(32)], id_len=30)))
    assert [(n.label, n.start, n.end - n.start) for n in nodes[5:]] == [
        ("Identities Length: 16", 6, 2), ("PSK Identity (length: 14)", 8, 20), ("Identity Length: 30", 8, 2),
        ("Identity: " + "05" * 10 + "00000001", 10, 14), ("Obfuscated Ticket Age: 2170880", 24, 4),  # (the binders' length and first byte)
        ("PSK Binders length: 33", 24, 2), ("PSK Binders", 26, 33)]


@given(st.binary(max_size=80), st.sampled_from([57, 0xFFA5, 41]), st.sampled_from([1, 2, 8]))
@fuzz_settings(300)
def test_random_bytes_never_raise(data, kind, msg):
    ext = _ext(kind, data)
    _inside(_tree(ext, msg), len(ext))
