"""SPDY control frames too short to hold their stream id (SYN_STREAM, SYN_REPLY/HEADERS,
RST_STREAM, WINDOW_UPDATE), between two whole exchanges, after the packets of a real SPDY
sample.  Built on ``h2_spdy_inputs``.  ``python scripts/hostile/spdy_short_frames.py OUT.pcap``"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

_spec = importlib.util.spec_from_file_location("h2_spdy_inputs", Path(__file__).with_name("h2_spdy_inputs.py"))
H = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(H)

SHORT = [  # (direction, type, payload, the error the frame must carry)
    (0, 1, b"\0\0\0\3", "SYN_STREAM shorter than 10 bytes"),
    (0, 1, b"\0\0\0\5", "SYN_STREAM shorter than 10 bytes"),
    (0, 9, b"\0\0\0\3", "WINDOW_UPDATE shorter than 8 bytes"),
    (0, 3, b"\0\0\0\3", "RST_STREAM shorter than 8 bytes"),
    (1, 8, b"\0\0", "HEADERS shorter than 4 bytes"),
    (1, 2, b"\0", "SYN_REPLY shorter than 4 bytes"),
]
PORTS = (45000, 18330)
URLS = ["http://spdy.test/s1", "http://spdy.test/s3"]  # the two whole exchanges, both 200


def short_frames_connection() -> list[tuple[int, bytes]]:
    cc, sc = H.spdy_compressor(), H.spdy_compressor()
    events = [(0, H.spdy_syn_stream(1, H._request(cc, 1))), (1, H.spdy_syn_reply(1, H._reply(sc)) + H.spdy_data(1, b"ok"))]
    events += [(d, H.spdy_control(t, 0, payload)) for d, t, payload, _ in SHORT]
    events += [(0, H.spdy_syn_stream(3, H._request(cc, 3))), (1, H.spdy_syn_reply(3, H._reply(sc)) + H.spdy_data(3, b"ok"))]
    return events


def spdy_short_frames() -> bytes:
    packets = H.read_packets(H.SPDY_SAMPLE)
    packets += H.tcp_connection(short_frames_connection(), *PORTS, H._after(packets))
    return H.write_pcap(packets)


if __name__ == "__main__":
    Path(sys.argv[1]).write_bytes(spdy_short_frames())
