"""The field-value oracle the filter-field tests share (tests/test_filter_fields28.py, 29):
tshark's values of display-filter fields, every occurrence on every packet, against wirefall's
(``Field.get`` on each packet), and the captures they name; and tshark's expert items per
packet (``tshark_expert_items``: tests/test_expert.py, tests/test_tcp_diff29.py)."""
from __future__ import annotations

import collections
import gzip
import re
import subprocess
from pathlib import Path

import pytest

from wirefall.analyzer.capture import PacketSource
from wirefall.analyzer.fields import lookup
from wirefall.analyzer.fields.packet import PacketContext, PacketView

ROOT = Path(__file__).resolve().parents[1]
S = ROOT / "sample_captures"
SHARED = ROOT.parent / "shared" / "captures"
OOO = ("-o", "tcp.reassemble_out_of_order:TRUE")


def capture_file(spec: str, tmp: Path) -> Path:
    """``sample:REL`` (sample_captures/), ``shared:REL`` (../shared/captures) or ``shared-gz:REL``
    (decompressed once into ``tmp``); skips the test when the file is absent."""
    kind, _, rel = spec.partition(":")
    path = S / rel if kind == "sample" else SHARED / rel
    if not path.exists():
        pytest.skip(f"{rel} absent")
    if kind == "shared-gz":
        out = tmp / path.name.removesuffix(".gz")
        if not out.exists():
            out.write_bytes(gzip.decompress(path.read_bytes()))
        return out
    return path


def tshark_values(cap: Path, keys: Path | None, names: tuple[str, ...], bytes_fields=frozenset(), none_fields=frozenset(),
                  ooo: bool = False) -> dict[int, dict[str, list]]:
    """packet -> field -> its values, as ``tshark -T fields -E occurrence=a`` prints them: integers,
    bytes fields as hex ("" where tshark prints <MISSING>: an empty value), a field of no value
    (``none_fields``) True per occurrence; ``ooo``: with out-of-order TCP reassembly on."""
    cmd = ["tshark", "-n", "-r", str(cap), *(OOO if ooo else ()), "-T", "fields", "-E", "occurrence=a", "-e", "frame.number"]
    cmd += [x for f in names for x in ("-e", f)]
    if keys:
        cmd += ["-o", f"tls.keylog_file:{keys}"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    out: dict[int, dict[str, list]] = {}
    for line in r.stdout.splitlines():
        c = line.split("\t")
        vals: dict[str, list] = {}
        for f, x in zip(names, c[1:], strict=True):
            if not x:
                continue
            if f in bytes_fields:
                vals[f] = ["" if v == "<MISSING>" else v for v in x.split(",")]
            elif f in none_fields:
                vals[f] = [True] * len(x.split(","))
            else:
                vals[f] = [int(v, 0) for v in x.split(",")]
        if vals:
            out[int(c[0])] = vals
    return out


def wirefall_values(an, cap: Path, names: tuple[str, ...], bytes_fields=frozenset()) -> dict[int, dict[str, list]]:
    """The same map from wirefall's fields (``Field.get`` on each packet; bytes as hex)."""
    fields = {f: lookup(f) for f in names}
    out: dict[int, dict[str, list]] = {}
    src = PacketSource(str(cap))
    try:
        ctx = PacketContext(an, src)
        for n in range(1, an.packets + 1):
            pv = PacketView(ctx, n)
            vals = {}
            for f, fld in fields.items():
                assert fld is not None, f
                v = fld.get(pv)
                if v:
                    vals[f] = [x.hex() for x in v] if f in bytes_fields else v
            if vals:
                out[n] = vals
    finally:
        src.close()
    return out


def tshark_expert_items(cmd: list[str], compared: re.Pattern) -> dict[int, collections.Counter]:
    """packet -> Counter of its expert items ``(message, severity, group)`` whose message
    ``compared`` matches, as ``cmd`` (``tshark -r CAP`` and its options) prints them with ``-T
    fields`` (every occurrence of each item field, in order)."""
    out = subprocess.run(cmd + ["-T", "fields", "-E", "separator=/t", "-E", "occurrence=a", "-E", "aggregator=\x1f",
                                "-e", "frame.number", "-e", "_ws.expert.message", "-e", "_ws.expert.severity", "-e", "_ws.expert.group"],
                         capture_output=True, text=True, timeout=600, check=True).stdout
    res: dict[int, collections.Counter] = collections.defaultdict(collections.Counter)
    for line in out.splitlines():
        parts = line.split("\t")
        if len(parts) < 4 or not parts[1]:
            continue
        for m, s, g in zip(parts[1].split("\x1f"), parts[2].split("\x1f"), parts[3].split("\x1f"), strict=False):
            if compared.search(m):
                res[int(parts[0])][(m, int(s), int(g))] += 1
    return res
