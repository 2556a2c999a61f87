"""Hostile input for what session 29 added: linear in the input, bounded memory."""
from __future__ import annotations

import tracemalloc


def test_quic_transport_parameters_of_a_hostile_extension_are_read_in_linear_memory():
    """A quic_transport_parameters extension of 63 KB holding 21,000 empty parameters: each
    parameter kept a copy of the rest of the extension (tshark reads a varint value where the
    value starts, its length unchecked) — 21,000 copies of up to 63 KB, ~660 MB.  Now views."""
    from wirefall.analyzer.fields.tls import _tp_decode, _tp_parse

    data = bytes([0x7F, 0xFF, 0x00]) * 21000  # (type 0x3fff, length 0)
    tracemalloc.start()
    try:
        got = _tp_parse(data)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(got["params"]) == 21000 and not got["old"]
    assert peak < 16 << 20, peak
    # the values read as before: a varint where the value starts (here the next parameter's type)
    t, ln, value, tail = got["params"][0]
    assert (t, ln, value) == (0x3FFF, 0, b"") and _tp_decode("varint", value, tail) == [0x3FFF]
    assert _tp_decode(16, value, tail) == [data[3:19]] and type(_tp_decode(16, value, tail)[0]) is bytes
