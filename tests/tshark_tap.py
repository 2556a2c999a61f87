"""Many display filters through tshark in one pass (tests/tshark_filters.lua: one Listener per
filter, evaluated as ``-Y`` is), and the same filters through wirefall, for the tests that
compare them (test_filter*, test_quic_filters22)."""
from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

LUA = Path(__file__).with_name("tshark_filters.lua")


def decode_args(an) -> list[str]:
    """The decode-as ports and preferences oracle/crosscheck.py gives tshark for this capture."""
    from wirefall.oracle.crosscheck import PROTOCOLS

    args: list[str] = []
    for spec in PROTOCOLS.values():
        for a, b in zip(*[iter(list(spec.decode_as(an)) + list(spec.args))] * 2, strict=False):
            if not any(args[i] == a and args[i + 1] == b for i in range(0, len(args), 2)):
                args += [a, b]
    return args


def tap(cap: Path | str, exprs: list[str], keys: Path | str | None = None, extra: list[str] | tuple[str, ...] = ()) -> dict[str, list[int] | str]:
    """expression -> the packet numbers tshark selects (each once: with ``-2`` a tap may see a
    packet in both passes), or its error text."""
    with tempfile.TemporaryDirectory() as d:
        flt, out = Path(d) / "filters.txt", Path(d) / "out.txt"
        flt.write_text("\n".join(exprs) + "\n")
        cmd = ["tshark", "-n", "-q", "-r", str(cap), "-X", f"lua_script:{LUA}", *extra]
        if keys:
            cmd += ["-o", f"tls.keylog_file:{keys}"]
        subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=True,
                       env={**os.environ, "WF_FILTERS": str(flt), "WF_OUT": str(out)})
        res: dict[str, list[int] | str] = {e: [] for e in exprs}
        for line in out.read_text().splitlines():
            i, _, rest = line.partition(" ")
            e = exprs[int(i) - 1]
            v = res[e]
            if rest.startswith("ERROR"):
                res[e] = rest
            elif isinstance(v, list) and int(rest) not in v:
                v.append(int(rest))
    return res


def wirefall_packets(an, cap: Path | str, expr: str) -> list[int]:
    """The packets ``wirefall packets -Y expr`` selects (analyzer.filter.filter_packets)."""
    from wirefall.analyzer.capture import PacketSource
    from wirefall.analyzer.filter import filter_packets

    src = PacketSource(str(cap))
    try:
        return list(filter_packets(an, src, expr))
    finally:
        src.close()


def assert_same_packets(name: str, cases: list[tuple[str, bool]], theirs: dict, mine) -> None:
    """Each (expression, must select something in tshark) of ``cases`` selects tshark's packets
    (``theirs``: ``tap``'s result) in wirefall (``mine(expr)``)."""
    wrong = []
    for e, nonempty in cases:
        t = theirs[e]
        assert not isinstance(t, str), f"{name}: tshark rejects {e!r}: {t}"
        if nonempty:
            assert t, f"{name}: {e!r} selects nothing in tshark: the comparison would prove little"
        got = mine(e)
        if got != sorted(t):
            wrong.append(f"{e!r}: tshark {len(t)}, wirefall {len(got)}; only wirefall {sorted(set(got) - set(t))[:10]}, "
                         f"only tshark {sorted(set(t) - set(got))[:10]}")
    assert not wrong, f"{name}: {len(wrong)} of {len(cases)} filters disagree with tshark:\n" + "\n".join(wrong)
