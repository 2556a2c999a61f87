"""HTTP/2 and SPDY fields of session 20's protocol review, against tshark 4.0.

- A SETTINGS identifier repeated in one frame keeps each value: ``fields["settings_list"]``
  (every [id, value] in wire order) beside ``settings`` (the last value of each), in the
  detail tree, and ``http2.settings.*`` / ``http2.settings.id`` / ``http2.settings.unknown``.
- GOAWAY debug data: bounded (``MAX_DEBUG_DATA``) but said so (``debug_data_length``,
  ``debug_data_truncated``), bytes that are not UTF-8 as ``\\xNN`` (``debug_data_escaped``);
  ``http2.goaway.addata`` has all of it, as tshark's.
- ``http2.headers.weight`` / ``weight_real``, ``http2.exclusive``, ``http2.stream_dependency``
  on PRIORITY frames as on HEADERS with the PRIORITY flag.
- ``http2.ping`` (not on an ACK) and ``http2.pong``; ``http2.pad_length`` / ``http2.padding``.
- ``spdy.flags.fin`` only on DATA, SYN_STREAM, SYN_REPLY, HEADERS; ``spdy.flags`` and
  ``spdy.length`` not on a control frame of an unknown type; ``spdy.priority``,
  ``spdy.rst_stream_status``.
- An unknown HTTP/2 frame type: ``http2.type == 250``, ``Type: Unknown (250)``, Info
  ``Unknown type (250)[0]``; an unknown SPDY control type is not in the Info column.

Inputs: ``sample_captures/http/h2c-nghttp.pcap`` and ``sample_captures/spdy/spdy3-plain.pcap``
(real), and the two captures ``scripts/hostile/h2_spdy20_inputs.py`` builds (into tmp_path).
Each filter's packet set is checked against the set tshark 4.0.17 gave (recorded below) and,
where tshark is installed, against tshark run now; field values likewise (``-T fields``)."""
from __future__ import annotations

import importlib.util
import shutil
import subprocess
from pathlib import Path

import pytest

from wirefall.analyzer.capture import PacketSource
from wirefall.analyzer.fields import lookup
from wirefall.analyzer.fields.packet import PacketContext, PacketView
from wirefall.analyzer.filter import filter_packets
from wirefall.analyzer.packet_record import packet_record
from wirefall.analyzer.pipeline import analyze

ROOT = Path(__file__).resolve().parent.parent
S = ROOT / "sample_captures"
TSHARK = shutil.which("tshark")
needs_tshark = pytest.mark.skipif(TSHARK is None, reason="tshark not installed")


def _builder():
    spec = importlib.util.spec_from_file_location("h2_spdy20_inputs", ROOT / "scripts" / "hostile" / "h2_spdy20_inputs.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


B = _builder()

# capture -> (path or the builder's function, tshark's Decode As)
CAPTURES = {
    "h2-uncommon": (B.h2_uncommon, "tcp.port==8080,http2"),
    "spdy-uncommon": (B.spdy_uncommon, "tcp.port==8443,spdy"),
    "h2c-nghttp": (S / "http" / "h2c-nghttp.pcap", "tcp.port==18081,http2"),
    "spdy3-plain": (S / "spdy" / "spdy3-plain.pcap", "tcp.port==18330,spdy"),
}

# tshark 4.0.17's -Y packet sets (tshark -r CAP -d DECODE_AS -Y EXPR)
_NGHTTP_PAD0 = [4, 8, 10, 11, 12, 15, 17, 19, 27, 31, 34, 36, 38, 40, 42, 44, 46, 48, 50, 52, 54, 56, 58, 60, 62, 64, 67, 69, 71,
                73, 75, 77, 79, 90, 92, 94]
_SPDY3_FIN0 = [14, 18, 20, 24, 26, 28, 35, 36, 37, 40, 41, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 56, 57, 58, 59, 60, 61, 64, 66, 67,
               68, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 84, 87, 88, 89, 93, 94, 95, 96, 99, 102, 103, 106, 107, 108, 109, 110,
               111, 112]
_SPDY3_FLAGS = [4, 8, 10, 14, 18, 20, 22, 24, 26, 28, 30, 32, 34, 35, 36, 37, 38, 40, 41, 42, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53,
                55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 83, 84, 85,
                86, 87, 88, 89, 90, 92, 93, 94, 95, 96, 97, 99, 100, 102, 103, 104, 106, 107, 108, 109, 110, 111, 112, 113, 115, 116,
                117, 118, 119]
FILTERS: dict[str, dict[str, list[int]]] = {
    "h2-uncommon": {
        # 1. repeated SETTINGS identifier
        "http2.settings.initial_window_size == 100": [4],
        "http2.settings.initial_window_size == 200": [4],
        "http2.settings.id == 255": [4],
        "http2.settings.unknown == 1": [4],
        "http2.settings": [4, 5],
        # 2. GOAWAY debug data
        'http2.goaway.addata contains "debug-d"': [10],
        "len(http2.goaway.addata) == 300": [10],
        "len(http2.goaway.addata) == 3000": [12],
        "http2.goaway.addata[0:2] == ff:fe": [11],
        "http2.goaway.addata contains 5c:73:6c": [11],
        "http2.goaway.addata == 62:79:65": [10],
        # 3. priority fields on PRIORITY frames
        "http2.headers.weight == 255": [6],
        "http2.headers.weight == 15": [6],
        "http2.headers.weight == 0": [6],
        "http2.headers.weight_real == 1": [6],
        "http2.headers.weight_real == 16": [6],
        "http2.exclusive == 1": [6],
        "http2.exclusive == 0": [6],
        "http2.stream_dependency == 1": [6],
        "http2.stream_dependency == 0": [6],
        # 4. ping / pong
        "http2.ping == 01:02:03:04:05:06:07:08": [4],
        "http2.pong == 01:02:03:04:05:06:07:08": [5],
        "http2.ping": [4],
        "http2.pong": [5],
        # 7. padding
        "http2.pad_length == 0": [7, 8, 16, 17],
        "http2.pad_length == 5": [6],
        "http2.pad_length == 10": [8],
        "http2.pad_length": [6, 7, 8, 16, 17],
        "http2.padding": [6, 8, 17],
        "http2.padding == 3": [8],
        # 6. type numbers, an unknown one included
        "http2.type == 250": [8],
        "http2.type == 0xfa": [8],
        "http2.type == 9": [7, 17],
        "http2.type == 2": [6],
    },
    "spdy-uncommon": {
        "spdy.flags.fin == 0": [6, 10],
        "spdy.flags.fin == 1": [5, 6],
        "spdy.flags.fin": [5, 6, 10],
        "spdy.priority == 7": [5],
        "spdy.priority == 2": [6],
        "spdy.priority == 0": [10],
        "spdy.priority": [5, 6, 10],
        "spdy.rst_stream_status == 11": [7],
        "spdy.rst_stream_status == 99": [7],
        "spdy.rst_stream_status": [7, 10],
        "spdy.type == 119": [8],
        "spdy.type == 0x55": [9],
        "spdy.length == 3": [],  # (the unknown type's length: tshark stops before it)
        "spdy.length == 4": [7],
    },
    "h2c-nghttp": {
        "http2.headers.weight == 200": [4, 27, 90],
        "http2.headers.weight_real == 201": [4, 27, 90],
        "http2.headers.weight == 0": [4, 27, 90],
        "http2.exclusive == 0": [4, 10, 27, 90],
        "http2.exclusive": [4, 10, 27, 90],
        "http2.stream_dependency == 11": [4, 10, 27, 90],
        "http2.stream_dependency == 0": [4, 27, 90],
        "http2.pad_length == 0": _NGHTTP_PAD0,
        "http2.ping": [],
        "http2.pong": [],
        "http2.settings.id == 3": [4, 6, 27, 29, 88, 90],
        "http2.type == 2": [4, 27, 90],
    },
    "spdy3-plain": {
        "spdy.flags.fin == 0": _SPDY3_FIN0,
        "spdy.flags.fin == 1": [8, 22, 30, 32, 34, 36, 38, 42, 62, 81, 86, 90, 97, 100, 104, 113],
        "spdy.priority == 3": [18, 24, 36],
        "spdy.priority": [8, 18, 24, 34, 36],
        "spdy.rst_stream_status": [92, 116],
        "spdy.flags": _SPDY3_FLAGS,
        "spdy.length": _SPDY3_FLAGS,
    },
}

# tshark 4.0.17's values (-T fields -E occurrence=a), per packet; http2.goaway.addata from the builder's bytes
VALUES: dict[str, dict[str, dict[int, list[str]]]] = {
    "h2-uncommon": {
        "http2.type": {4: ["4", "6"], 5: ["4", "4", "6", "10", "12"], 6: ["4", "1", "2", "2", "16"], 7: ["1", "9", "9"],
                       8: ["5", "1", "0", "250", "8"], 9: ["3", "3", "8"], 10: ["7", "7"], 11: ["7"], 12: ["7"], 16: ["4", "1"], 17: ["9"]},
        "http2.settings.id": {4: ["1", "4", "255", "4", "9"], 5: ["3"]},
        "http2.settings.initial_window_size": {4: ["100", "200"]},
        "http2.settings.unknown": {4: ["7", "1"]},
        "http2.pad_length": {6: ["5"], 7: ["0", "0", "0"], 8: ["3", "0", "10"], 16: ["0"], 17: ["0"]},
        "http2.padding": {6: ["0x05"], 8: ["0x03", "0x0a"], 17: ["0x00"]},
        "http2.exclusive": {6: ["1", "1", "0"]},
        "http2.stream_dependency": {6: ["0", "1", "0"]},
        "http2.headers.weight": {6: ["15", "255", "0"]},
        "http2.headers.weight_real": {6: ["16", "256", "1"]},
        "http2.ping": {4: ["0102030405060708"]},
        "http2.pong": {5: ["0102030405060708"]},
        "http2.goaway.addata": {10: [(b"debug-" * 60)[:300].hex(), b"bye".hex()], 11: [B.GOAWAY_BINARY.hex()],
                                12: [bytes((i * 7) & 0x7F | 0x20 for i in range(B.GOAWAY_LONG)).hex()]},
    },
    "spdy-uncommon": {
        "spdy.flags.fin": {5: ["1"], 6: ["0", "0", "0", "1"], 10: ["0"]},
        "spdy.priority": {5: ["7"], 6: ["2"], 10: ["0"]},
        "spdy.rst_stream_status": {7: ["11", "99"], 10: ["1"]},
        "spdy.length": {4: ["28"], 5: ["70"], 6: ["70", "19", "21", "2", "29"], 7: ["8", "8", "4", "8", "8"], 8: ["8"], 10: ["19", "8"]},
    },
    "h2c-nghttp": {
        "http2.exclusive": {4: ["0"] * 6, 10: ["0"] * 22, 27: ["0"] * 6, 90: ["0"] * 6},
        "http2.stream_dependency": {4: ["0", "0", "0", "7", "3", "11"], 10: ["3"] * 14 + ["11"] * 8,
                                    27: ["0", "0", "0", "7", "3", "11"], 90: ["0", "0", "0", "7", "3", "11"]},
        "http2.headers.weight": {4: ["200", "100", "0", "0", "0", "15"], 10: ["31"] * 14 + ["11"] * 8,
                                 27: ["200", "100", "0", "0", "0", "15"], 90: ["200", "100", "0", "0", "0", "15"]},
        "http2.headers.weight_real": {4: ["201", "101", "1", "1", "1", "16"], 10: ["32"] * 14 + ["12"] * 8,
                                      27: ["201", "101", "1", "1", "1", "16"], 90: ["201", "101", "1", "1", "1", "16"]},
    },
    "spdy3-plain": {
        "spdy.priority": {8: ["0"], 18: ["3"], 24: ["3"], 34: ["0"], 36: ["1", "4", "5", "7", "7", "2", "5", "3", "2"]},
        "spdy.rst_stream_status": {92: ["2"], 116: ["2"]},
    },
}

_HEX = {"http2.padding": 2}  # tshark's BASE_HEX fields: 0x%02x


class _Cap:
    def __init__(self, path: Path, decode_as: str):
        self.path = path
        self.decode_as = decode_as
        self.an = analyze(str(path), [])
        self.src = PacketSource(str(path))
        self.ctx = PacketContext(self.an, self.src)

    def packets(self, expr: str) -> list[int]:
        return list(filter_packets(self.an, self.src, expr))

    def values(self, name: str) -> dict[int, list[str]]:
        f = lookup(name)
        assert f is not None, name
        out = {}
        for n in range(1, self.an.packets + 1):
            got = f.get(PacketView(self.ctx, n))
            if got:
                out[n] = [_text(name, v) for v in got]
        return out


def _text(name: str, v) -> str:
    """A value as tshark's -T fields writes it."""
    if isinstance(v, (bytes, bytearray)):
        return bytes(v).hex()
    if isinstance(v, bool):
        return "1" if v else "0"
    if name in _HEX:
        return f"0x{v:0{_HEX[name]}x}"
    return str(v)


@pytest.fixture(scope="module")
def caps(tmp_path_factory):
    d = tmp_path_factory.mktemp("h2spdy20")
    out = {}
    for name, (src, decode_as) in CAPTURES.items():
        if callable(src):
            path = d / f"{name}.pcap"
            path.write_bytes(src())
        else:
            path = src
        out[name] = _Cap(path, decode_as)
    yield out
    for c in out.values():
        c.src.close()


def _tshark(cap: _Cap, *args: str) -> str:
    assert TSHARK is not None
    r = subprocess.run([TSHARK, "-r", str(cap.path), "-d", cap.decode_as, *args], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


_FILTER_CASES = [(c, e) for c, es in FILTERS.items() for e in es]
_VALUE_CASES = [(c, f) for c, fs in VALUES.items() for f in fs]


@pytest.mark.parametrize("cap,expr", _FILTER_CASES, ids=[f"{c}:{e}" for c, e in _FILTER_CASES])
def test_filter_packet_set_is_tsharks(caps, cap, expr):
    assert caps[cap].packets(expr) == FILTERS[cap][expr]


@needs_tshark
@pytest.mark.parametrize("cap", list(FILTERS))
def test_filter_packet_sets_against_tshark_now(caps, cap):
    c = caps[cap]
    for expr in FILTERS[cap]:
        theirs = [int(x) for x in _tshark(c, "-Y", expr, "-T", "fields", "-e", "frame.number").split()]
        assert c.packets(expr) == theirs, expr


@pytest.mark.parametrize("cap,field", _VALUE_CASES, ids=[f"{c}:{f}" for c, f in _VALUE_CASES])
def test_field_values_are_tsharks(caps, cap, field):
    assert caps[cap].values(field) == VALUES[cap][field]


@needs_tshark
@pytest.mark.parametrize("cap", list(VALUES))
def test_field_values_against_tshark_now(caps, cap):
    c = caps[cap]
    for field in VALUES[cap]:
        out = _tshark(c, "-T", "fields", "-E", "occurrence=a", "-E", "aggregator=|", "-e", "frame.number", "-e", field)
        theirs = {int(n): v.split("|") for n, v in (ln.split("\t") for ln in out.splitlines()) if v}
        assert c.values(field) == theirs, field


# ---------------------------------------------------------------- frames, tree, Info

def _frames(c: _Cap, n: int, ftype: str) -> list:
    return [f for f in c.an.frames if f.packet == n and f.type == ftype]


def test_settings_list_keeps_a_repeated_identifier(caps):
    (st,) = _frames(caps["h2-uncommon"], 4, "SETTINGS")
    assert st.fields["settings_list"] == [[1, 4096], [4, 100], [255, 7], [4, 200], [9, 1]]
    # the dict of last values stays as it was (docs/JSON.md)
    assert st.fields["settings"] == {"HEADER_TABLE_SIZE": 4096, "INITIAL_WINDOW_SIZE": 200, "0xff": 7, "NO_RFC7540_PRIORITIES": 1}


def test_goaway_debug_data_bounded_and_said(caps):
    c = caps["h2-uncommon"]
    g10 = _frames(c, 10, "GOAWAY")
    assert g10[0].fields["debug_data"] == (b"debug-" * 60)[:300].decode()  # 300 bytes: all of it (was 248)
    assert g10[0].fields["debug_data_length"] == 300 and "debug_data_truncated" not in g10[0].fields
    assert g10[1].fields["debug_data"] == "bye"
    (g11,) = _frames(c, 11, "GOAWAY")
    assert g11.fields["debug_data"] == "\\xff\\xfeoops\\x80 back\\slash €" and g11.fields["debug_data_escaped"] is True
    assert g11.fields["debug_data_length"] == len(B.GOAWAY_BINARY)
    (g12,) = _frames(c, 12, "GOAWAY")
    from wirefall.dissectors.http2 import MAX_DEBUG_DATA

    assert g12.fields["debug_data_truncated"] is True and g12.fields["debug_data_length"] == B.GOAWAY_LONG
    assert len(g12.fields["debug_data"].encode()) == MAX_DEBUG_DATA < B.GOAWAY_LONG


def _tree(c: _Cap, n: int) -> list[tuple[str, str | None, object]]:
    from wirefall.analyzer.detail import packet_detail

    return [(x.label, x.abbrev, x.value) for root in packet_detail(c.an, c.src, n) for x in root.walk()]


def test_tree_settings_priority_unknown_type(caps):
    c = caps["h2-uncommon"]
    t4 = _tree(c, 4)
    assert [v for _, a, v in t4 if a == "http2.settings.id"] == ["1", "4", "255", "4", "9"]
    assert [v for _, a, v in t4 if a == "http2.settings.initial_window_size"] == ["100", "200"]
    assert [v for _, a, v in t4 if a == "http2.settings.unknown"] == ["7", "1"]
    t6 = _tree(c, 6)
    assert [v for _, a, v in t6 if a == "http2.headers.weight"] == ["15", "255", "0"]
    assert [v for _, a, v in t6 if a == "http2.headers.weight_real"] == ["16", "256", "1"]
    assert [v for _, a, v in t6 if a == "http2.exclusive"] == ["1", "1", "0"]
    assert [v for _, a, v in t6 if a == "http2.stream_dependency"] == ["0", "1", "0"]
    t8 = _tree(c, 8)
    assert ("Type: Unknown (250)", "http2.type", "250") in t8
    assert not any("UNKNOWN_0x" in lab for lab, _, _ in t8)
    t12 = _tree(c, 12)
    (addata,) = [lab for lab, a, _ in t12 if a == "http2.goaway.addata"]
    assert addata.endswith(f"[{B.GOAWAY_LONG} bytes (truncated)]")


# tshark 4.0.17's Info column of the built captures
INFO = {
    "h2-uncommon": {4: "Magic, SETTINGS[0], PING[0]", 5: "SETTINGS[0], SETTINGS[0], PING[0], ALTSVC[0], ORIGIN[0]",
                    6: "SETTINGS[0], HEADERS[1]: GET /a, PRIORITY[3], PRIORITY[7], PRIORITY_UPDATE[0]",
                    7: "HEADERS[5]: GET /b, CONTINUATION[5], CONTINUATION[5]",
                    8: "PUSH_PROMISE[1]: GET /pushed, HEADERS[1]: 200 OK, DATA[1] (text/plain), Unknown type (250)[0], WINDOW_UPDATE[0]",
                    9: "RST_STREAM[5], RST_STREAM[2], WINDOW_UPDATE[0]", 10: "GOAWAY[0], GOAWAY[0]", 11: "GOAWAY[0]", 12: "GOAWAY[0]",
                    16: "Magic, SETTINGS[0], HEADERS[1]: GET /c", 17: "CONTINUATION[1]"},
    "spdy-uncommon": {4: "SETTINGS", 5: "SYN_STREAM", 6: "SYN_STREAM, SYN_REPLY, HEADERS, DATA, CREDENTIAL",
                      7: "RST_STREAM, RST_STREAM, PING, WINDOW_UPDATE, GOAWAY", 8: "GOAWAY", 10: "SYN_STREAM, RST_STREAM"},
}
# Packet 9 of spdy-uncommon carries only a control frame of an unknown type: tshark's Info is
# empty there (the SPDY dissector cleared the column and wrote nothing); wirefall's stays TCP's
# (analyzer/info.py's stream_info returns None when no frame has a text).


@pytest.mark.parametrize("cap", list(INFO))
def test_info_is_tsharks(caps, cap):
    c = caps[cap]
    for n, want in INFO[cap].items():
        assert packet_record(c.an, c.src, n).info == want, n
    assert "UNKNOWN" not in (packet_record(c.an, c.src, 9).info or "")


@needs_tshark
@pytest.mark.parametrize("cap", list(INFO))
def test_info_against_tshark_now(caps, cap):
    c = caps[cap]
    theirs = _tshark(c, "-T", "fields", "-e", "_ws.col.Info").split("\n")
    for n, want in INFO[cap].items():
        assert theirs[n - 1] == want, n
