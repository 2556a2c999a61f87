"""Bad inputs for ``wirefall batch`` (tests/test_batch.py): each is a file the batch must turn
into a row — of errors.parquet, or of pages.parquet with a warning — without stopping.
Nothing here is committed as a blob.

    .venv/bin/python scripts/hostile/batch_inputs.py OUTDIR   # writes them all
"""
from __future__ import annotations

import struct
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HTTP1 = ROOT / "sample_captures" / "http" / "http1-nginx.pcap"  # cleartext HTTP/1.1 (nginx, curl)


def not_a_capture() -> bytes:
    """Text named like a capture: ``analyze`` refuses it before a packet (CaptureError)."""
    return b"this is a shopping list, not a capture\n" * 40


def cut_capture(src: Path = HTTP1, keep_records: int = 40) -> bytes:
    """A real cleartext HTTP/1.1 capture (pcap) cut inside its record ``keep_records + 1``: the
    exchanges the first records completed are whole, the capture ends with a truncation warning."""
    data = src.read_bytes()
    magic = data[:4]
    endian = "<" if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    off = 24
    for _ in range(keep_records):
        incl = struct.unpack(endian + "I", data[off + 8: off + 12])[0]
        off += 16 + incl
        if off >= len(data):
            raise ValueError(f"{src} has fewer than {keep_records} records")
    incl = struct.unpack(endian + "I", data[off + 8: off + 12])[0]
    return data[: off + 16 + max(1, incl // 2)]  # the next record's header and half its data


ALL = {"not-a-capture.pcap": not_a_capture, "cut-http1.pcap": cut_capture}


if __name__ == "__main__":
    out = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    out.mkdir(parents=True, exist_ok=True)
    for name, fn in ALL.items():
        (out / name).write_bytes(fn())
        print(out / name)
