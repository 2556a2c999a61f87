"""The field tables of docs/FILTERS.md, made from the registry:
``python -m analyzer.fields.doc`` prints them, ``--write DOC`` puts them in place of DOC's
(from the first protocol's heading to the next top-level section; tests/test_filter.py checks
that the document lists every field)."""
from __future__ import annotations

from . import PROTOCOLS, TREE
from .types import FT_NAMES


def tables() -> str:
    out = []
    for p in [*PROTOCOLS.values(), TREE]:
        out.append(f"### {p.name} — {p.desc}\n")
        out.append("| field | type (tshark) | meaning | differences from tshark |")
        out.append("| --- | --- | --- | --- |")
        for f in [p.present, *p.fields] if p is not TREE else p.fields:
            desc = f.desc.replace("|", "\\|")
            out.append(f"| `{f.name}` | {f.type} ({FT_NAMES[f.type]}) | {desc} | {f.note.replace('|', chr(92) + '|')} |")
        for prefix in p.prefixes:
            out.append(f"| `{prefix}<name>` | string (FT_STRING) | any decoded header: `_` for `-` (content_type); "
                       f"status, content_length, age, max_forwards are numbers | tshark knows a fixed list of names; wirefall takes any |")
        for prefix, why in p.unsupported_prefixes.items():
            out.append(f"| `{prefix}.*` | — | {why} | |")
        out.append("")
    return "\n".join(out)


def write(path: str) -> None:
    """The tables of ``path`` (docs/FILTERS.md) replaced by ``tables()``."""
    with open(path, encoding="utf-8") as f:
        doc = f.read()
    first = next(iter(PROTOCOLS.values()))
    i = doc.index(f"### {first.name} — ")
    j = doc.find("\n## ", i)
    with open(path, "w", encoding="utf-8") as f:
        f.write(doc[:i] + tables().rstrip("\n") + "\n" + (doc[j:] if j >= 0 else "\n"))


if __name__ == "__main__":
    import sys

    if sys.argv[1:2] == ["--write"] and len(sys.argv) == 3:
        write(sys.argv[2])
    else:
        print(tables())
