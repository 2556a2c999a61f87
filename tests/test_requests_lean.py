"""``requests`` runs the pass without the frame listing (``sessions.Context.listing``): no
``Frame`` per HTTP/1 message or body, HTTP/2, QUIC or HTTP/3 frame nor per decrypted TLS application-data record, and
no decrypted-QUIC-packet rows.  What it prints must not change for it: the exchanges, the
connections, the notes and warnings and the packet index are those of the full pass, serial and
with two workers (``benchmarks/digest.py`` checks the JSON of every sample the same way)."""
from __future__ import annotations

from pathlib import Path

import pytest

from wirefall.analyzer.jsonout import exchange_dict, summary_dict
from wirefall.analyzer.pipeline import analyze

PAGE = Path(__file__).resolve().parents[1] / "sample_captures" / "page"


@pytest.mark.parametrize("name", ["page-h2", "page-h3", "page-spdy", "page-h1"])
def test_the_lean_pass_makes_the_same_model_but_its_frame_listing(name):
    cap, keys = str(PAGE / f"{name}.pcapng"), [str(PAGE / f"{name}.keys")]
    full = analyze(cap, keys)
    for workers in (None, 2):
        lean = analyze(cap, keys, listing=False, workers=workers)
        assert [exchange_dict(e) for e in lean.exchanges] == [exchange_dict(e) for e in full.exchanges]
        assert summary_dict(lean) == summary_dict(full) and lean.warnings == full.warnings
        assert list(lean.index.proto) == list(full.index.proto) and list(lean.index.conn) == list(full.index.conn)
        listed = {"h2", "quic", "h3", "http/1.1", "http/1.0"}
        assert not [f for f in lean.frames if f.protocol in listed] and not lean.quic_packets
        # what it still lists (TLS handshakes and records its fast path did not take, SPDY
        # frames, DNS) is a part of the full listing, in its order
        key = lambda f: (f.packet, f.protocol, f.type, f.offset, f.connection, f.direction)  # noqa: E731
        want = [key(f) for f in full.frames if f.protocol not in listed]
        got = [key(f) for f in lean.frames]
        it = iter(want)
        assert all(k in it for k in got), name
    assert len(lean.frames) < len(full.frames)
