"""Hostile capture files for red-team round 20 (capture reader and ``packets -w``).

Built from raw bytes with the packet builders of ``redteam18b_inputs`` (Ethernet/IPv4/TCP,
HTTP/1.1 exchanges with correct checksums); no committed blobs.

- A. pcapng with more than one section: a little-endian section (µs interface) then a
  big-endian one (ns interface), and one whose second section declares a raw-IP interface 0
  and puts its packets on interface 1 (each section's interface ids count from 0 again);
- B. a pcapng whose later section header has a bad byte-order magic, after a whole exchange;
- C. zstd with skippable frames (0x184D2A50-0x184D2A5F): first, between two frames, at the
  end (the seekable format's seek table), before every frame as pzstd writes them, and one
  whose declared length runs past the end of the file;
- D. a decompression bomb at a given number of empty records per compressed byte (random
  padding that does not compress, then ``per_byte`` × the file's size empty records).

    python scripts/hostile/capture20_inputs.py OUTDIR      # writes every input, lists them
"""
from __future__ import annotations

import lzma
import os
import struct
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from redteam18b_inputs import (  # noqa: E402
    T0,
    _block,
    conversation,
    epbs_us,
    http1_request,
    http1_response,
    idb,
    many_normal_packets,
    normal_packets,
    pcap,
    shb,
    udp_frame,
    write,
)

SECOND_PATH = "/redteam20/second-section"


# ------------------------------------------------------------------ A, B: pcapng sections

def be_block(btype: int, body: bytes) -> bytes:
    body += b"\0" * (-len(body) % 4)
    n = len(body) + 12
    return struct.pack(">II", btype, n) + body + struct.pack(">I", n)


def be_shb() -> bytes:
    return be_block(0x0A0D0D0A, struct.pack(">IHHq", 0x1A2B3C4D, 1, 0, -1))


def _be_opt(code: int, value: bytes) -> bytes:
    return struct.pack(">HH", code, len(value)) + value + b"\0" * (-len(value) % 4)


def be_idb(linktype: int = 1, tsresol: int | None = None, name: str | None = None) -> bytes:
    opts = b""
    if name is not None:
        opts += _be_opt(2, name.encode())
    if tsresol is not None:
        opts += _be_opt(9, bytes([tsresol]))
    if opts:
        opts += _be_opt(0, b"")
    return be_block(1, struct.pack(">HHI", linktype, 0, 262144) + opts)


def be_epb(iid: int, ticks: int, data: bytes) -> bytes:
    return be_block(6, struct.pack(">IIIII", iid, ticks >> 32, ticks & 0xFFFFFFFF, len(data), len(data)) + data)


def be_isb(iid: int, received: int, dropped: int) -> bytes:
    opts = _be_opt(4, struct.pack(">Q", received)) + _be_opt(5, struct.pack(">Q", dropped)) + _be_opt(0, b"")
    return be_block(5, struct.pack(">III", iid, 0, 0) + opts)


def second_packets() -> list[tuple[float, bytes]]:
    """The second section's exchange: its own connection (client port 42000), 5 s later."""
    return conversation([(http1_request(SECOND_PATH), http1_response())], cport=42000, t=T0 + 5)[0]


def two_sections(out: str | Path) -> Path:
    """Section 1 little-endian, interface 0 in µs; section 2 big-endian, interface 0 in ns
    (its own interface 0, the file's interface 1), with an Interface Statistics Block."""
    ns = b"".join(be_epb(0, int(round(ts * 1e9)), d) for ts, d in second_packets())
    return write(out, shb() + idb(name="le0") + epbs_us(0, normal_packets()) + be_shb() + be_idb(tsresol=9, name="be0") + ns
                 + be_isb(0, 10, 3))


def two_sections_iface1(out: str | Path) -> Path:
    """As ``two_sections``, but section 2 declares a raw-IP interface 0 and an Ethernet ns
    interface 1 and puts its packets on 1 (the file's interface 2)."""
    ns = b"".join(be_epb(1, int(round(ts * 1e9)), d) for ts, d in second_packets())
    return write(out, shb() + idb(name="le0") + epbs_us(0, normal_packets()) + be_shb() + be_idb(linktype=101, name="raw")
                 + be_idb(tsresol=9, name="be1") + ns)


def mid_bad_bom(out: str | Path) -> Path:
    """One whole exchange, then a section header with byte-order magic 0xDEADBEEF, then more packets."""
    bad = _block(0x0A0D0D0A, struct.pack("<IHHq", 0xDEADBEEF, 1, 0, -1))
    return write(out, shb() + idb() + epbs_us(0, normal_packets()) + bad + epbs_us(0, second_packets()))


def bad_bom_at_start(out: str | Path) -> Path:
    """The first section header has the bad byte-order magic: not a capture (exit 2)."""
    bad = _block(0x0A0D0D0A, struct.pack("<IHHq", 0xDEADBEEF, 1, 0, -1))
    return write(out, bad + idb() + epbs_us(0, normal_packets()))


# ------------------------------------------------------------------ C: zstd skippable frames

def skippable(length: int, magic: int = 0x184D2A50, content: bytes | None = None) -> bytes:
    """A skippable frame declaring ``length`` bytes of user data (``content``, or zeros)."""
    data = bytes(length) if content is None else content
    return struct.pack("<II", magic, length) + data


def zstd_frame(data: bytes) -> bytes:
    import zstandard

    return zstandard.ZstdCompressor(level=3, write_checksum=True).compress(data)


def six_exchanges() -> bytes:
    return pcap(many_normal_packets(6))


def zstd_skippable_inputs(out: str | Path) -> dict[str, Path]:
    """Plain pcap (``plain6.pcap``) and zstd files with skippable frames around its frames."""
    out = Path(out)
    data = six_exchanges()
    half = len(data) // 2
    a, b = zstd_frame(data[:half]), zstd_frame(data[half:])
    files = {
        "plain6": write(out / "plain6.pcap", data),
        "skip_first": write(out / "skip_first.pcap.zst", skippable(8) + zstd_frame(data)),
        "skip_between": write(out / "skip_between.pcap.zst", a + skippable(8, 0x184D2A5F) + b),
        # the seekable format's seek table: a skippable frame at the end
        "skip_last": write(out / "skip_last.pcap.zst", a + b + skippable(21, 0x184D2A5E, b"\x01" * 12 + b"\0" * 5 + b"\xb1\xea\x92\x8f")),
        # as pzstd writes: each frame after a 4-byte skippable frame holding its size
        "pzstd_like": write(out / "pzstd_like.pcap.zst", skippable(4, 0x184D2A50, struct.pack("<I", len(a))) + a
                            + skippable(4, 0x184D2A50, struct.pack("<I", len(b))) + b),
        # a skippable frame of many declared bytes, all present (linear: skipped as zstd does)
        "skip_big": write(out / "skip_big.pcap.zst", a + skippable(1 << 20, 0x184D2A53) + b),
        # declared 4 GiB - 1 after the first frame: the file ends inside it (zstd -dc: an error, the first frame written)
        "skip_cut": write(out / "skip_cut.pcap.zst", a + struct.pack("<II", 0x184D2A50, 0xFFFFFFFF) + b"\0" * 100),
        # only a skippable frame: no capture in it
        "skip_only": write(out / "skip_only.pcap.zst", skippable(16)),
    }
    return files


# ------------------------------------------------------------------ D: records-per-byte bombs

def records_bomb(out: str | Path, size: int, per_byte: int) -> Path:
    """An xz capture of about ``size`` bytes: the normal exchange, ``size`` bytes of random
    payload in UDP packets (it does not compress: the file is this big), then ``per_byte`` ×
    ``size`` empty records (16 zero bytes each, which xz shrinks to almost nothing)."""
    pad = os.urandom(max(0, size - 2048))
    pk = normal_packets()
    for i in range(0, len(pad), 60000):
        pk.append((T0 + 1, udp_frame(b"\x0a\0\0\3", b"\x0a\0\0\4", 6000, 6001, pad[i : i + 60000])))
    c = lzma.LZMACompressor()
    parts = [c.compress(pcap(pk))]
    n = per_byte * size
    block = bytes(16 << 16)
    for _ in range(n >> 16):
        parts.append(c.compress(block))
    parts.append(c.compress(bytes(16 * (n & 0xFFFF))))
    parts.append(c.flush())
    return write(out, b"".join(parts))


def all_inputs(out: str | Path) -> dict[str, Path]:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    files = {
        "two_sections": two_sections(out / "two_sections.pcapng"),
        "two_sections_iface1": two_sections_iface1(out / "two_sections_iface1.pcapng"),
        "mid_bad_bom": mid_bad_bom(out / "mid_bad_bom.pcapng"),
        "bad_bom_at_start": bad_bom_at_start(out / "bad_bom_at_start.pcapng"),
    }
    files.update(zstd_skippable_inputs(out))
    files["bomb_4_per_byte"] = records_bomb(out / "bomb_4_per_byte.pcap.xz", 256 << 10, 4)
    return files


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    for name, path in all_inputs(argv[1]).items():
        print(f"{name}\t{path}\t{path.stat().st_size}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
