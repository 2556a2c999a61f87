"""The TLS detail tree is Wireshark's: on every packet of real captures, the tree's TLS lines
are tshark's (``tshark -n -T pdml`` with the key log, and without it; segments after a hole
reassembled when it is filled, ``tcp.reassemble_out_of_order``, as wirefall does), in tshark's order, and
every record line tshark shows — ``TLSv1.3 Record Layer: Handshake Protocol: Server Hello``,
content/opaque type, version, length, each handshake message with its type, a hello's cipher
suites and extensions, encrypted application data, alerts — is there.

Before (session 33): a generic node per record ("Protocol: tls", "Type: HANDSHAKE",
"messages: ['CLIENT_HELLO']", "encrypted: False"), no record layer, no handshake message.

Compared by label (the words and order); a record's byte ranges are the packet's where the
record is whole in it (checked here) — tshark places the lines of a reassembled or decrypted
record in data sources of its own.  Session 35: the contents of the extensions Wireshark users
read most (server_name, ALPN, supported_versions, supported_groups, key_share, signature_algorithms,
ec_point_formats, psk_key_exchange_modes, renegotiation_info, padding, compress_certificate,
status_request, a server's pre_shared_key and NPN list, a GREASE or unknown extension's data).
Session 36: a client's pre_shared_key and QUIC transport parameters (tests/test_tls_qtp36.py).
What the tree leaves out of tshark's: the other extensions' contents (a session ticket's bytes),
certificates (ASN.1, and a TLS 1.3
certificate entry's extensions), key exchange and signature fields, JA3, and a handshake message
continued across records."""
from __future__ import annotations


import pytest

from wirefall.analyzer.capture import PacketSource
from wirefall.analyzer.detail import packet_detail
from wirefall.analyzer.pipeline import analyze

import pdml
from conftest import SAMPLES, capture_and_keys

CAPTURES = {
    "page-h2": ("sample", "page/page-h2.pcapng", "page/page-h2.keys"),
    "page-h2-nokeys": ("sample", "page/page-h2.pcapng", None),
    "page-h1": ("sample", "page/page-h1.pcapng", "page/page-h1.keys"),
    "page-spdy": ("sample", "page/page-spdy.pcapng", "page/page-spdy.keys"),
    "h2-tls": ("sample", "http/h2-tls.pcap", "http/h2-tls.keys"),
    "lossy-h2": ("sample", "lossy/page-h2.pcapng", "lossy/page-h2.keys"),
    "amazon": ("shared", "pageload-amazon/amazon1.cap.gz", "pageload-amazon/amazon1.key_log.txt.gz"),
    "tls12": ("shared", "tls12/capture.pcap", "tls12/keylog.txt"),
    "tls13": ("shared", "tls13/capture.pcap", "tls13/keylog.txt"),
    # one capture per TLS version, cipher family and feature (sample_captures/tls, its README)
    **{f"tls/{p.stem}": ("sample", f"tls/{p.name}", f"tls/{p.stem}.keys" if p.with_suffix(".keys").exists() else None)
       for p in sorted((SAMPLES / "tls").glob("*.pcap"))},
}
# the lines of tshark's a record's node always has (as many of each on the packet)
MUST = ("TLSv", "SSLv", "Content Type: ", "Opaque Type: ", "Version: ", "Handshake Protocol: ", "Handshake Type: ",
        "Cipher Suite: ", "Cipher Suites Length", "Extension: ", "Encrypted Application Data: ",
        "Application Data Protocol: ", "Alert Message", "Level: ", "Description: ", "Change Cipher Spec Message", "Session ID",
        # session 35: the contents of the extensions Wireshark users read most
        "Server Name", "ALPN ", "Supported Version", "Supported Group", "Key Share ", "Key Exchange Length: ",
        "Selected Group: ", "EC point format", "Signature Hash Algorithms", "PSK Key Exchange Mode", "Renegotiation info",
        "Padding Data: ", "Algorithms Length: ", "Selected Identity: ", "Next Protocol", "Protocol string length: ",
        "Certificate Status Type: ", "Responder ID list Length: ", "Request Extensions Length: ",
        # session 36: a client's pre_shared_key, QUIC transport parameters
        "Identities Length: ", "PSK Identity (", "Identity Length: ", "Obfuscated Ticket Age: ", "PSK Binders", "Parameter: ")




def _tshark(path: str, keys: str | None) -> dict[int, list[tuple[str, int, int, bool]]]:
    """Packet -> tshark's TLS lines: (label, offset, length, inside a certificate list)."""
    args = ["-n", "-o", "tcp.reassemble_out_of_order:TRUE", "-r", path, "-Y", "tls", *(["-o", f"tls.keylog_file:{keys}"] if keys else [])]
    return {num: [r for proto in pkt.findall("proto") if proto.get("name") == "tls"
                  for r in pdml.field_lines(proto, into=lambda lb: lb.startswith("Certificates ("))]
            for num, pkt in pdml.packets(*args)}


@pytest.mark.parametrize("name", sorted(CAPTURES))
def test_tls_tree_is_tsharks(name, tmp_path):
    path, kpath = capture_and_keys(*CAPTURES[name], tmp_path)
    want = _tshark(path, kpath)
    an = analyze(path, keylogs=[kpath] if kpath else [])
    src = PacketSource(path)
    records = ranged = 0
    for n, theirs in want.items():
        if not theirs:
            continue  # (TLS inside QUIC: under tshark's QUIC node, tests/test_detail_quic.py)
        tree = packet_detail(an, src, n)
        group = next((x for x in tree if x.label.startswith("Transport Layer Security")), None)
        assert group is not None, f"packet {n}: no TLS node"
        ours = []
        for rec in group.children:
            if "[continued: " in rec.label:
                continue  # (a record that completes on a later packet: its node is there, as tshark's)
            records += 1
            own = {id(y) for w in rec.children if w.label.startswith("[wirefall: ") for y in w.walk()}  # (wirefall's fields)
            ours += [x for x in rec.walk() if id(x) not in own]
        labels = [pdml.label(x.label) for x in ours]
        pdml.in_order(labels, [t[0] for t in theirs], f"packet {n}")
        pdml.all_there((t[0] for t in theirs if t[0].startswith(MUST) and not t[3]), (lb for lb in labels if lb.startswith(MUST)),
                       f"packet {n}")
        # where a node has the packet's bytes, they are tshark's for that line
        exact = {(t[0], t[1], t[2]) for t in theirs}
        for x in ours:
            if x.source == 0 and x.start >= 0 and x.end > x.start and not x.label.startswith(("TLSv", "SSLv", "Handshake Protocol")):
                assert (pdml.label(x.label), x.start, x.end - x.start) in exact, f"packet {n}: {x.label} at {x.start}-{x.end}"
                ranged += 1
    assert records > len(want) // 2 and ranged > 0
