"""tshark's packet trees (``tshark -T pdml``) as lines, and the checks that hold wirefall's detail
tree to them (tests/test_tree_layers34.py, test_dns_tree34.py, test_tls_tree34.py,
test_h2_tree34.py, test_h1_tree34.py)."""
from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Callable, Iterable, Iterator

from conftest import run_tool

Line = tuple[str, int, int]


def label(s: str) -> str:
    """A line's words without the brackets of a generated field (tshark's pdml has none)."""
    return s[1:-1] if s.startswith("[") and s.endswith("]") else s


def line(text: str, pos: int, size: int) -> Line:
    """(words, offset, length); a line of no bytes: offset and length -1."""
    return (label(text), pos, size) if size > 0 else (label(text), -1, -1)


def packets(*args: str) -> Iterator[tuple[int, ET.Element]]:
    """(frame number, its <packet>) of ``tshark ARGS -T pdml``."""
    for pkt in ET.fromstring(run_tool("tshark", *args, "-T", "pdml")).iter("packet"):
        yield int(next(f for f in pkt.iter("field") if f.get("name") == "frame.number").get("show")), pkt


def proto_line(proto: ET.Element) -> Line:
    return line(proto.get("showname") or "", int(proto.get("pos") or 0), int(proto.get("size") or 0))


def field_lines(el: ET.Element, skip: Callable[[ET.Element, str], bool] | None = None,
                into: Callable[[str], bool] | None = None) -> list[tuple[str, int, int, bool]]:
    """The fields under ``el``, depth first, as (words, offset, length, inside): hidden ones and
    those ``skip(field, words)`` names left out with what is under them; ``inside`` says a line
    is under one whose words ``into`` names."""
    out: list[tuple[str, int, int, bool]] = []

    def walk(e: ET.Element, inside: bool) -> None:
        for f in e.findall("field"):
            text = f.get("showname") or f.get("show") or ""
            if f.get("hide") == "yes" or skip is not None and skip(f, label(text)):
                continue
            out.append((*line(text, int(f.get("pos") or 0), int(f.get("size") or 0)), inside))
            walk(f, inside or into is not None and into(label(text)))
    walk(el, False)
    return out


def in_order(ours: Iterable, theirs: list, where: str) -> None:
    """Every line of ours is one of theirs, in their order."""
    it = iter(theirs)
    for x in ours:
        assert any(x == t for t in it), f"{where}: {x!r} is not tshark's (or not in its order)"


def all_there(theirs: Iterable[str], ours: Iterable[str], where: str) -> None:
    """Every one of their lines (as many of each) is among ours."""
    missing = Counter(theirs) - Counter(ours)
    assert missing == Counter(), f"{where}: tshark also shows {list(missing.elements())[:4]}"
