"""Text from a capture on its way out of the program, made inert.

A capture can carry any byte in a header, a URL or a name.  Printed raw, ESC starts a
terminal control sequence (window title, clear screen, OSC 8 hyperlinks), a bidi override
reorders what the reader sees, and in an HTML page Plotly's label markup (``<a href>``,
``<span style>``, ``<br>``…) is live.  Every text output of ``ui/`` passes captured strings
through one of these two functions; ``--json`` output does not (JSON escaping already keeps
the exact values safe).

- ``printable(s)`` for terminals: C0 controls, DEL, C1 controls, the bidi embeddings,
  overrides and isolates (U+202A–U+202E, U+2066–U+2069) and marks (U+200E, U+200F, U+061C),
  the line and paragraph separators (U+2028, U+2029) and lone surrogates are shown as
  escapes, as Wireshark shows them: ``\\x1b``, ``\\r``, ``\\n``, ``\\t``, ``\\u202e``.
- ``html_text(s)`` for Plotly labels and HTML: ``printable`` and then ``&``, ``<``, ``>``
  as HTML entities (Plotly shows an entity as its character and parses no tag from it).

Python's ``str.translate``/``html.escape`` would do, but each would walk every string; a
regular expression finds the (rare) string that needs it and leaves the others untouched
at the cost of one scan.
"""
from __future__ import annotations

import re

__all__ = ["UNSAFE", "html_text", "printable", "printable_lines"]

# every character ``printable`` escapes (a character class: tests use it to search outputs)
UNSAFE = "\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff"
_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}

# The two classes are compiled on first use (``_patterns``): with their ranges up to U+DFFF
# each compile cost ~0.3 ms, at every start of a command that may print nothing unsafe.
_UNSAFE: re.Pattern[str] | None = None
_HTML: re.Pattern[str] | None = None


def _patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    global _UNSAFE, _HTML
    _UNSAFE, _HTML = re.compile(f"[{UNSAFE}]"), re.compile(f"[&<>{UNSAFE}]")
    return _UNSAFE, _HTML


_ENTITY = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}


def _esc(m: re.Match) -> str:
    ch = m.group()
    short = _SHORT.get(ch)
    if short is not None:
        return short
    o = ord(ch)
    return f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}"


def printable(s) -> str:
    """``s`` (any object: ``str()`` of it) with every control, bidi or unpaired surrogate
    character written as an escape; an ordinary string comes back as it is."""
    if not isinstance(s, str):
        s = "" if s is None else str(s)
    pat = _UNSAFE or _patterns()[0]
    if pat.search(s) is None:
        return s
    return pat.sub(_esc, s)


def _html_esc(m: re.Match) -> str:
    ch = m.group()
    return _ENTITY.get(ch) or _esc(m)


def html_text(s) -> str:
    """``printable(s)`` with ``&``, ``<`` and ``>`` as HTML entities: text for a Plotly
    label, hover text, tick label, title or annotation (or any HTML) that shows exactly the
    captured characters and makes no element."""
    if not isinstance(s, str):
        s = "" if s is None else str(s)
    pat = _HTML or _patterns()[1]
    if pat.search(s) is None:
        return s
    return pat.sub(_html_esc, s)


def printable_lines(text: str) -> str:
    """A multi-line text (our own layout) with each line made ``printable``: the newlines
    between lines stay, everything else that is unsafe is escaped."""
    if (_UNSAFE or _patterns()[0]).search(text) is None:
        return text
    return "\n".join(printable(line) for line in text.split("\n"))


def plural(n: int, word: str, many: str | None = None) -> str:
    """``1 connection``, ``2 connections`` (``many``: an irregular plural)."""
    return f"{n} {word if n == 1 else (many or word + 's')}"
