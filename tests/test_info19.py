"""Info column, review 19: tshark's words where wirefall's differed.

- An HTTP/3 DATA frame that begins and ends in the packet is named after the HEADERS before it
  in the same STREAM frame (``STREAM(0), HEADERS, DATA``), as tshark 4.0 names it; one that
  continues in a later packet, or that the capture cuts, is not.
- HTTP/1 bodies: the media type's dissector name (``PNG``, ``JPEG JFIF image``, ``GIF89a``,
  ``JavaScript Object Notation``…) only when the body is what the Content-Type says (tshark's
  image dissectors check the magic bytes); else the media type, ``(image/png)``.

Packet by packet against ``tshark -T fields -e _ws.col.Info`` (tests/test_info.py's comparison),
on the captures named in the review and on the whole of each."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import test_info as T  # noqa: E402

from wirefall.analyzer.capture import PacketSource  # noqa: E402
from wirefall.analyzer.packet_record import packet_record  # noqa: E402
from wirefall.analyzer.pipeline import analyze  # noqa: E402

pytestmark = pytest.mark.skipif(T.TSHARK is None, reason="tshark not installed")

AMAZON = ("shared:pageload-amazon/amazon1.cap.gz", "shared:pageload-amazon/amazon1.key_log.txt.gz")
MULTI = ("sample_captures/quic/page-multi-late.pcapng", "sample_captures/quic/page-multi-late.keys")
CUT = ("sample_captures/quic/aioquic-h3-cut.pcap", "sample_captures/quic/aioquic-h3-cut.keys")


def _rows(spec: str, kspec: str | None, numbers: list[int], tmp: Path) -> list[tuple[int, str, str]]:
    """(packet, wirefall's Info, tshark's Info) of ``numbers``."""
    path = T._p(spec)
    keys = T._p(kspec) if kspec else None
    an = analyze(str(path), [str(keys)] if keys else [])
    cmd = [T.TSHARK, "-r", str(path), "-T", "fields", "-e", "_ws.col.Info"]
    if keys:
        cmd[3:3] = ["-o", f"tls.keylog_file:{T._keylog_for_tshark(keys, tmp)}"]
    theirs = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=300).stdout.split("\n")
    src = PacketSource(str(path))
    try:
        return [(n, packet_record(an, src, n).info, theirs[n - 1]) for n in numbers]
    finally:
        src.close()


@pytest.mark.parametrize("spec,numbers", [(AMAZON, [485, 515, 548]), (MULTI, [317, 319, 321])],
                         ids=["amazon1", "page-multi-late"])
def test_h3_data_after_headers_in_one_stream_frame(spec, numbers, tmp_path):
    rows = _rows(*spec, numbers, tmp_path)
    for n, ours, theirs in rows:
        assert theirs.endswith("HEADERS, DATA"), (n, theirs)  # the case of the review
        assert ours == theirs, n


def test_amazon_every_packet_is_tsharks_or_allowed(tmp_path):
    """amazon1 is in tests/test_info.py's list: no difference outside its allowed rules, and no
    HTTP/3 frame placement difference left (four packets of it were, DATA names)."""
    n, equal, allowed, bad, protocols = T._compare(*AMAZON, tmp_path)
    assert not bad, bad[:10]
    assert not protocols, protocols[:10]
    assert not allowed["h3-frame-placement"]


@pytest.mark.parametrize("spec", [AMAZON, MULTI, CUT], ids=["amazon1", "page-multi-late", "aioquic-h3-cut"])
def test_h3_data_never_the_difference(spec, tmp_path):
    """Every packet: where the Info differs from tshark's, it is never by an HTTP/3 DATA name
    (the cut capture: a DATA frame the capture ends inside is not named, as tshark does not).
    (page-multi-late starts late: tshark decodes none of its QUIC before packet ~300, nor its
    TLS 1.2 connections; those rows differ whole, and are not the point here.)"""
    path = T._p(spec[0])
    keys = T._p(spec[1])
    an = analyze(str(path), [str(keys)])
    cmd = [T.TSHARK, "-r", str(path), "-o", f"tls.keylog_file:{T._keylog_for_tshark(keys, tmp_path)}",
           "-T", "fields", "-e", "_ws.col.Info"]
    theirs = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=300).stdout.split("\n")
    src = PacketSource(str(path))
    named = 0
    try:
        for k in range(1, an.packets + 1):
            ours = packet_record(an, src, k).info
            t = theirs[k - 1]
            named += t.endswith(", DATA") and ours == t
            if ours != t and t.startswith("Protected Payload"):
                assert re.sub(r", DATA\b", "", ours) != re.sub(r", DATA\b", "", t), (k, ours, t)
    finally:
        src.close()
    if spec is not CUT:
        assert named >= 3


sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts" / "hostile"))
import objects19_inputs  # noqa: E402


def test_http1_media_names_as_tshark(tmp_path):
    """Every response of the media capture: tshark's Info, word for word ("(PNG)" only for a PNG,
    "(image/png)" for other bytes, GIF87a/GIF89a, JPEG only with JFIF/Exif, nothing for XML)."""
    cap = objects19_inputs.media_bodies(tmp_path / "media.pcap")
    an = analyze(cap)
    out = subprocess.run([T.TSHARK, "-r", cap, "-Y", "http.response", "-T", "fields", "-e", "frame.number", "-e", "_ws.col.Info"],
                         capture_output=True, text=True, check=True, timeout=120).stdout
    rows = [x.split("\t", 1) for x in out.splitlines() if x]
    assert len(rows) == len(objects19_inputs.MEDIA) + 1
    src = PacketSource(cap)
    try:
        got = {int(n): packet_record(an, src, int(n)).info for n, _ in rows}
    finally:
        src.close()
    assert got == {int(n): t for n, t in rows}
    infos = list(got.values())
    assert infos[0].endswith("(PNG)") and infos[1].endswith("(image/png)") and infos[11].endswith("(GIF87a)")


@pytest.mark.parametrize("spec,n,words", [("sample_captures/http/http1-nginx.pcap", 13, "(image/png)"),
                                          ("sample_captures/page/page-h1.pcapng", 84, "(PNG)")])
def test_review_packets_media(spec, n, words, tmp_path):
    keys = "sample_captures/page/page-h1.keys" if "page-h1" in spec else None
    (num, ours, theirs), = _rows(spec, keys, [n], tmp_path)
    assert ours == theirs and theirs.endswith(words)
