"""The scan's vectorised mode (analyzer/demux.py, ``_Vec``: the record chain walked in Python,
every other field read with numpy) gives exactly the pure-Python loop's Scan: every array
element by element and of the same typecode, the same group numbers, loads, workers, secrets
blocks, interfaces, statistics, and the same refusals (None).  Forced from the first record
(``vector=True``), handed over to part-way (the loop's checkpoint moved near the start) and in
chunks of a few hundred bytes (groups numbered across chunks), on every uncompressed sample
capture and on captures built here: IPv4 and IPv6 mixed, a 4-tuple seen on the slow path
before the fast one, VLAN tags, a TCP header the IP datagram does not hold, pcap in both byte
orders and in nanoseconds, pcapng with several interfaces, secrets and statistics blocks, and
the inputs only the reader takes (truncated, overrunning, snapped, implausible, fragments)."""
from __future__ import annotations

import struct
import subprocess
import sys
from array import array
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from fuzz.profiles import fuzz_settings
from wirefall.analyzer import demux
from wirefall.analyzer.demux import Scan, own_packets, scan

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_captures"
PLAIN = sorted(p for p in SAMPLES.rglob("*") if p.is_file() and p.name.endswith((".pcap", ".pcapng", ".cap")))


def _fields(sc: Scan | None):
    if sc is None:
        return None
    cols = {c: (getattr(sc, c).typecode, getattr(sc, c).tobytes()) for c in ("ts", "offset", "caplen", "origlen", "linktype", "interface", "group")}
    return (sc.format, [vars(i) for i in sc.interfaces], sc.interface_stats, cols, sc.secrets, sc.worker, sc.load)


def _modes(path, monkeypatch, n: int = 2) -> dict:
    """The scan in each mode: the loop; vectorised from the first record; the loop handing over
    at its first checkpoint (moved to 2000 bytes), in chunks of 700 bytes; vectorised in chunks
    of 150 bytes (about one record each); the loop reading the record heads by ``os.pread``
    (records far apart: ``demux.FAR``) from its first checkpoint, at 1000 bytes."""
    out = {"loop": scan(str(path), n, False, split=False), "vector": scan(str(path), n, True, split=False)}
    # the two halves walked at once (demux._pcap_split; pcap only, the others walk once), looped and vectorised
    out["split"] = scan(str(path), n, False, split=True)
    out["split vector"] = scan(str(path), n, True, split=True)
    with monkeypatch.context() as m:
        m.setattr(demux, "_FIRST_CHECK", 2000)
        m.setattr(demux, "_NP_LEFT", 0)
        m.setattr(demux, "_NP_LEFT_LOADED", 0)
        m.setattr(demux, "_CHUNK", 700)
        out["handed over"] = scan(str(path), n)
        m.setattr(demux, "_CHUNK", 150)
        out["small chunks"] = scan(str(path), n, True)
        out["split small chunks"] = scan(str(path), n, None, split=True)
        m.setattr(demux, "_DROP", 1000)
        m.setattr(demux, "FAR", 0)
        out["pread"] = scan(str(path), n, False)  # (the loop reading record heads by os.pread from its first checkpoint)
    return out


def _same_in_every_mode(path, monkeypatch, n: int = 2) -> Scan | None:
    modes = _modes(path, monkeypatch, n)
    want = _fields(modes["loop"])
    for mode, sc in modes.items():
        assert _fields(sc) == want, mode
    return modes["loop"]


@pytest.mark.parametrize("path", PLAIN, ids=[str(p.relative_to(SAMPLES)) for p in PLAIN])
def test_vectorised_scan_is_the_loops_on_every_sample(path, monkeypatch):
    _same_in_every_mode(path, monkeypatch)


SMALL = [p for p in PLAIN if p.stat().st_size < 300_000]


@fuzz_settings(60)
@given(st.data())
def test_mutated_captures_scan_alike_in_every_mode(data):
    """Sample captures with bytes changed, cut, inserted or the file truncated (hostile input
    built here): every mode gives the same Scan or the same refusal.  (A differential run of
    800 k such inputs found no difference; WIREFALL_FUZZ_PROFILE=long runs 3000 here.)"""
    import tempfile

    b = bytearray(data.draw(st.sampled_from(SMALL)).read_bytes())
    for _ in range(data.draw(st.integers(1, 6))):
        i = data.draw(st.integers(0, max(len(b) - 1, 0)))
        op = data.draw(st.sampled_from(["byte", "cut", "insert", "truncate"]))
        if op == "byte" and b:
            b[i] = data.draw(st.integers(0, 255))
        elif op == "cut":
            del b[i : i + data.draw(st.integers(1, 64))]
        elif op == "insert":
            b[i:i] = data.draw(st.binary(min_size=1, max_size=64))
        else:
            del b[max(i, 4) :]
    with tempfile.NamedTemporaryFile(suffix=".pcap") as f:
        f.write(b)
        f.flush()
        with pytest.MonkeyPatch.context() as mp:
            _same_in_every_mode(Path(f.name), mp)


# ------------------------------------------------------------------ captures built here

MAC = b"\x02\0\0\0\0\1\x02\0\0\0\0\2"


def _eth(payload: bytes, etype: int = 0x0800, vlan: bool = False) -> bytes:
    tag = struct.pack("!HH", 0x8100, 7) if vlan else b""
    return MAC + tag + struct.pack("!H", etype) + payload


def _tcp(sport: int, dport: int, data: bytes = b"", doff: int = 5) -> bytes:
    return struct.pack("!HHIIBBHHH", sport, dport, 1, 1, doff << 4, 0x18, 65535, 0, 0) + bytes(max(0, doff - 5) * 4) + data


def _ip4(src: int, dst: int, payload: bytes, proto: int = 6, opts: bytes = b"", total: int | None = None, frag: int = 0) -> bytes:
    tot = 20 + len(opts) + len(payload) if total is None else total
    return struct.pack("!BBHHHBBHII", 0x45 + len(opts) // 4, 0, tot, 1, frag, 64, proto, 0, src, dst) + opts + payload


def _ip6(src: bytes, dst: bytes, payload: bytes, nxt: int = 6) -> bytes:
    return struct.pack("!IHBB16s16s", 0x60000000, len(payload), nxt, 64, src, dst) + payload


def _udp(sport: int, dport: int, data: bytes = b"") -> bytes:
    return struct.pack("!HHHH", sport, dport, 8 + len(data), 0) + data


A, B, C = 0x0A000001, 0x0A000002, 0x0A000003
V6A, V6B = bytes(15) + b"\1", bytes(15) + b"\2"


def _mixed(k: int) -> list[bytes]:
    """One round of frames (``k``: which round, in the client ports)."""
    cp = 40000 + k
    return [
        _eth(_ip4(A, B, _tcp(cp, 443, b"x" * 30), opts=b"\x01\x01\x01\x00")),  # IP options: slow path first
        _eth(_ip6(V6A, V6B, _tcp(cp, 80, b"y" * 10)), 0x86DD),  # IPv6: slow path only
        _eth(_ip4(B, A, _tcp(443, cp, b"z" * 700))),  # the first 4-tuple's reply: fast path
        _eth(_ip4(A, C, _udp(5353, 53, b"q" * 20), proto=17)),  # UDP: worker 0's
        _eth(_ip4(A, B, _tcp(cp + 1000, 443))),  # a new 4-tuple on the fast path ...
        _eth(_ip4(B, A, _tcp(443, cp + 1000, b"v" * 50)), vlan=True),  # ... its reply VLAN-tagged: slow path
        _eth(_ip6(V6B, V6A, _tcp(80, cp, b"w" * 1300)), 0x86DD),
        _eth(_ip4(A, B, _tcp(cp, 443, b"r" * 5))),
        _eth(_ip4(A, B, _tcp(cp + 2000, 443), total=30)),  # the IP datagram ends inside the TCP header
        _eth(_ip4(A, B, _tcp(cp + 3000, 443, b"t" * 1000), total=0)),  # total length 0 (TSO): fast path
        _eth(b"\0\1\x08\0\6\4\0\1" + bytes(20), 0x0806),  # ARP
        _eth(_ip4(A, B, _tcp(cp + 4000, 443, b"s" * 8, doff=4))),  # a TCP header length below 20
        _eth(_ip4(A, B, _tcp(cp + 5000, 443, b"d" * 64), frag=0x4000)),  # DF: fast path
        _eth(_ip4(C, B, b"\0" * 30, proto=47)),  # GRE: not TCP
        MAC[:10],  # shorter than an Ethernet header
    ]


def _records(rounds: int = 6) -> list[tuple[float, bytes, int]]:
    out = []
    for k in range(rounds):
        for i, data in enumerate(_mixed(k)):
            out.append((1700000000 + k + i * 0.001, data, len(data)))
    out[7] = (out[7][0], out[7][1], len(out[7][1]) - 4)  # captured more than on the wire: taken as it is
    return out


def _pcap(path: Path, records, linktype: int = 1, endian: str = "<", nano: bool = False) -> Path:
    with open(path, "wb") as f:
        f.write(struct.pack(endian + "IHHiIII", 0xA1B23C4D if nano else 0xA1B2C3D4, 2, 4, 0, 0, 262144, linktype))
        for ts, data, origlen in records:
            frac = int(round((ts % 1) * (1e9 if nano else 1e6)))
            f.write(struct.pack(endian + "IIII", int(ts), frac, len(data), origlen) + data)
    return path


@pytest.mark.parametrize("endian,nano", [("<", False), (">", False), ("<", True)], ids=["little", "big", "nanoseconds"])
def test_mixed_ipv4_ipv6_slow_and_fast_paths(tmp_path, monkeypatch, endian, nano):
    """A 4-tuple on the slow path (IP options, a VLAN tag) before or after the fast one is one
    group in every mode, numbered where it first appears; IPv6 and UDP interleave."""
    p = _pcap(tmp_path / "mixed.pcap", _records(), endian=endian, nano=nano)
    sc = _same_in_every_mode(p, monkeypatch, n=3)
    assert sc is not None
    g = sc.group
    assert g[0] == g[2] == g[7] >= 0  # slow, fast, fast
    assert g[4] == g[5] >= 0 and g[4] != g[0]  # fast, slow (VLAN)
    assert g[1] == g[6] >= 0  # IPv6
    assert g[3] == g[8] == g[10] == g[11] == g[13] == g[14] == -1
    assert list(g[:15]) == [0, 1, 0, -1, 2, 2, 1, 0, -1, 3, -1, -1, 4, -1, -1]  # numbered by first appearance
    assert g[15] == 5 and g[17] == 5  # the next round's first 4-tuple: a new group


def test_other_link_type_takes_the_slow_path(tmp_path, monkeypatch):
    """Raw IP (link type 101): no packet on the fast path, the groups the loop's."""
    recs = [(1700000000 + i, data[14:], len(data) - 14) for i, (_, data, _) in enumerate(_records(2)) if len(data) > 14]
    sc = _same_in_every_mode(_pcap(tmp_path / "raw.pcap", recs, linktype=101), monkeypatch)
    assert sc is not None and max(sc.group) >= 0


def test_tiny_captures(tmp_path, monkeypatch):
    """Files shorter than a fast-path record: no records, one short record, one Ethernet frame
    too short for the fast path."""
    assert _same_in_every_mode(_pcap(tmp_path / "empty.pcap", []), monkeypatch) is not None
    assert _same_in_every_mode(_pcap(tmp_path / "one.pcap", [(1.5, b"abc", 3)]), monkeypatch) is not None
    sc = _same_in_every_mode(_pcap(tmp_path / "two.pcap", [(1.5, _eth(b"\0" * 20), 34), (2.0, b"", 0)]), monkeypatch)
    assert sc is not None and list(sc.group) == [-1, -1]


def _odd_pcaps(tmp_path: Path) -> dict[str, Path]:
    recs = _records(3)
    out = {}
    p = out["truncated"] = _pcap(tmp_path / "truncated.pcap", recs)
    with open(p, "ab") as f:
        f.write(bytes(9))  # the file ends inside a record header
    p = out["overrun"] = _pcap(tmp_path / "overrun.pcap", recs)
    with open(p, "ab") as f:
        f.write(struct.pack("<IIII", 1700000010, 0, 100, 100) + bytes(40))  # a record past the file's end
    snapped = list(recs)
    snapped[20] = (snapped[20][0], snapped[20][1], len(snapped[20][1]) + 1)  # captured less than on the wire
    out["snapped"] = _pcap(tmp_path / "snapped.pcap", snapped)
    p = out["implausible"] = _pcap(tmp_path / "implausible.pcap", recs)
    data = bytearray(p.read_bytes())
    at = 24 + sum(16 + len(d) for _, d, _ in recs[:25])
    struct.pack_into("<I", data, at + 8, 0x4000001)  # a captured length over 64 MiB
    p.write_bytes(bytes(data))
    frag = list(recs)
    frag[30:30] = [(1700000005.0, _eth(_ip4(A, B, _tcp(1, 2, b"f" * 16), frag=0x2000)), 70)]  # MF: a fragment
    frag[30] = (frag[30][0], frag[30][1], len(frag[30][1]))
    out["fragment"] = _pcap(tmp_path / "fragment.pcap", frag)
    return out


@pytest.mark.parametrize("what", ["truncated", "overrun", "snapped", "implausible", "fragment"])
def test_what_only_the_reader_takes_is_refused_in_every_mode(tmp_path, monkeypatch, what):
    p = _odd_pcaps(tmp_path)[what]
    modes = _modes(p, monkeypatch)
    assert all(sc is None for sc in modes.values()), {k: sc is None for k, sc in modes.items()}


# ------------------------------------------------------------------ pcapng


def _block(btype: int, body: bytes, e: str = "<") -> bytes:
    body += bytes(-len(body) % 4)
    return struct.pack(e + "II", btype, 12 + len(body)) + body + struct.pack(e + "I", 12 + len(body))


def _opt(code: int, val: bytes, e: str = "<") -> bytes:
    return struct.pack(e + "HH", code, len(val)) + val + bytes(-len(val) % 4)


def _shb(e: str = "<") -> bytes:
    return _block(0x0A0D0D0A, struct.pack(e + "IHHq", 0x1A2B3C4D, 1, 0, -1), e)


def _idb(linktype: int, e: str = "<", opts: bytes = b"") -> bytes:
    return _block(1, struct.pack(e + "HHI", linktype, 0, 262144) + (opts + struct.pack(e + "HH", 0, 0) if opts else b""), e)


def _epb(iid: int, ticks: int, data: bytes, e: str = "<", caplen: int | None = None, origlen: int | None = None) -> bytes:
    cap = len(data) if caplen is None else caplen
    orig = len(data) if origlen is None else origlen
    return _block(6, struct.pack(e + "IIIII", iid, ticks >> 32, ticks & 0xFFFFFFFF, cap, orig) + data, e)


def _pcapng(path: Path, e: str = "<", odd: str = "") -> Path:
    """Interface 0 Ethernet (microseconds); secrets and an unknown block among the packets;
    interface 1 (raw IP, if_tsresol 2^-20 and if_tsoffset 1000 s) described part-way, its packets
    after; an EPB whose captured length overruns its block (taken as the block holds); statistics
    at the end.  ``odd``: what makes it the reader's own."""
    frames = [d for k in range(3) for d in _mixed(k)]
    parts = [_shb(e), _idb(1, e)]
    t0 = 1700000000 * 10**6
    for i, d in enumerate(frames[:20]):
        parts.append(_epb(0, t0 + i * 1000, d, e))
        if i == 5:
            parts.append(_block(0x0A, struct.pack(e + "II", 0x544C534B, 11) + b"CLIENT_RAND", e))  # secrets
            parts.append(_block(0xBAD, b"skipped!", e))
    if odd == "interface not described yet":
        parts.append(_epb(1, t0, frames[0][14:], e))
    parts.append(_idb(101, e, _opt(9, b"\x94", e) + _opt(14, struct.pack(e + "q", 1000), e)))
    for i, d in enumerate(frames[20:]):
        if len(d) > 14:
            parts.append(_epb(1 if i % 3 else 0, (1700000000 << 20) + i * 12345, d[14:] if i % 3 else d, e))
    d = frames[2]
    parts.append(_epb(0, t0 + 10**7, d, e, caplen=len(d) + 100))  # (captured length cut to the block's)
    if odd == "time":
        parts.append(_epb(0, 0xFFFFFFFF << 32, frames[2], e))
    elif odd == "snapped":
        parts.append(_epb(0, t0, frames[2], e, origlen=len(frames[2]) + 1))
    elif odd == "second section":
        parts.append(_shb(e))
    elif odd == "block length":
        b = bytearray(_epb(0, t0, frames[2], e))
        struct.pack_into(e + "I", b, 4, len(b) - 2)
        parts.append(bytes(b))
    elif odd == "fragment":
        parts.append(_epb(0, t0, _eth(_ip4(A, B, _tcp(1, 2, b"f" * 16), frag=0x2000)), e))
    elif odd == "truncated":
        parts.append(_epb(0, t0, frames[2], e)[:-3])
    parts.append(_block(5, struct.pack(e + "III", 0, 0, 0) + _opt(4, struct.pack(e + "Q", 5), e) + struct.pack(e + "HH", 0, 0), e))
    path.write_bytes(b"".join(parts))
    return path


@pytest.mark.parametrize("e", ["<", ">"], ids=["little", "big"])
def test_pcapng_interfaces_secrets_statistics(tmp_path, monkeypatch, e):
    sc = _same_in_every_mode(_pcapng(tmp_path / "c.pcapng", e), monkeypatch, n=3)
    assert sc is not None
    assert [i.linktype for i in sc.interfaces] == [1, 101] and set(sc.interface) == {0, 1}
    assert [(at, t) for at, t, _ in sc.secrets] == [(6, 0x544C534B)] and len(sc.interface_stats) == 1
    assert sc.caplen[-1] == (sc.origlen[-1] + 3) & ~3  # (cut to its block, padding and all: the reader's)


@pytest.mark.parametrize("odd", ["interface not described yet", "time", "snapped", "second section", "block length", "fragment", "truncated"])
def test_pcapng_what_only_the_reader_takes_is_refused_in_every_mode(tmp_path, monkeypatch, odd):
    modes = _modes(_pcapng(tmp_path / "c.pcapng", odd=odd), monkeypatch)
    assert all(sc is None for sc in modes.values()), {k: sc is None for k, sc in modes.items()}


# ------------------------------------------------------------------ the rest


def test_own_packets_with_numpy_is_the_generators(monkeypatch):
    """own_packets takes numpy when it is loaded (past 65536 packets): the same indices."""
    import numpy  # noqa: F401

    sc = Scan("pcap", [])
    n = 70000
    sc.group = array("i", [max(-1, (i * 7919) % 23 - 3) for i in range(n)])  # groups 0 .. 19, and -1: worker 0's
    sc.worker = [(g * 5) % 3 for g in range(20)]
    with_np = [own_packets(sc, k) for k in range(3)]
    monkeypatch.delitem(sys.modules, "numpy")
    without = [own_packets(sc, k) for k in range(3)]
    assert with_np == without and all(a.typecode == "q" for a in with_np)
    assert sum(map(len, with_np)) == n


def test_a_small_capture_does_not_import_numpy():
    """The loop hands over only when the records left pay for ``import numpy``: a small capture
    is scanned without it (the default mode)."""
    code = ("import sys; from wirefall.analyzer.demux import scan; "
            f"assert scan({str(SAMPLES / 'http' / 'http1-nginx.pcap')!r}, 2) is not None; "
            "assert 'numpy' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_the_hand_over_estimate():
    """At a checkpoint: records so far x bytes left / bytes so far, against _NP_LEFT (or
    _NP_LEFT_LOADED with numpy loaded)."""
    import numpy  # noqa: F401

    walked = 4 << 20
    assert not demux._vectorise(False, 10**6, walked, 10**9)
    assert demux._vectorise(True, 0, 0, 0)
    assert not demux._vectorise(None, 100, walked, walked)  # (100 more)
    assert demux._vectorise(None, 3000, walked, 100 * walked)  # (300 000 more)


def test_split_walk_is_proved_by_the_other_half(tmp_path, monkeypatch):
    """The two-halves walk (demux._pcap_split) starts its second half where 32 records chain
    from the middle — found by looking, so a packet whose bytes are a chain of plausible
    records (hostile input, built here) can fool the search.  The first half's walk then
    does not land there: it walks on to the end itself, and the Scan is the one walk's; with
    the packet moved away, the split holds and gives the same Scan."""
    from wirefall.analyzer.demux import _resync

    fake = b"".join(struct.pack("<IIII", 1700000000, 1000 + i, 20, 20) + bytes(20) for i in range(40))
    before = _records(3)
    after = _records(3)
    for pad in range(0, 4000, 4):  # (the padding that puts the file's middle inside the fake chain's zeros)
        big = _eth(_ip4(A, B, _tcp(40999, 443, bytes(pad) + bytes(64) + fake)))
        recs = before + [(1700000001.5, big, len(big))] + after
        p = _pcap(tmp_path / "fake.pcap", recs)
        raw = p.read_bytes()
        mid = len(raw) // 2
        at = raw.find(fake)
        if at - 64 <= mid < at:
            break
    else:
        pytest.fail("no padding puts the middle before the fake chain")
    import mmap

    with open(p, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        assert _resync(mm, raw[:4], mid) == at  # (fooled: a boundary inside a packet)
    sc = _same_in_every_mode(p, monkeypatch)
    assert sc is not None and scan(str(p), 2, False, split=True).split is None  # (walked on here)
    # without the fake chain the other half is taken
    plain = _eth(_ip4(A, B, _tcp(40999, 443, bytes(2000))))
    q = _pcap(tmp_path / "plain.pcap", before + [(1700000001.5, plain, len(plain))] + after)
    assert _same_in_every_mode(q, monkeypatch) is not None and scan(str(q), 2, False, split=True).split is not None
