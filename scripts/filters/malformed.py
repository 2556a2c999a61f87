"""Display filters with malformed numbers and operators, to compare wirefall's filter compiler
with tshark 4.0's (``tests/test_truth_s7.py``): every expression tshark rejects wirefall must
reject with a clear error (exit 2, no traceback), every one it accepts wirefall must accept.

    python scripts/filters/malformed.py            # one expression a line
    python scripts/filters/malformed.py --compare CAPTURE
                                                   # tshark (one pass, tests/tshark_filters.lua)
                                                   # against wirefall's compile_filter("packets")

The list is the product of a few fields of each type (integers, a boolean, a float-valued
time, an address, a string) with literals that are numbers written wrongly (signs repeated,
a sign or a base prefix alone, digits outside the base, exponents, separators, Unicode digits)
and operators misspelt, plus sets, ranges and arithmetic written wrongly.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LUA = ROOT / "tests" / "tshark_filters.lua"

INT_FIELDS = ("frame.len", "tcp.port", "ip.ttl", "tcp.flags.syn")
NUMBERS = ("1", "-1", "+1", "--1", "---1", "-+1", "+-1", "++1", "1-", "1+", "-", "+", "0x", "0X1", "0x1g", "-0x1", "0x-1",
           "0b", "0b101", "0b2", "08", "07", "0o7", "1e5", "1E5", "1.5", "1.", ".5", "1..2", "1_000", "1,000", "\u0663",
           "00", "-0", "0x1F", "1a", "a1", "1-1", "1--1", "1 1", "''", "'a'", "'ab'", "'\\x41'", "\"1\"", "1/2", "1%",
           "99999999999999999999999", "-99999999999999999999999", "True", "true", "1.0e", "0x1.8")
OPERATORS = ("==", "!=", "===", "!==", "~=", "<", ">", "<=", ">=", "=", "=>", "=<", "<>", "=!", "!===", "====", "== ==",
             "eq", "ne", "lt", "gt", "le", "ge", "EQ", "any_eq", "all_ne", "all_eq", "any_ne", "&", "& &", "bitwise_and",
             "contains", "matches", "~", "in")
FLOAT_FIELDS = ("frame.time_delta", "frame.time_relative")
FLOATS = ("1", "1.5", "-1.5", "--1", "1e-3", "1e", ".5", "5.", "1..5", "0x10", "1.5.5", "nan", "inf", "-inf", "1,5")
OTHER = (
    "frame.len", "frame.len ==", "== 1", "frame.len == 1 ==", "frame.len in {1..3}", "frame.len in {1 .. 3}",
    "frame.len in {1...3}", "frame.len in {1..}", "frame.len in {..3}", "frame.len in {}", "frame.len in {1,2}",
    "frame.len in {1 2}", "frame.len in {1,,2}", "frame.len in {-1..1}", "frame.len in {--1}", "frame.len in {1..2..3}",
    "frame.len in {0x10..0x20}", "frame.len in {08}", "frame.len + 1 == 2", "frame.len - 1 == 2", "frame.len -1 == 2",
    "frame.len--1 == 2", "frame.len - -1 == 2", "frame.len == 1 - -1", "frame.len == - 1", "frame.len == -(1)",
    "frame.len == (1)", "frame.len * 2 == 4", "frame.len / 0 == 1", "frame.len % 2 == 0", "frame.len ** 2 == 4",
    "frame.len == 1 +", "frame.len + == 1", "-frame.len == -60", "- frame.len == -60", "--frame.len == 60",
    "frame.len == {1}", "frame.len[0] == 1", "frame.len[0:1] == 01", "frame.len == 1 and", "and frame.len == 1",
    "frame.len == 1 && && frame.len == 2", "frame.len == 1 || frame.len == 2", "frame.len == 1 ^^ frame.len == 2",
    "frame.len == 1 xor frame.len == 2", "not frame.len == 1", "! frame.len == 1", "!! frame.len == 1",
    "not not frame.len == 1", "not", "!", "()", "(frame.len == 1", "frame.len == 1)", "len(frame.len) == 1",
    "ip.addr == 10.0.0.1", "ip.addr == 10.0.0", "ip.addr == 10.0.0.256", "ip.addr == 10.0.0.1/33", "ip.addr == 10.0.0.1/",
    "ip.addr == -10.0.0.1", "ip.addr == 10..0.1", "ip.addr == 0x0a000001", "ip.addr == 167772161", "ip.ttl == 1.5",
    "ip.ttl == -1", "ip.ttl == 256", "ip.ttl == 0xff", "ip.ttl == 0x100", "tcp.port == 65536", "tcp.port == -0",
    "tcp.flags.syn == 2", "tcp.flags.syn == -1", "tcp.flags.syn == TRUE", "tcp.flags.syn == yes",
    "http.request.uri == 1", "http.request.uri == --1", "http.request.uri == \"---1\"", "http.request.uri contains 1",
    "http.request.uri matches 1", "frame.len contains 1", "frame.len matches \"1\"",
)


# where wirefall knowingly differs from tshark 4.0 (tests/test_truth_s7.py asserts that these,
# and only these, differ): expression -> why
KNOWN = {
    "frame.len == 1 ^^ frame.len == 2": "xor / ^^: Wireshark 4.2's, kept (tests/test_filter.py); tshark 4.0 lacks it",
    "frame.len == 1 xor frame.len == 2": "xor / ^^: Wireshark 4.2's, kept (tests/test_filter.py); tshark 4.0 lacks it",
}


def expressions() -> list[str]:
    out: list[str] = []
    for f in INT_FIELDS + ("http2.streamid",):
        for n in NUMBERS:
            out.append(f"{f} == {n}")
    for op in OPERATORS:
        out.append(f"frame.len {op} 1")
    for f in FLOAT_FIELDS:
        for n in FLOATS:
            out.append(f"{f} > {n}")
    out.extend(OTHER)
    seen: set[str] = set()
    return [e for e in out if not (e in seen or seen.add(e))]  # type: ignore[func-returns-value]


def tshark_verdicts(exprs: list[str], capture: str | Path) -> dict[str, str | None]:
    """{expression: None (tshark accepts it) or tshark's message} in one tshark pass."""
    with tempfile.TemporaryDirectory() as d:
        fl, out = Path(d) / "filters.txt", Path(d) / "out.txt"
        fl.write_text("".join(e + "\n" for e in exprs))
        env = dict(os.environ, WF_FILTERS=str(fl), WF_OUT=str(out), LC_ALL="C")
        subprocess.run(["tshark", "-r", str(capture), "-X", f"lua_script:{LUA}", "-q", "-c", "1"], env=env,
                       capture_output=True, timeout=300, check=False)
        res: dict[str, str | None] = {e: None for e in exprs}
        for ln in out.read_text().splitlines():
            i, _, rest = ln.partition(" ")
            if rest.startswith("ERROR "):
                res[exprs[int(i) - 1]] = rest[6:]
        return res


def wirefall_verdicts(exprs: list[str], scope: str = "packets") -> dict[str, str | None]:
    from wirefall.analyzer.filter import FilterError, compile_filter

    res: dict[str, str | None] = {}
    for e in exprs:
        try:
            compile_filter(e, scope)
            res[e] = None
        except FilterError as err:
            res[e] = err.message
    return res


def main(argv: list[str]) -> int:
    exprs = expressions()
    if len(argv) > 2 and argv[1] == "--compare":
        ts, wf = tshark_verdicts(exprs, argv[2]), wirefall_verdicts(exprs)
        bad = 0
        for e in exprs:
            if (ts[e] is None) != (wf[e] is None) and e not in KNOWN:
                bad += 1
                print(f"{'tshark rejects' if ts[e] else 'tshark accepts'}, wirefall {'rejects' if wf[e] else 'accepts'}: "
                      f"{e!r}  | tshark: {ts[e]} | wirefall: {wf[e]}")
        print(f"{bad} of {len(exprs)} differ")
        return 1 if bad else 0
    for e in exprs:
        print(e)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
