#!/usr/bin/env python3
"""Regenerate ``analyzer/fields/valuestrings.py``: the value strings tshark 4.0 accepts in a
display filter (``tcp.flags.syn == Set``, ``tls.handshake.type == "Client Hello"``), for the
integer and boolean fields of wirefall's registry, from ``tshark -G values``.

    .venv/bin/python scripts/gen_value_strings.py [--tshark /usr/bin/tshark] [--check]

How tshark 4.0 reads a name (epan/dfilter/semcheck.c, checked against tshark): an unquoted word
is first read as a number (booleans: also True/TRUE/False/FALSE), then looked up in the field's
value strings, case-insensitively, the first entry that matches winning; a quoted string is
looked up only.  A field registered more than once under one name (``tls.handshake.type``: the
SSLv2 and the TLS message types) reads an unquoted word with its last registration's strings,
a quoted one with its first registration's (``"Server Hello"`` is SSLv2's 4: tshark walks the
same-name list back to its head for a string).  A boolean field without strings takes
"True"/"False"; a field whose strings are ranges (``R`` lines) takes no string at all.
``--check`` only says whether the file is up to date (exit 1 if not).
"""
from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "analyzer" / "fields" / "valuestrings.py"


def blocks(values_text: str) -> dict[str, list[tuple[str, list]]]:
    """abbrev -> its registrations' strings in registration order, each (kind, entries):
    kind "V" (entries (string, value) in table order), "R" (ranges) or "T" ((true, false))."""
    out: dict[str, list[tuple[str, list]]] = {}
    prev: tuple[str, str] | None = None
    seen: set[int] = set()
    last = 0
    for line in values_text.splitlines():
        p = line.split("\t")
        if len(p) < 3 or p[0] not in ("V", "V64", "R", "T"):
            prev = None
            continue
        kind = "V" if p[0] in ("V", "V64") else p[0]
        name = p[1]
        regs = out.setdefault(name, [])
        if kind == "T":
            regs.append(("T", [(p[2], p[3] if len(p) > 3 else "")]))
            prev = None
            continue
        if kind == "R":
            if prev != (name, "R"):
                regs.append(("R", []))
            prev = (name, "R")
            continue
        try:
            value = int(p[2], 0)
        except ValueError:
            continue
        # a new registration: another field's lines came between, or the values start again (a
        # value seen already, below the one before: two same-name tables follow each other; a
        # table may list a value twice in a row, http3.settings.id's 7)
        if prev != (name, "V") or (value in seen and value < last):
            regs.append(("V", []))
            seen = set()
        seen.add(value)
        last = value
        regs[-1][1].append((p[3] if len(p) > 3 else "", value))
        prev = (name, "V")
    return out


def ascii_lower(s: str) -> str:
    """``s`` with A-Z lowered only (glib's g_ascii_strcasecmp, which tshark compares with)."""
    return s.translate(_LOWER)


_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def table(entries: list) -> dict[str, int]:
    """Lower-cased string -> value, the first entry of a string winning (tshark's scan)."""
    t: dict[str, int] = {}
    for s, v in entries:
        t.setdefault(ascii_lower(s), v)
    return t


def tshark_names(fields_text: str) -> set[str]:
    """Every protocol and field name of ``tshark -G fields``."""
    out = set()
    for line in fields_text.splitlines():
        p = line.split("\t")
        if p[0] in ("P", "F") and len(p) > 2:
            out.add(p[2])
    return out


def generate(values_text: str, version: str, names: set[str] | frozenset[str] = frozenset()) -> str:
    sys.path.insert(0, str(ROOT.parent))
    from wirefall.analyzer import fields as F
    from wirefall.analyzer.fields import types as T

    regs = blocks(values_text)
    unquoted: dict[str, dict[str, int]] = {}
    quoted: dict[str, dict[str, int]] = {}
    booleans: dict[str, tuple[str, str]] = {}
    ranges: list[str] = []
    for name in sorted(F.FIELDS):
        f = F.FIELDS[name]
        if f.type not in (T.UINT, T.INT, T.BOOL) or name not in regs:
            continue
        rs = regs[name]
        if f.type == T.BOOL:
            t = [r for r in rs if r[0] == "T"]
            if t:
                booleans[name] = t[0][1][0]  # (a boolean field's strings: its first registration's)
            continue
        first, last = rs[0], rs[-1]
        if last[0] == "R":
            ranges.append(name)
        elif last[0] == "V":
            unquoted[name] = table(last[1])
        if first is not last:
            if first[0] == "V" and table(first[1]) != unquoted.get(name):
                quoted[name] = table(first[1])
            elif first[0] == "R":
                quoted[name] = {}
    lines = [
        '"""Wireshark\'s value strings for wirefall\'s integer and boolean filter fields: generated by',
        "scripts/gen_value_strings.py from `tshark -G values`; do not edit by hand.",
        f"({version.rstrip('.')})",
        "",
        "``UNQUOTED[field]``: lower-cased string -> value, for a name written without quotes (tshark's",
        "last registration of the field name); ``QUOTED[field]``: the same for a quoted string where it",
        "differs (tshark's first registration); ``BOOLEANS[field]``: a boolean's (true, false) strings",
        '(others take "True"/"False"); ``RANGES``: fields whose strings are ranges (tshark takes no',
        'string for them)."""',
        "from __future__ import annotations",
        "",
        "# fmt: off",
    ]
    # a table several fields share (Wireshark's one value_string behind ip.proto and ipv6.nxt, …)
    # is written once, named, and the fields refer to it
    uses: dict[tuple, int] = {}
    for t in (*unquoted.values(), *quoted.values()):
        uses[tuple(t.items())] = uses.get(tuple(t.items()), 0) + 1
    shared = {k: f"_SHARED_{i}" for i, k in enumerate(k for k, n in uses.items() if n > 1 and k)}
    for k, ref in shared.items():
        lines.append(f"{ref}: dict[str, int] = {{")
        lines += [f"    {n!r}: {v!r}," for n, v in k]
        lines += ["}", ""]

    def entries(tables: dict[str, dict[str, int]]) -> None:
        for name, t in tables.items():
            ref = shared.get(tuple(t.items()))
            if ref is not None:
                lines.append(f"    {name!r}: {ref},")
                continue
            lines.append(f"    {name!r}: {{")
            lines.extend(f"        {k!r}: {v!r}," for k, v in t.items())
            lines.append("    },")

    lines.append("UNQUOTED: dict[str, dict[str, int]] = {")
    entries(unquoted)
    lines += ["}", "", "QUOTED: dict[str, dict[str, int]] = {"]
    entries(quoted)
    lines += ["}", "", "BOOLEANS: dict[str, tuple[str, str]] = {"]
    lines += [f"    {name!r}: {tf!r}," for name, tf in booleans.items()]
    # an unquoted word that is a tshark field or protocol name is that field, not a value string
    # (ip.proto == tcp: "ip.proto and tcp are not of compatible types")
    words = {k for t in unquoted.values() for k in t} | {ascii_lower(x) for tf in booleans.values() for x in tf} | {"true", "false"}
    fieldlike = sorted(n for n in names if n in words)
    lines += ["}", "", f"RANGES: frozenset[str] = frozenset({{{', '.join(repr(n) for n in ranges)}}})", "",
              "# value strings (lower-cased) that tshark reads as a field when written unquoted",
              f"FIELD_NAMES: frozenset[str] = frozenset({{{', '.join(repr(n) for n in fieldlike)}}})", ""]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tshark", default="tshark")
    ap.add_argument("--check", action="store_true", help="exit 1 if the generated file is out of date")
    a = ap.parse_args()
    values = subprocess.run([a.tshark, "-G", "values"], capture_output=True, text=True, errors="replace", check=True).stdout
    ver = subprocess.run([a.tshark, "--version"], capture_output=True, text=True, check=True).stdout.splitlines()[0]
    fields = subprocess.run([a.tshark, "-G", "fields"], capture_output=True, text=True, errors="replace", check=True).stdout
    text = generate(values, ver.strip(), tshark_names(fields))
    if a.check:
        same = OUT.exists() and OUT.read_text() == text
        print("up to date" if same else f"{OUT} is out of date")
        return 0 if same else 1
    OUT.write_text(text)
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
