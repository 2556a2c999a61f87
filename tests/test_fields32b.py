"""Review 32: display-filter fields tshark 4.0 has where wirefall had none, compared with tshark
value for value and packet for packet:

- the HTTP/2 settings of an h2c Upgrade request's ``HTTP2-Settings`` header (RFC 7540 section
  3.2.1, base64url): tshark decodes them under the HTTP/1.1 request (``http.http2_settings``, and
  ``http2.settings``, ``.id``, ``.<name>``, ``.unknown`` on the request's packet); wirefall only
  had them on HTTP/2 SETTINGS frames (h2c-upgrade.pcap: packets 4 and 30 were missing);
- gQUIC's ``gquic.tag.sni``, ``gquic.stream_id``, ``gquic.data_len`` (unknown fields before),
  on Google QUIC's dragon3.pcap.

Values: ``tshark -T fields -E occurrence=a`` on every packet against each field's ``Field.get``;
packet sets: ``-Y`` through tests/tshark_filters.lua (tshark_tap).  Besides the bundled capture,
copies of it whose header value is replaced by one of the same length (repeated and unknown
identifiers), so that the order of the values and the unknown ones are compared too."""
from __future__ import annotations

import base64
import shutil
import struct
import subprocess
from functools import cache
from pathlib import Path

import pytest
import tshark_tap
from field_oracle import capture_file, tshark_values, wirefall_values

from wirefall.analyzer.fields import lookup
from wirefall.analyzer.pipeline import analyze

pytestmark = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")

H2C = "sample:http/h2c-upgrade.pcap"
DRAGON = "shared:gquic/dragon3.pcap"
SETTINGS_FIELDS = ("http2.settings", "http2.settings.id", "http2.settings.header_table_size", "http2.settings.enable_push",
                   "http2.settings.max_concurrent_streams", "http2.settings.initial_window_size", "http2.settings.max_frame_size",
                   "http2.settings.max_header_list_size", "http2.settings.extended_connect", "http2.settings.unknown")
GQUIC_FIELDS = ("gquic.stream_id", "gquic.data_len")
STRING_FIELDS = {"http.http2_settings": H2C, "gquic.tag.sni": DRAGON}
ORIGINAL = b"AAMAAABkAAQAAP__"  # packet 4's HTTP2-Settings value in h2c-upgrade.pcap


def _b64(pairs) -> bytes:
    return base64.urlsafe_b64encode(b"".join(struct.pack(">HI", i, v) for i, v in pairs)).rstrip(b"=")


# the same capture, packet 4's header value replaced by one as long (the TCP stream stays whole)
VARIANTS = {"repeated": _b64([(4, 1), (4, 2)]), "unknown": _b64([(0x10, 7), (1, 4096)])}


def _file(spec: str, tmp: Path) -> Path:
    return capture_file(spec, tmp)


@cache
def _analysis(cap: Path):
    return analyze(str(cap))


def _variant(tmp: Path, name: str) -> Path:
    src = _file(H2C, tmp).read_bytes()
    assert src.count(ORIGINAL) == 1 and len(VARIANTS[name]) == len(ORIGINAL)
    out = tmp / f"h2c-{name}.pcap"
    out.write_bytes(src.replace(ORIGINAL, VARIANTS[name]))
    return out


def _compare(cap: Path, names: tuple[str, ...], none=frozenset()) -> dict[int, dict[str, list]]:
    theirs = tshark_values(cap, None, names, none_fields=none)
    mine = wirefall_values(_analysis(cap), cap, names)
    wrong = [f"packet {n}: tshark {theirs.get(n)}, wirefall {mine.get(n)}" for n in sorted(set(theirs) | set(mine))
             if theirs.get(n) != mine.get(n)]
    assert not wrong, "\n".join(wrong[:20])
    return theirs


def test_upgrade_settings_are_tsharks_packet_by_packet(tmp_path):
    cap = _file(H2C, tmp_path)
    theirs = _compare(cap, SETTINGS_FIELDS, frozenset({"http2.settings"}))
    # the requests' packets are among them (the comparison covers the header, not only SETTINGS frames)
    assert theirs[4]["http2.settings.id"] == [3, 4] and theirs[30]["http2.settings.initial_window_size"] == [33554432]


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_upgrade_settings_repeated_and_unknown_are_tsharks(tmp_path, variant):
    cap = _variant(tmp_path, variant)
    theirs = _compare(cap, SETTINGS_FIELDS, frozenset({"http2.settings"}))
    assert theirs[4]["http2.settings.id"] == ([4, 4] if variant == "repeated" else [16, 1])


def _tshark_strings(cap: Path, name: str) -> dict[int, list[str]]:
    out = subprocess.run(["tshark", "-n", "-r", str(cap), "-T", "fields", "-E", "occurrence=a", "-E", "aggregator=\x1f",
                          "-e", "frame.number", "-e", name], capture_output=True, text=True, timeout=600, check=True).stdout
    return {int(n): v.split("\x1f") for n, _, v in (line.partition("\t") for line in out.splitlines()) if v}


@pytest.mark.parametrize("name", sorted(STRING_FIELDS))
def test_string_fields_are_tsharks_packet_by_packet(tmp_path, name):
    cap = _file(STRING_FIELDS[name], tmp_path)
    theirs = _tshark_strings(cap, name)
    assert theirs
    assert wirefall_values(_analysis(cap), cap, (name,)) == {n: {name: v} for n, v in theirs.items()}


def test_gquic_stream_fields_are_tsharks_packet_by_packet(tmp_path):
    theirs = _compare(_file(DRAGON, tmp_path), GQUIC_FIELDS)
    assert sorted(theirs) == [1, 4, 823]


FILTERS = {
    H2C: [("http2.settings.initial_window_size", True), ("http2.settings.initial_window_size == 33554432", True),
          ("http2.settings && !http2", True), ("count(http2.settings) == 2", True), ("http2.settings.enable_push == 0", True),
          ('http.http2_settings == "AAMAAABkAAQAAP__"', True), ("http.request && http2.settings.id == 3", True),
          ("http2.settings.unknown", True)],
    DRAGON: [("gquic.tag.sni", True), ('gquic.tag.sni contains "fqnovel"', True), ("gquic.stream_id == 1", True),
             ("gquic.data_len > 459", True), ("gquic.data_len == 459", True), ("gquic.stream_id && !gquic.tag.sni", False),
             ('gquic.tag.sni == "ec5-core-lf.ecombdapi.com"', True)],
}


@pytest.mark.parametrize("spec", sorted(FILTERS))
def test_filters_select_tsharks_packets(tmp_path, spec):
    cap = _file(spec, tmp_path)
    cases = FILTERS[spec]
    theirs = tshark_tap.tap(cap, [e for e, _ in cases])
    tshark_tap.assert_same_packets(spec, cases, theirs, lambda e: tshark_tap.wirefall_packets(_analysis(cap), cap, e))


def test_upgrade_request_packets_are_the_ones_wirefall_missed(tmp_path):
    """tshark's -Y http2.settings.initial_window_size: the SETTINGS frames' packets and the two
    Upgrade requests' (4, 30), which the filter missed."""
    cap = _file(H2C, tmp_path)
    theirs = tshark_tap.tap(cap, ["http2.settings.initial_window_size"])["http2.settings.initial_window_size"]
    assert sorted(theirs) == [4, 6, 8, 30, 32, 34]  # type: ignore[arg-type]
    assert tshark_tap.wirefall_packets(_analysis(cap), cap, "http2.settings.initial_window_size") == [4, 6, 8, 30, 32, 34]


def test_frames_filter_sees_the_upgrade_request():
    """``frames -Y``: the HTTP/1.1 request frame carries the settings of its header."""
    from wirefall.analyzer.model import Frame

    fr = Frame(4, 4, 0.0, 0, 0, "http/1.1", None, "REQUEST", headers=[("http2-settings", ORIGINAL.decode())], fields={})
    assert lookup("http2.settings.id").frame(fr) == [3, 4]  # type: ignore[union-attr,misc]
    assert lookup("http2.settings.max_concurrent_streams").frame(fr) == [100]  # type: ignore[union-attr,misc]


@pytest.mark.parametrize("value", ["AAMAAABkAAQA!P__", "AAMAAABkA", "AAMAAABkAAQAAP__é", "A" * 5000, "", "  "])
def test_malformed_or_oversized_header_gives_no_settings_and_no_exception(value):
    """Not base64url, a length no base64 has, not ASCII, past the 4096-character bound, empty:
    no settings (tshark skips characters and decodes what is left; wirefall does not guess)."""
    from wirefall.analyzer.model import Frame

    fr = Frame(4, 4, 0.0, 0, 0, "http/1.1", None, "REQUEST", headers=[("HTTP2-Settings", value)], fields={})
    for f in SETTINGS_FIELDS:
        assert lookup(f).frame(fr) == []  # type: ignore[union-attr]


def test_types_and_sizes_are_tsharks():
    from wirefall.analyzer.fields.types import FT_NAMES

    names = (*SETTINGS_FIELDS, *GQUIC_FIELDS, *STRING_FIELDS)
    decl = {}
    out = subprocess.run(["tshark", "-G", "fields"], capture_output=True, text=True, timeout=120).stdout
    for line in out.splitlines():
        c = line.split("\t")
        if c[0] == "F" and c[2] in names:
            decl[c[2]] = c[3]
    assert set(decl) == set(names)
    sizes = {"FT_UINT16": 2, "FT_UINT32": 4, "FT_UINT64": 8}
    for f in names:
        fld = lookup(f)
        assert fld is not None and not fld.unsupported, f
        ft = FT_NAMES[fld.type]
        assert ft == decl[f] or ft == "FT_UINT*" and decl[f].startswith("FT_UINT"), (f, ft, decl[f])
        if decl[f] in sizes:
            assert fld.size == sizes[decl[f]], f
