"""The field tables of docs/FILTERS.md, made from the registry:
``python -m analyzer.fields.doc`` prints them (tests/test_filter.py checks that the document
lists every field)."""
from __future__ import annotations

from . import PROTOCOLS
from .types import FT_NAMES


def tables() -> str:
    out = []
    for p in PROTOCOLS.values():
        out.append(f"### {p.name} — {p.desc}\n")
        out.append("| field | type (tshark) | meaning | differences from tshark |")
        out.append("| --- | --- | --- | --- |")
        for f in [p.present, *p.fields]:
            desc = f.desc.replace("|", "\\|")
            out.append(f"| `{f.name}` | {f.type} ({FT_NAMES[f.type]}) | {desc} | {f.note.replace('|', chr(92) + '|')} |")
        for prefix in p.prefixes:
            out.append(f"| `{prefix}<name>` | string (FT_STRING) | any decoded header: `_` for `-` (content_type); "
                       f"status, content_length, age, max_forwards are numbers | tshark knows a fixed list of names; wirefall takes any |")
        for prefix, why in p.unsupported_prefixes.items():
            out.append(f"| `{prefix}.*` | — | {why} | |")
        out.append("")
    return "\n".join(out)


if __name__ == "__main__":
    print(tables())
