"""Display filters: Wireshark's language (tshark 4.0's semantics) plus wirefall's short names.

    tcp.port == 443 && ip.addr == 10.0.0.0/8
    http2.type == HEADERS and http2.headers.path contains ".css"
    frame.number in {1..10, 20} || not tls
    stream == 5 && type == "HEADERS"            (wirefall's names, as before)

Field names are those of ``analyzer.fields`` (one module per protocol; ``docs/FILTERS.md``
lists them with their types); wirefall's own names are the JSON names of frames, requests and
connections (``stream_id`` — alias ``stream`` —, ``type``, ``url``, ``status``, ``protocol``,
``method``, ``packet``, ``connection``, ``direction``, ``length``, ``content_type`` …, and
``header.NAME``).  ``compile_filter(expr, scope)`` gives a predicate; ``scope`` is what it
will be applied to: ``"packets"`` (``PacketView``s: every Wireshark field, see
``filter_packets``), ``"frames"`` (analysis frames: frame-level Wireshark fields such as
``http2.streamid`` and wirefall's names), ``"exchanges"`` / ``"connections"`` (wirefall's
names only), or None (anything, as before).  A name the scope cannot read is an error that
names it — with the closest known name — never a filter that silently matches nothing.

Semantics (wireshark-filter(4), tshark 4.0): a field with several values (``ip.addr``,
``http2.streamid`` on a packet with several frames) matches ``==``, ``<``, ``contains``…
when any value does; ``!=`` is "all not equal" — ``!(a == b)`` for a present field —, ``~=``
/ ``!==`` is "any not equal", ``===`` "all equal"; ``any``/``all`` before a comparison choose
explicitly.  ``and`` binds tighter than ``or``.  ``contains`` is case-sensitive, ``matches``
(Python ``re``, close to PCRE) case-insensitive.  The literal is read by the field's type:
numbers in decimal, 0x hex, 0b binary or leading-0 octal, value names (``http2.type ==
HEADERS``), IPv4/IPv6 addresses with an optional /prefix, MAC and byte strings
(``00:11:22``, ``00-11``), quoted strings with C escapes (``r"…"`` raw), ``'c'`` characters,
``True``/``False``.  Slices ``field[i:len]``, ``[i-j]``, ``[i]``, ``[:j]``, ``[i:]`` give
bytes; ``len()``, ``count()``, ``upper()``, ``lower()`` and ``+ - * / %`` on numbers work as
in tshark.  ``&`` tests bits (``tcp.flags & 0x02``).  Literals are read as tshark 4.0 reads them
(``+1``, ``0X1``, ``-1`` for an unsigned field, ``4/2``, braces grouping arithmetic, keywords
case-sensitive), and refused where it refuses them (``--1``, ``1e5`` for an integer, ``"1"`` for a
number, past 64 bits or the field's size, ``1e-3`` or ``5.`` for a time, ``{}``, ``{1 2}``,
``matches 1``): ``scripts/filters/malformed.py`` compares the two on a few hundred expressions.

Why hand-written rather than lark/pyparsing: the grammar is small, the errors must carry the
column and the closest field name, literals are typed by the field on the other side (which a
generic grammar cannot know), and the nesting depth is bounded here before any recursion
could overflow (a 5000-deep filter is "nested too deeply", not a RecursionError).
"""
from __future__ import annotations

import calendar
import difflib
import ipaddress
import re
import time as _time
from array import array
from typing import Any, NoReturn
from collections.abc import Callable

from wirefall.analyzer import fields as _fields
from wirefall.analyzer.safetext import plural
from wirefall.analyzer.fields import types as T
from wirefall.analyzer.fields import valuestrings as VS
from wirefall.analyzer.fields.packet import PacketContext, PacketView
from wirefall.analyzer.fields.wirefall import SHORT

MAX_DEPTH = 100  # parentheses, not, and nested arithmetic
MAX_TERMS = 10000  # comparisons in one filter
MAX_SET = 10000  # elements of one "in {…}"

ALIASES = {
    "stream": "stream_id",
    "streamid": "stream_id",
    "conn": "connection",
    "frame.type": "type",
    "http.status": "status",
    "http.method": "method",
    "http.url": "url",
    "proto": "protocol",
    "len": "length",
    "frame": "packet",
    "no": "packet",
}

# comparison operators (Wireshark's symbols and words) -> internal name
OPS = {"==": "==", "eq": "==", "any_eq": "==", "!=": "!=", "ne": "!=", "all_ne": "!=", "===": "===", "all_eq": "===",
       "!==": "!==", "~=": "!==", "any_ne": "!==", "<": "<", "lt": "<", "<=": "<=", "le": "<=", ">": ">", "gt": ">",
       ">=": ">=", "ge": ">=", "contains": "contains", "matches": "matches", "~": "matches", "&": "&", "bitwise_and": "&"}

_TOKEN = re.compile(
    r"""\s*(?:
    (?P<str>r?"(?:[^"\\]|\\.)*")|
    (?P<char>'(?:[^'\\]|\\.[^']*)')|
    (?P<slice>\[[^\]]*\])|
    (?P<op>===|!==|==|!=|~=|<=|>=|<|>|~|&&|\|\||\^\^|&|!|\(|\)|\{|\}|,|\+|\*|/|%|-(?=\s|[A-Za-z_]))|
    (?P<word>[\w.:\-/]+)
    )""",
    re.X,
)

_KEYWORDS = {"and", "or", "not", "in", "any", "all", "xor"} | {k for k in OPS if k[0].isalpha()}
_FUNCS = {"len", "count", "upper", "lower", "string", "abs", "min", "max"}

# nested quantifiers: "(a+)+" can take exponential time in a backtracking engine
_NESTED_QUANT = re.compile(r"\((?:[^()\\]|\\.)*[*+}](?:[^()\\]|\\.)*\)[*+{]")


class FilterError(ValueError):
    def __init__(self, message: str, column: int, expr: str = ""):
        super().__init__(message)
        self.message = message
        self.column = column
        self.expr = expr

    def __str__(self) -> str:
        if self.expr:
            return f"{self.message} at column {self.column}\n  {self.expr}\n  {' ' * (self.column - 1)}^"
        return f"{self.message} at column {self.column}"


def _tokenize(expr: str) -> list[tuple[str, str, int]]:
    out: list[tuple[str, str, int]] = []
    pos = 0
    n = len(expr)
    while pos < n:
        if expr[pos:].strip() == "":
            break
        m = _TOKEN.match(expr, pos)
        if not m or m.end() == pos:
            col = pos + 1 + (len(expr[pos:]) - len(expr[pos:].lstrip()))
            raise FilterError(f"unexpected character {expr[col - 1]!r}", col, expr)
        kind = m.lastgroup
        assert kind is not None  # every alternative of _TOKEN is a named group
        text = m.group(kind)
        col = m.start(kind) + 1
        if kind == "word" and text in _KEYWORDS:  # case-sensitive, as tshark's ("AND", "EQ" are errors)
            kind = "op"
        out.append((kind, text, col))
        pos = m.end()
    out.append(("end", "", n + 1))
    return out


# ---------------------------------------------------------------- wirefall's names on objects

def _get(obj: Any, name: str) -> Any:
    name = ALIASES.get(name, name)
    if name.startswith("header.") or name.startswith("headers."):
        # every instance, the request's then the response's (a frame's own on a frame): a field
        # that occurs several times matches when any occurrence does, as Wireshark's fields (the
        # first alone hid a response's Content-Type behind its request's, and every Set-Cookie
        # but the first: review 31).  Names compare ignoring case, as HTTP's; an ``<unknown>``
        # entry (HPACK/QPACK inserted before the capture) has no name, so it is none of them.
        h = name.split(".", 1)[1].lower()
        out = []
        for attr in ("request_headers", "response_headers", "headers"):
            hs = obj.get(attr) if isinstance(obj, dict) else getattr(obj, attr, None)
            out += [v for k, v in hs or () if k.lower() == h]
        return out or None
    if isinstance(obj, dict):
        if name in obj:
            return obj[name]
        if "." in name:
            cur: Any = obj
            for part in name.split("."):
                cur = cur.get(part) if isinstance(cur, dict) else getattr(cur, part, None)
                if cur is None:
                    return None
            return cur
        return None
    v = getattr(obj, name, None)
    if v is None and "." in name:
        cur = obj
        for part in name.split("."):
            cur = cur.get(part) if isinstance(cur, dict) else getattr(cur, part, None)
            if cur is None:
                return None
        return cur
    if name == "direction" and isinstance(v, int):
        return ("c2s", "s2c")[v]
    return v


def _loose(op: str, a: Any, b: Any) -> bool:
    """One value of a wirefall name against a literal (untyped: numbers and strings as the
    JSON holds them; ``contains`` ignores case)."""
    if a is None:
        return False
    if op == "contains":
        return str(b).lower() in str(a).lower() if isinstance(b, str) else False
    if op == "matches":
        return b.search(str(a)) is not None
    if isinstance(b, (int, float)) and not isinstance(a, (int, float)):
        try:
            a = float(a)
        except (TypeError, ValueError):
            return False
    elif isinstance(b, str) and not isinstance(a, str):
        a = str(a)
    try:
        if op in ("==", "===", "in"):
            return a == b
        if op in ("!=", "!=="):
            return a != b
        if op == "<":
            return a < b
        if op == "<=":
            return a <= b
        if op == ">":
            return a > b
        if op == ">=":
            return a >= b
        if op == "&":
            return bool(int(a) & int(b))
    except (TypeError, ValueError):
        return False
    return False


def _known_short() -> dict[str | None, set[str]]:
    from dataclasses import fields as dfields

    from wirefall.analyzer.model import Connection, Exchange, Frame

    fr = {f.name for f in dfields(Frame)}
    ex = {f.name for f in dfields(Exchange)} | {"header", "headers"}
    co = {f.name for f in dfields(Connection)} | {"label", "id", "packets", "bytes", "payload_bytes", "retransmissions", "gaps",
                                                   "cipher_suite", "version", "client_port", "server_port"}
    pk = set(SHORT)
    al = set(ALIASES)
    return {"frames": fr | al | {"time", "length"}, "exchanges": ex | al | {"time"}, "connections": co | al,
            "packets": pk | al, None: fr | ex | co | pk | al}


_SHORT_NAMES: dict | None = None


def _short_names(scope) -> set[str]:
    global _SHORT_NAMES
    if _SHORT_NAMES is None:
        _SHORT_NAMES = _known_short()
    return _SHORT_NAMES[scope]


# ---------------------------------------------------------------- typed literals

def _unescape(body: str) -> str:
    out = []
    i, n = 0, len(body)
    simple = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "f": "\f", "v": "\v", "\\": "\\", '"': '"', "'": "'", "0": "\0"}
    while i < n:
        c = body[i]
        if c != "\\" or i + 1 >= n:
            out.append(c)
            i += 1
            continue
        d = body[i + 1]
        if d == "x" and (m := re.match(r"[0-9a-fA-F]{1,2}", body[i + 2 : i + 4])):
            out.append(chr(int(m.group(0), 16)))
            i += 2 + len(m.group(0))
        elif d in "01234567" and (m := re.match(r"[0-7]{1,3}", body[i + 1 : i + 4])):
            out.append(chr(int(m.group(0), 8) & 0xFF))
            i += 1 + len(m.group(0))
        elif d == "u" and re.match(r"[0-9a-fA-F]{4}", body[i + 2 : i + 6]):
            out.append(chr(int(body[i + 2 : i + 6], 16)))
            i += 6
        else:
            out.append(simple.get(d, d))
            i += 2
    return "".join(out)


class Lit:
    """A literal as written: its text (unquoted), whether it was quoted, and its column."""

    __slots__ = ("text", "quoted", "col", "char")

    def __init__(self, text: str, quoted: bool, col: int, char: bool = False):
        self.text, self.quoted, self.col, self.char = text, quoted, col, char


_INT = re.compile(r"[+-]?(0[xX][0-9a-fA-F]+|0[bB][01]*|0[0-7]*|[1-9][0-9]*)")
U64 = (1 << 64) - 1
_NEG_NUM = re.compile(r"-(0[xX][0-9a-fA-F]+|\d+(\.\d+)?)")
_FLOAT = re.compile(r"[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?")
_BYTES = re.compile(r"[0-9a-fA-F]{1,2}([:.\-][0-9a-fA-F]{1,2})*|[0-9a-fA-F]{2}(?:[0-9a-fA-F]{2})*")
# PCRE2's POSIX classes (inside a bracket expression) as the ranges Python's ``re`` reads
_POSIX_CLASS = re.compile(r"(?<!\\)\[:(\^?)([a-z]+):\]")
_POSIX_CLASSES = {"alpha": "a-zA-Z", "digit": "0-9", "alnum": "a-zA-Z0-9", "upper": "A-Z", "lower": "a-z",
                  "space": "\\s", "blank": " \\t", "xdigit": "0-9A-Fa-f", "word": "\\w", "cntrl": "\\x00-\\x1f\\x7f",
                  "print": "\\x20-\\x7e", "graph": "\\x21-\\x7e", "ascii": "\\x00-\\x7f",
                  "punct": "!-/:-@\\[-`{-~"}
# tshark 4.0's relative time: seconds, a fraction; digits after a second "." are not read
_RELTIME = re.compile(r"(-?\d+(?:\.\d+)?)(?:\.\d[\d.]*)?")
_TIME_FORMATS = ("%b %d, %Y %H:%M:%S", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d")


def _parse_int(s: str) -> int | None:
    s = s.strip()
    if not _INT.fullmatch(s):
        return None
    neg = s.startswith("-")
    t = s.lstrip("+-").lower()
    if t.startswith("0x"):
        v = int(t, 16)
    elif t.startswith("0b"):
        v = int(t[2:] or "0", 2)  # tshark 4.0 reads "0b" as 0
    elif t.startswith("0") and len(t) > 1:
        v = int(t, 8)
    else:
        v = int(t)
    return -v if neg else v


def _parse_time(s: str) -> float | None:
    s = s.strip()
    try:
        return float(s)
    except ValueError:
        pass
    s = re.sub(r"\s*(UTC|Z)$", "", s)
    frac = 0.0
    m = re.search(r"(\.\d+)$", s)
    if m:
        frac = float(m.group(1))
        s = s[: m.start()]
    for fmt in _TIME_FORMATS:
        try:
            return calendar.timegm(_time.strptime(s, fmt)) + frac
        except ValueError:
            continue
    return None


class _Bad(Exception):
    pass


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _value_string(f: T.Field | None, ftype: str, s: str, quoted: bool) -> int:
    """The value a name stands for in an integer or boolean field, as tshark 4.0 reads it
    (epan/dfilter/semcheck.c ``mk_fvalue_from_val_string``): Wireshark's value strings of the
    field (``analyzer/fields/valuestrings.py``, generated from ``tshark -G values``), compared
    ignoring ASCII case, the first that matches winning; a boolean's true/false strings ("Set",
    "Not set"; "True", "False" for one without).  A quoted string uses the field name's first
    registration (tshark walks the same-name list back for a string: ``tls.handshake.type ==
    "Server Hello"`` is SSLv2's 4), an unquoted word its last; an unquoted word that is a
    Wireshark field or protocol name is that field (``ip.proto == tcp`` is an error in tshark)."""
    name = f.name if f is not None else ""
    what = "the possible values for " + name if name else "the possible values"
    low = s.translate(_ASCII_LOWER)
    if not quoted and s in VS.FIELD_NAMES:
        raise _Bad(f"{s!r} is a Wireshark protocol or field name, not a value of {name or 'the field'} (tshark reads it as that "
                   f"field: not of a compatible type)")
    if ftype == T.BOOL:
        tf = VS.BOOLEANS.get(name, ("True", "False"))
        if low == tf[0].translate(_ASCII_LOWER):
            return 1
        if low == tf[1].translate(_ASCII_LOWER):
            return 0
        raise _Bad(f"{s!r} cannot be found among {what} (a boolean: 1, 0, or {tf[0]!r}/{tf[1]!r})")
    if name in VS.RANGES:
        raise _Bad(f"{name} cannot accept [range] strings as values: write the number")
    table = VS.QUOTED.get(name) if quoted and name in VS.QUOTED else VS.UNQUOTED.get(name)
    if table is None:
        if quoted:
            raise _Bad(f"an integer cannot be converted from a string ({s!r}): the field has no value strings")
        raise _Bad(f"{s!r} is not a valid integer")
    v = table.get(low)
    if v is None:
        raise _Bad(f"{s!r} cannot be found among {what}" + (" (quoted: tshark looks a string up in the field's first "
                                                             "registration's values)" if quoted and name in VS.QUOTED else ""))
    return v


def _typed(lit: Lit, f: T.Field | None, ftype: str) -> Any:
    """The literal as a value of ``ftype``: int, float, str, bytes, or for addresses an
    (int value, int mask) pair.  Raises _Bad with a reason."""
    s = lit.text
    if lit.char:
        if ftype in T.NUMERIC:
            body = _unescape(s)
            if len(body) != 1:
                raise _Bad("a character constant holds one character")
            return ord(body)
        s = _unescape(s)
    if ftype in (T.UINT, T.INT, T.BOOL):
        if lit.quoted and not lit.char:  # a quoted string: only a value string (tshark 4.0: "1" is refused)
            return _value_string(f, ftype, s, True)
        if ftype == T.BOOL and s in ("True", "TRUE", "False", "FALSE"):  # tshark 4.0 ("true", "tRUE" are value strings)
            return 1 if s[0] == "T" else 0
        v = _parse_int(s)
        if v is None and ftype != T.BOOL and s.count("/") == 1:  # tshark 4.0 reads "4/2" as a division
            num, den = (_parse_int(x) for x in s.split("/"))
            if num is not None and den is not None:
                v = num // den if den else 0
        if v is None:  # not a number: the field's value strings, as tshark reads a word
            return _value_string(f, ftype, s, False)
        # tshark 4.0: an unsigned field takes a negative literal (it matches no value); a
        # boolean does not; a literal past 64 bits overflows; past the field's size is too big
        if ftype == T.BOOL and (s.startswith("-") or v > U64):
            raise _Bad(f"{s!r} is not a boolean: {'a boolean cannot be negative' if v < 0 else 'it overflows 64 bits'}")
        if ftype == T.BOOL:  # tshark 4.0: any other value is true (tcp.flags.syn == 2 is tcp.flags.syn == 1)
            return 1 if v else 0
        if v > U64 or v < -(1 << 63):
            raise _Bad(f"{s!r} causes an integer overflow")
        size = f.size if f is not None else 0
        if size and ftype == T.UINT and v > (1 << (8 * size)) - 1:
            raise _Bad(f"{s!r} is too big for this field, maximum {(1 << (8 * size)) - 1}")
        return v
    if ftype == T.FLOAT:
        if f is not None and ".time" in f.name:  # a relative time: tshark 4.0 reads [-]S[.F], no exponent
            m = _RELTIME.fullmatch(s.strip())
            if m and not lit.quoted:
                return float(m.group(1))
            raise _Bad(f"{s!r} is not a valid time (seconds, e.g. 1.5)")
        if _FLOAT.fullmatch(s.strip()):
            return float(s)
        raise _Bad(f"{s!r} is not a number")
    if ftype == T.ABSTIME:
        t = _parse_time(s)
        if t is None:
            raise _Bad(f"{s!r} is not a time (use \"2026-11-29 18:17:59\", \"Nov 29, 2026 18:17:59.5\" or epoch seconds)")
        return t
    if ftype == T.STRING:
        return s
    if ftype in (T.IPV4, T.IPV6):
        try:
            net = ipaddress.ip_network(s, strict=False)
        except ValueError:
            if ftype == T.IPV4 and _BYTES.fullmatch(s):
                b = _hexbytes(s)
                if len(b) == 4:
                    return (int.from_bytes(b, "big"), 0xFFFFFFFF)
            addr, slash, bits = s.partition("/")
            top = 32 if ftype == T.IPV4 else 128
            if slash and bits.isdigit() and int(bits) > top:  # (tshark names the netmask, not the address)
                what = "netmask bits in a CIDR IPv4 address" if ftype == T.IPV4 else "prefix in an IPv6 address"
                raise _Bad(f"{what} should be <= {top}, not {bits}") from None
            raise _Bad(f"{s!r} is not an {'IPv4' if ftype == T.IPV4 else 'IPv6'} address (host names are not resolved)") from None
        if (net.version == 4) != (ftype == T.IPV4):
            raise _Bad(f"{s!r} is an IPv{net.version} address, {f.name if f else 'the field'} an IPv{4 if ftype == T.IPV4 else 6} one")
        return (int(net.network_address), int(net.netmask))
    # bytes-like: ETHER, BYTES, PROTO
    if lit.quoted:
        return s.encode("utf-8", "surrogateescape") if not lit.char else s.encode("latin-1", "replace")
    if ftype == T.ETHER and re.fullmatch(r"[0-9a-fA-F]{4}\.[0-9a-fA-F]{4}\.[0-9a-fA-F]{4}", s):  # Cisco's 0000.0000.0000
        return bytes.fromhex(s.replace(".", ""))
    if _BYTES.fullmatch(s):
        b = _hexbytes(s)
        if ftype == T.ETHER and len(b) != 6:
            raise _Bad(f"{s!r} is not a 6-byte MAC address")
        return b
    if ftype != T.ETHER and re.fullmatch(r"0[xX][0-9a-fA-F]{1,2}", s):
        return bytes([int(s, 16)])  # one byte as tshark 4.0 reads it: tcp[13] == 0x02, tcp.payload[0] == 0x16
    raise _Bad(f"{s!r} is not a byte string (write bytes as 00:1a:2b, or a quoted string)")


def _ipv4_str(v) -> str:
    return str(ipaddress.IPv4Address(v)) if isinstance(v, int) else str(v)


def _ipv6_str(v) -> str:
    return str(ipaddress.IPv6Address(v)) if isinstance(v, int) else str(v)


def _ether_str(v) -> str:
    return ":".join(f"{c:02x}" for c in v) if isinstance(v, (bytes, bytearray)) else str(v)


def _hexbytes(s: str) -> bytes:
    if re.search(r"[:.\-]", s):
        return bytes(int(x, 16) for x in re.split(r"[:.\-]", s))
    if len(s) <= 2:
        return bytes([int(s, 16)])
    return bytes.fromhex(s)


def _as_bytes(v: Any, ftype: str) -> bytes | None:
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v)
    if isinstance(v, str):
        return v.encode("utf-8", "surrogateescape")
    if ftype == T.IPV4 and isinstance(v, int):
        return v.to_bytes(4, "big")
    if ftype == T.IPV6 and isinstance(v, int):
        return v.to_bytes(16, "big")
    return None


# ---------------------------------------------------------------- value expressions

class Val:
    """A value expression: ``vals(obj)`` lists its values; ``ftype`` its type (None:
    untyped wirefall name); ``field`` the Wireshark field when it is one."""

    __slots__ = ("vals", "ftype", "field", "name", "col", "short", "raw")

    def __init__(self, vals, ftype, field=None, name="", col=0, short=False, raw=None):
        self.vals = vals
        self.ftype = ftype
        self.field = field
        self.name = name
        self.col = col
        self.short = short
        self.raw = raw  # wirefall name on an object: the raw value (for the presence test)


def _slice_fn(spec: str, col: int, expr: str) -> Callable[[bytes], bytes]:
    parts = []
    for item in spec.split(","):
        item = item.strip()
        m = re.fullmatch(r"(-?\d+)?\s*:\s*(\d+)?|(-?\d+)\s*-\s*(-?\d+)|(-?\d+)", item)
        if not m:
            raise FilterError(f"bad slice [{spec}] (use [i:len], [i-j], [i], [:len] or [i:])", col, expr)
        parts.append(m.groups())

    def fn(b: bytes) -> bytes:
        out = b""
        n = len(b)
        for a, ln, s, e, one in parts:
            if one is not None:
                i = int(one)
                i = i + n if i < 0 else i
                out += b[i : i + 1] if 0 <= i < n else b""
            elif s is not None:
                i, j = int(s), int(e)
                i = i + n if i < 0 else i
                j = j + n if j < 0 else j
                out += b[i : j + 1] if i <= j else b""
            else:
                i = int(a) if a is not None else 0
                i = i + n if i < 0 else i
                out += b[i : i + int(ln)] if ln is not None else b[i:]
        return out

    return fn


# ---------------------------------------------------------------- the parser

class _Parser:
    def __init__(self, expr: str, scope):
        self.expr = expr
        self.scope = scope
        self.toks = _tokenize(expr)
        self.i = 0
        self.depth = 0
        self.terms = 0

    def peek(self, k: int = 0):
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def take(self):
        t = self.toks[self.i]
        self.i += 1
        return t

    def error(self, msg: str, tok=None) -> NoReturn:
        tok = tok or self.peek()
        raise FilterError(msg, tok[2], self.expr)

    def enter(self, tok):
        self.depth += 1
        if self.depth > MAX_DEPTH:
            self.error(f"nested too deeply (more than {MAX_DEPTH} levels)", tok)

    def parse(self) -> Callable[[Any], bool]:
        if self.peek()[0] == "end":
            return lambda obj: True
        f = self.or_()
        if self.peek()[0] != "end":
            self.error(f"unexpected {self.peek()[1]!r}")
        return f

    def or_(self):
        parts = [self.and_()]
        while self.peek()[1] in ("||", "or", "xor", "^^"):
            x = self.take()[1] in ("xor", "^^")
            right = self.and_()
            if x:
                left = parts.pop() if len(parts) == 1 else _any_of(parts)
                parts = [(lambda a, b: lambda o: bool(a(o)) != bool(b(o)))(left, right)]
            else:
                parts.append(right)
        return parts[0] if len(parts) == 1 else _any_of(parts)

    def and_(self):
        parts = [self.not_()]
        while self.peek()[1] in ("&&", "and"):
            self.take()
            parts.append(self.not_())
        if len(parts) == 1:
            return parts[0]
        fs = tuple(parts)
        return lambda o: all(f(o) for f in fs)

    def not_(self):
        tok = self.peek()
        if tok[1] in ("!", "not"):
            self.take()
            self.enter(tok)
            inner = self.not_()
            self.depth -= 1
            return lambda o: not inner(o)
        return self.relation()

    # -- names
    def resolve(self, name: str, col: int, rhs: bool = False) -> Val | None:
        """The value expression a name stands for in this scope (None: not a name, i.e. a
        literal on the right-hand side)."""
        scope = self.scope
        why = _fields.unsupported(name)
        if why:
            if rhs:
                return None
            raise FilterError(f"{name}: {why}", col, self.expr)
        f = _fields.lookup(name)
        short = _short_names(scope)
        top = ALIASES.get(name, name).split(".", 1)[0]
        if "." in name and name not in ALIASES and top in ALIASES:
            # "frame.len", "frame.len--1": under an alias of a number ("frame" is the packet
            # number), a dotted name is no wirefall name, only a Wireshark field (or unknown)
            top = ""
        if rhs:  # on the right only a dotted Wireshark field is a field; anything else is a literal
            if f is None or "." not in name:
                return None
        if scope == "packets":
            if f is not None:
                return self._wireshark(f, col)
            if top in short or name in short:
                return self._short_packet(name, col)
        elif scope == "frames":
            if f is not None and f.frame is not None:
                return self._wireshark(f, col)
            if name in ("frame.number", "frame.time"):
                attr = "packet" if name == "frame.number" else "time"
                ft = T.UINT if attr == "packet" else T.ABSTIME
                return Val(lambda o: [getattr(o, attr)], ft, f, name, col)
            if top in short:
                return self._short_obj(name, col)
            if f is not None:
                raise FilterError(f"{name} is a packet field: `frames -Y` filters protocol frames (try `packets -Y`, "
                                  f"or a frame field such as http2.streamid)", col, self.expr)
        elif scope in ("exchanges", "connections"):
            if top in short:
                return self._short_obj(name, col)
            if f is not None:
                what = "requests" if scope == "exchanges" else "connections"
                kind = "packet" if f.frame is None else "frame"
                raise FilterError(f"{name} is a {kind} field: this filter selects {what}, by wirefall's names "
                                  f"({', '.join(_EXAMPLES[scope])} …; see docs/FILTERS.md); Wireshark's fields filter "
                                  f"the packet list (`packets -Y`){' and frames (`frames -Y`)' if kind == 'frame' else ''}", col, self.expr)
        else:
            if (top in short or name in short) and not (f is not None and "." in name):
                return self._short_obj(name, col)
            if f is not None:
                return self._wireshark(f, col)
        if rhs:
            return None
        raise FilterError(self._unknown(name), col, self.expr)

    def _unknown(self, name: str) -> str:
        cands = sorted(_short_names(self.scope))
        if self.scope not in ("exchanges", "connections"):
            cands += _fields.names()
        # the same protocol's names first (tcp.segment: not http.user_agent), then a near miss in
        # the protocol part too (htpp.host -> http.host)
        proto = name.split(".", 1)[0]
        same = [c for c in cands if c.split(".", 1)[0] == proto]
        close = difflib.get_close_matches(name, same, n=1, cutoff=0.6) if "." in name else []
        if not close:
            close = difflib.get_close_matches(name, cands, n=1, cutoff=0.6 if "." not in name else 0.8)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        return f"unknown field {name!r}{hint}"

    def _wireshark(self, f: T.Field, col: int) -> Val:
        get, frame = f.get, f.frame

        def vals(o):
            if type(o) is PacketView:
                return get(o)
            if frame is not None and not isinstance(o, dict):
                try:
                    return frame(o)
                except Exception:  # noqa: BLE001 - not a frame of that kind
                    return []
            return []

        return Val(vals, f.type, f, f.name, col)

    def _short_packet(self, name: str, col: int) -> Val:
        key = ALIASES.get(name, name)
        fn = SHORT.get(key)
        if fn is None:
            return Val(lambda o: [], None, None, name, col, short=True)

        def vals(o):
            if type(o) is PacketView:
                return fn(o)
            v = _get(o, name)
            return [] if v is None else list(v) if isinstance(v, (list, tuple)) else [v]

        return Val(vals, None, None, name, col, short=True)

    def _short_obj(self, name: str, col: int) -> Val:
        fn = SHORT.get(ALIASES.get(name, name))

        def raw(o):
            if type(o) is PacketView:
                return fn(o) if fn is not None else None
            return _get(o, name)

        def vals(o):
            v = raw(o)
            return [] if v is None else list(v) if isinstance(v, (list, tuple)) else [v]

        return Val(vals, None, None, name, col, short=True, raw=raw)

    # -- relations
    def relation(self):
        tok = self.peek()
        if tok[1] == "(":
            self.take()
            self.enter(tok)
            inner = self.or_()
            self.depth -= 1
            if self.peek()[1] != ")":
                self.error("expected ')'")
            self.take()
            return inner
        if tok[0] == "end":
            self.error("expression ends too early")
        self.terms += 1
        if self.terms > MAX_TERMS:
            self.error(f"too many comparisons (more than {MAX_TERMS})")
        quant = None
        if tok[1] in ("any", "all") and self.peek(1)[0] in ("word",):
            quant = self.take()[1]
        left = self.value(lhs=True)
        nk, nt, ncol = self.peek()
        negate_in = False
        if nk == "op" and nt == "not" and self.peek(1)[1] == "in":
            self.take()
            negate_in = True
            nk, nt, ncol = self.peek()
        if nk == "op" and nt in OPS:
            self.take()
            op = OPS[nt]
            if self.peek()[0] == "end":
                self.error(f"expected a value after {nt!r}")
            right = self.value(lhs=False)
            ak, at, acol = self.peek()
            if op == "&" and ak == "op" and at in OPS and OPS[at] not in ("&", "contains", "matches"):
                # tshark 4.0 reads "tcp.flags & 0x12 == 0x12" as "(tcp.flags & 0x12) == 0x12"
                left = self.masked(left, right, (nk, nt, ncol))
                self.take()
                if self.peek()[0] == "end":
                    self.error(f"expected a value after {at!r}")
                right = self.value(lhs=False)
                return self.compare(OPS[at], left, right, quant, (ak, at, acol))
            return self.compare(op, left, right, quant, (nk, nt, ncol))
        if nk == "op" and nt == "in":
            self.take()
            f = self.members(left)
            return (lambda g: lambda o: not g(o))(f) if negate_in else f
        if quant:
            self.error("expected a comparison after 'any'/'all'", (nk, nt, ncol))
        if nk not in ("end",) and nt not in (")", "&&", "||", "and", "or", "xor", "^^"):
            self.error(f"expected an operator after {left.name or 'the value'!r}", (nk, nt, ncol))
        return self.present(left)

    def masked(self, left: Val, right: Val, optok) -> Val:
        """``left & right`` as a value (its bits, or bytes ANDed byte by byte), to compare."""
        if not isinstance(right, _LitVal):
            self.error("'&' before a comparison needs a constant mask on its right", optok)
        if isinstance(left, _LitVal):
            self.error(f"expected a field name, not {left.lit.text!r}", (None, None, left.lit.col))
        m = self.literal_for(right.lit, left, "&", optok)
        lv = left.vals
        if isinstance(m, (bytes, bytearray)):
            mb = bytes(m)
            return Val(lambda o: [bytes(p & q for p, q in zip(x, mb)) for x in lv(o) if isinstance(x, (bytes, bytearray))],
                       T.BYTES, None, f"{left.name} & {right.lit.text}", left.col)
        ft = T.UINT if left.ftype == T.BOOL else left.ftype
        return Val(lambda o: [x & m for x in lv(o)], ft, None, f"{left.name} & {right.lit.text}", left.col)

    def present(self, v: Val):
        if v.raw is not None:  # a wirefall name on an object: present and not false/empty
            raw = v.raw

            def pres(o):
                x = raw(o)
                if isinstance(x, list) and type(o) is PacketView:
                    return any(y is not None and y is not False and y != "" for y in x)
                return x is not None and x is not False and x != "" and x != []

            return pres
        vals = v.vals
        if v.ftype is None:
            return lambda o: any(y is not None and y is not False and y != "" for y in vals(o))
        return lambda o: bool(vals(o))

    def value(self, lhs: bool) -> Val:
        d0 = self.depth
        left = self.term(lhs)
        while True:
            nk, nt, ncol = self.peek()
            if nk == "word" and _NEG_NUM.fullmatch(nt):  # "frame.len -1 == 2": tshark 4.0 reads a subtraction
                self.take()
                self.enter((nk, nt, ncol))
                right: Val = _LitVal(Lit(nt[1:], False, ncol + 1))
                left = self.arith("-", left, right, (nk, "-", ncol))
                continue
            if not (nt in ("+", "-") and nk == "op"):
                break
            tok = self.take()
            self.enter(tok)
            right = self.term(lhs)
            left = self.arith(tok[1], left, right, tok)
        self.depth = d0
        return left

    def term(self, lhs: bool) -> Val:
        left = self.unary(lhs)
        while self.peek()[1] in ("*", "/", "%") and self.peek()[0] == "op":
            tok = self.take()
            self.enter(tok)
            right = self.unary(lhs)
            left = self.arith(tok[1], left, right, tok)
        return left

    def unary(self, lhs: bool) -> Val:
        tok = self.peek()
        if tok[1] == "+" and tok[0] == "op":  # tshark 4.0 takes a unary plus
            self.take()
            self.enter(tok)
            inner = self.atom(lhs)
            self.depth -= 1
            if inner.ftype is not None and inner.ftype not in T.NUMERIC:
                self.error(f"{inner.name or 'value'} is not a number: it cannot take '+'", tok)
            if isinstance(inner, _LitVal) and inner.lit.text[:1] in ("-", "+"):
                self.error(f"{inner.lit.text[0]!r} was unexpected after '+'", (None, None, inner.lit.col))
            return inner
        if tok[1] == "-" and tok[0] == "op":
            self.take()
            self.enter(tok)
            inner = self.unary(lhs)
            self.depth -= 1
            return self.arith("-", Val(lambda o: [0], T.INT, col=tok[2]), inner, tok)
        return self.atom(lhs)

    def arith(self, op: str, a: Val, b: Val, tok) -> Val:
        for v in (a, b):
            if v.ftype is not None and v.ftype not in T.NUMERIC and not isinstance(v, _LitVal):
                self.error(f"{v.name or 'value'} is not a number: it cannot take {op!r}", tok)
        a, b = self.lit_numeric(a), self.lit_numeric(b)
        fn = {"+": lambda x, y: x + y, "-": lambda x, y: x - y, "*": lambda x, y: x * y,
              "/": lambda x, y: x // y if isinstance(x, int) and isinstance(y, int) else x / y,
              "%": lambda x, y: x % y}[op]
        av, bv = a.vals, b.vals

        def vals(o):
            out = []
            for x in av(o)[:64]:
                for y in bv(o)[:64]:
                    try:
                        out.append(fn(x, y))
                    except (ZeroDivisionError, TypeError):
                        pass
            return out

        ft = T.FLOAT if T.FLOAT in (a.ftype, b.ftype) or T.ABSTIME in (a.ftype, b.ftype) else (a.ftype or b.ftype or T.INT)
        if ft == T.UINT:
            ft = T.INT
        return Val(vals, ft, None, a.name or b.name, a.col)

    def lit_numeric(self, v: Val) -> Val:
        if isinstance(v, _LitVal):
            x: int | float | None = _parse_int(v.lit.text)
            if x is None:
                try:
                    if not _FLOAT.fullmatch(v.lit.text):  # float() would take "inf", "nan": tshark does not
                        raise ValueError(v.lit.text)
                    x = float(v.lit.text)
                except ValueError:
                    raise FilterError(f"{v.lit.text!r} is not a number", v.lit.col, self.expr) from None
            return Val(lambda o, x=x: [x], T.FLOAT if isinstance(x, float) else T.INT, col=v.lit.col)
        return v

    def atom(self, lhs: bool) -> Val:
        kind, text, col = self.take()
        if kind == "op" and text == "{":  # tshark 4.0 groups arithmetic with braces
            self.enter((kind, text, col))
            inner = self.value(lhs)
            self.depth -= 1
            if self.peek()[1] != "}":
                self.error("expected '}'")
            self.take()
            return inner
        if kind == "word" and self.peek()[1] == "(" and self.peek()[0] == "op":
            if text in _FUNCS:
                return self.function(text, col)
            if re.fullmatch(r"[A-Za-z_]\w*", text):
                self.error(f"unknown function {text!r} (functions: {', '.join(sorted(_FUNCS))})", (kind, text, col))
        if kind == "str":
            raw = text.startswith("r")
            body = text[2:-1] if raw else text[1:-1]
            return self.sliced(_LitVal(Lit(body if raw else _unescape(body), True, col)))
        if kind == "char":
            return _LitVal(Lit(text[1:-1], True, col, char=True))
        if kind == "word":
            if lhs and _FLOAT.fullmatch(text) or _INT.fullmatch(text):  # a number (arithmetic, or "5 < frame.number")
                return _LitVal(Lit(text, False, col))
            v = self.resolve(text, col, rhs=not lhs)
            if v is None and not lhs and self.peek()[0] == "slice" and _fields.lookup(text) is not None:
                v = self.resolve(text, col)  # a protocol sliced on the right: ip.src == ip[12:4]
            if v is None:
                return _LitVal(Lit(text, False, col))
            return self.sliced(v)
        if kind == "end":
            self.error("expression ends too early", (kind, text, col))
        self.error("expected a field name" if lhs else "expected a value", (kind, text, col))

    def sliced(self, v: Val) -> Val:
        while self.peek()[0] == "slice":
            kind, text, col = self.take()
            if isinstance(v, _LitVal):
                self.error("a literal cannot be sliced", (kind, text, col))
            if v.ftype in (T.UINT, T.INT, T.BOOL) and v.field is not None:  # (tshark 4.0 slices no integer: review 26)
                size = f" ({plural(v.field.size, 'byte')})" if v.field.size else ""
                self.error(f"{v.name} is {'a boolean' if v.ftype == T.BOOL else 'an integer'}{size} and cannot be sliced "
                           "into a sequence of bytes", (kind, text, col))
            if v.ftype is not None and v.ftype not in T.BYTELIKE:
                self.error(f"{v.name} is {'a protocol wirefall has no bytes of' if v.ftype == T.PROTO_OPAQUE else 'not a byte field'}: "
                           f"it cannot be sliced", (kind, text, col))
            fn = _slice_fn(text[1:-1], col, self.expr)
            vals, ft = v.vals, v.ftype

            def svals(o, vals=vals, ft=ft, fn=fn):
                out = []
                for x in vals(o):
                    b = _as_bytes(x, ft)
                    if b is not None:
                        out.append(fn(b))
                return out

            v = Val(svals, T.BYTES, None, v.name + text, v.col)
        return v

    def function(self, name: str, col: int) -> Val:
        self.take()  # (
        args = [self.value(lhs=True)]
        while name in ("min", "max") and self.peek()[1] == ",":  # tshark 4.0: max(a, b, …)
            self.take()
            args.append(self.value(lhs=True))
        if self.peek()[1] != ")":
            self.error(f"expected ')' after the argument{'s' if name in ('min', 'max') else ''} of {name}()")
        self.take()
        for a in args:
            if isinstance(a, _LitVal):
                self.error(f"{name}() takes a field", (None, name, col))
        arg = args[0]
        av, ft = arg.vals, arg.ftype
        if name == "count":  # no occurrence: no value (tshark 4.0: count(absent) == 0 is false)
            return Val(lambda o: [n] if (n := len(av(o))) else [], T.UINT, None, f"count({arg.name})", col)
        if name in ("abs", "min", "max"):
            for a in args:
                if a.ftype is not None and a.ftype not in T.NUMERIC:
                    self.error(f"{name}() takes number fields, not {a.name}", (None, name, col))
            if name == "abs":
                fts = T.FLOAT if ft == T.FLOAT else T.UINT if ft in (T.INT, T.UINT, T.BOOL) else ft
                return Val(lambda o: [abs(x) for x in av(o)], fts, None, f"abs({arg.name})", col)
            if len({a.ftype for a in args}) > 1:
                self.error(f"the arguments of {name}() must have the same type", (None, name, col))
            pick = min if name == "min" else max
            fns = tuple(a.vals for a in args)
            fts = T.FLOAT if any(a.ftype == T.FLOAT for a in args) else ft

            def extreme(o):
                xs = [x for f in fns for x in f(o)]
                return [pick(xs)] if xs else []

            return Val(extreme, fts, None, f"{name}({', '.join(a.name for a in args)})", col)
        if name == "len":
            size = arg.field.size if arg.field is not None else 0
            if ft in (T.UINT, T.INT) and size:  # tshark: an integer field's length is its size in bytes
                return Val(lambda o: [size for _ in av(o)], T.UINT, None, f"len({arg.name})", col)
            if ft is not None and ft not in T.BYTELIKE:
                self.error(f"len() takes a string or byte field, not {arg.name}", (None, name, col))

            def lens(o):
                out = []
                for x in av(o):
                    b = _as_bytes(x, ft) if not isinstance(x, str) else x
                    if b is not None:
                        out.append(len(b))
                return out
            return Val(lens, T.UINT, None, f"len({arg.name})", col)
        if name == "string":
            # tshark 4.0 converts integers (in decimal, whatever their display base) and
            # addresses (as shown); booleans, times, bytes, protocols are "not supported"
            conv: Callable[[Any], str] = str
            if ft == T.IPV4:
                conv = _ipv4_str
            elif ft == T.IPV6:
                conv = _ipv6_str
            elif ft == T.ETHER:
                conv = _ether_str
            elif ft is not None and ft not in (T.UINT, T.INT, T.STRING):
                self.error(f"string() cannot convert {arg.name} ({ft}): tshark 4.0 converts integer and address fields",
                           (None, name, col))
            return Val(lambda o: [conv(x) for x in av(o)], T.STRING, None, f"string({arg.name})", col)
        if ft is not None and ft != T.STRING:
            self.error(f"{name}() takes a string field, not {arg.name}", (None, name, col))
        case: Callable[[str], str] = str.upper if name == "upper" else str.lower
        return Val(lambda o: [case(str(x)) for x in av(o)], T.STRING, None, f"{name}({arg.name})", col)

    # -- comparisons
    def literal_for(self, lit: Lit, other: Val, op: str, optok) -> Any:
        if not lit.quoted and lit.text[1:2] in ("-", "+") and lit.text[:1] in ("-", "+"):
            # "--1", "+-1", "---1": tshark 4.0 lexes the second sign as an operator where none may be
            raise FilterError(f"{lit.text[1]!r} was unexpected in {lit.text!r}", lit.col + 1, self.expr)
        if op == "matches":
            if not lit.quoted or lit.char:
                raise FilterError("'matches' requires a double-quoted string on its right", lit.col, self.expr)
            if other.ftype in T.NUMERIC or other.ftype in (T.IPV4, T.IPV6):
                raise FilterError(f"{other.name} is not a string: it cannot take 'matches'", optok[2], self.expr)
            if other.ftype in (T.PROTO_OPAQUE, T.NONE):
                raise FilterError(f"{other.name} can only be tested for presence (it has no value to compare)", optok[2], self.expr)
            return self.regex(lit)
        if other.ftype is None:  # untyped wirefall name: as before
            t = lit.text
            if lit.quoted:
                return t
            if re.fullmatch(r"-?0x[0-9a-fA-F]+", t):
                return int(t, 16)
            if re.fullmatch(r"-?\d+", t):
                return int(t)
            if re.fullmatch(r"-?\d+\.\d+", t):
                return float(t)
            return t
        ftype = other.ftype
        if ftype in (T.PROTO_OPAQUE, T.NONE):
            raise FilterError(f"{other.name} can only be tested for presence (it has no value to compare)", optok[2], self.expr)
        if op == "contains" and ftype in T.NUMERIC:
            raise FilterError(f"{other.name} is a number: 'contains' needs a string or byte field", optok[2], self.expr)
        if op == "&" and ftype not in (T.UINT, T.INT, T.BOOL, T.BYTES):
            raise FilterError(f"{other.name} is not an integer or bytes: '&' tests bits of integers or byte strings", optok[2],
                              self.expr)
        if op == "contains" and ftype in (T.IPV4, T.IPV6, T.ETHER):
            ftype = T.BYTES
        if ftype not in T.NUMERIC and not lit.quoted and lit.text[:1] in ("-", "+"):
            raise FilterError(f"{other.name} is not a number: it cannot take {lit.text[0]!r}", lit.col, self.expr)
        try:
            v = _typed(lit, other.field, ftype)
        except _Bad as e:
            raise FilterError(f"{e} for {other.name}", lit.col, self.expr) from None
        if op == "&" and isinstance(v, tuple):
            raise FilterError(f"{other.name}: '&' needs an integer", lit.col, self.expr)
        return v

    def _posix_classes(self, pat: str, lit: Lit) -> str:
        """PCRE2's POSIX classes in a bracket expression (``[[:digit:]]``, tshark's regex library)
        as Python's ``re`` ranges: ``re`` compiled them without a word as another pattern (a set
        of '[', ':', 'd', … then ']'), and ``matches "[[:digit:]]"`` matched nothing (review 26).
        A negated one (``[:^digit:]``) or an unknown name is refused."""
        def one(m: re.Match) -> str:
            neg, name = m.group(1), m.group(2)
            if neg or name not in _POSIX_CLASSES:
                raise FilterError(f"regular expression refused: POSIX class [:{neg}{name}:] is not supported here",
                                  lit.col, self.expr)
            return _POSIX_CLASSES[name]
        return _POSIX_CLASS.sub(one, pat) if "[:" in pat else pat

    def regex(self, lit: Lit):
        pat = lit.text
        if _NESTED_QUANT.search(pat):
            raise FilterError("regular expression refused: a repeated group that itself repeats (like (a+)+) can take "
                              "exponential time", lit.col, self.expr)
        flags = re.I | re.S
        m = re.match(r"\(\?([imsx]*)(?:-([imsx]+))?\)", pat)
        if m and m.group(2):  # PCRE's "(?-i)" for the whole pattern; Python takes only "(?-i:…)" scoped
            bits = {"i": re.I, "m": re.M, "s": re.S, "x": re.X}
            for c in m.group(1):
                flags |= bits[c]
            for c in m.group(2):
                flags &= ~bits[c]
            pat = pat[m.end():]
        pat = self._posix_classes(pat, lit)
        try:
            return re.compile(pat, flags)
        except re.error as e:
            raise FilterError(f"bad regular expression: {e}", lit.col, self.expr) from None

    def compare(self, op: str, left: Val, right: Val, quant, optok):
        if isinstance(left, _LitVal) and not isinstance(right, _LitVal):
            left, right = right, left
            op = {"<": ">", ">": "<", "<=": ">=", ">=": "<="}.get(op, op)
            if op in ("contains", "matches"):
                self.error(f"'{optok[1]}' needs the field on its left", optok)
        if isinstance(left, _LitVal):
            self.error(f"expected a field name, not {left.lit.text!r}", (None, None, left.lit.col))
        if (left.name == "frame" and left.ftype == T.PROTO and isinstance(right, _LitVal) and not right.lit.quoted
                and right.lit.text.isdigit() and op not in ("contains", "matches", "&")):
            # wirefall's "frame == 5" (the packet number; a one-byte frame would be frame == 05)
            left = Val(lambda o: [o.n] if type(o) is PacketView else [v] if (v := _get(o, "packet")) is not None else [],
                       T.UINT, None, "frame", left.col)
        if quant == "any":  # any_ne
            op, quant = {"!=": "!=="}.get(op, op), None
        elif quant == "all":  # all_eq
            op = {"==": "==="}.get(op, op)
        if isinstance(right, _LitVal):
            b = self.literal_for(right.lit, left, op, optok)
            one = self.matcher(op, left.ftype, b, left.short)
            rv = None
        else:
            if op == "matches":
                self.error("'matches' needs a quoted regular expression on its right", optok)
            one = None
            rv = right.vals
            if left.ftype is not None and right.ftype is not None and op != "contains":
                if (left.ftype in T.NUMERIC) != (right.ftype in T.NUMERIC):
                    self.error(f"{left.name} and {right.name} cannot be compared (different types)", optok)
        lv = left.vals
        if one is not None:
            if quant == "all" or op == "===":
                return lambda o: bool(xs := lv(o)) and all(one(x) for x in xs)
            if op == "!=":  # all_ne: !(a == b) over a present field
                return lambda o: bool(xs := lv(o)) and all(one(x) for x in xs)
            return lambda o: any(one(x) for x in lv(o))
        assert rv is not None  # no literal on the right: its values (once per filter, not per packet)
        lt, rt = left.ftype, right.ftype

        def pair(o2, x, y):
            if lt is None or rt is None or (lt in T.BYTELIKE and rt in T.BYTELIKE and lt != rt):
                # (an IPv4/IPv6 value is an int: as bytes against a byte slice, ip[12:4] == ip.src)
                if not isinstance(x, (int, float)) or lt in _ADDR_INT:
                    x = _as_bytes(x, lt or T.STRING)
                if not isinstance(y, (int, float)) or rt in _ADDR_INT:
                    y = _as_bytes(y, rt or T.STRING)
                if x is None or y is None:
                    return False
            return _bcmp(o2, x, y)

        if op == "!=":  # all_ne
            return lambda o: bool(xs := lv(o)) and bool(ys := rv(o)) and not any(pair("==", x, y) for x in xs for y in ys)
        if op == "===" or quant == "all":
            o2 = "==" if op == "===" else op
            return lambda o: bool(xs := lv(o)) and bool(ys := rv(o)) and all(pair(o2, x, y) for x in xs for y in ys)
        o2 = "!=" if op == "!==" else op
        return lambda o: any(pair(o2, x, y) for x in lv(o) for y in rv(o))

    def matcher(self, op: str, ftype, b, short: bool) -> Callable[[Any], bool]:
        """One value against the literal ``b`` (already typed): True when it satisfies ``op``
        (for ``!=``: when it is not equal, the caller requiring all values to be so)."""
        if ftype is None:  # untyped wirefall name
            if op in ("!=",):
                return lambda x: not _loose("==", x, b)
            if op == "===":
                return lambda x: _loose("==", x, b)
            if op == "!==":
                return lambda x: not _loose("==", x, b)
            return lambda x: _loose(op, x, b)
        if op == "matches":
            rx = b
            if ftype in T.NUMERIC:
                return lambda x: rx.search(str(x)) is not None
            return lambda x: rx.search(x if isinstance(x, str) else bytes(x).decode("latin-1")) is not None
        if isinstance(b, tuple):  # address (value, mask)
            val, mask = b
            if op in ("==", "==="):
                return lambda x: (x & mask) == val
            if op in ("!=", "!=="):
                return lambda x: (x & mask) != val
            return lambda x: _cmp(op, x, val)
        if op == "contains":
            if ftype == T.STRING:
                s = b if isinstance(b, str) else b.decode("utf-8", "replace")
                return lambda x: s in x
            bb = b if isinstance(b, bytes) else str(b).encode()
            return lambda x: (bb in x) if isinstance(x, (bytes, bytearray)) else (bb in (_as_bytes(x, ftype) or b""))
        if op == "&":
            if isinstance(b, (bytes, bytearray)):  # bytes: any bit set in both, byte by byte from the start (tshark's)
                return lambda x: isinstance(x, (bytes, bytearray)) and any(p & q for p, q in zip(x, b))
            return lambda x: bool(x & b)
        if op in ("!=", "!=="):
            return lambda x: x != b
        if op == "===":
            return lambda x: x == b
        if isinstance(b, (bytes, bytearray)):
            return lambda x: _bcmp(op, x, b)
        return lambda x: _cmp(op, x, b)

    def members(self, left: Val):
        if self.peek()[1] != "{":
            self.error("expected '{' after 'in'")
        self.take()
        if isinstance(left, _LitVal):
            self.error(f"expected a field name, not {left.lit.text!r}", (None, None, left.lit.col))
        tests: list[Callable[[Any], bool]] = []
        want = True  # a member is expected (tshark 4.0: "{}", "{1 2}", "{1,,2}" are errors)
        while self.peek()[1] != "}" or want:
            tok = self.peek()
            if tok[0] == "end":
                self.error("expected '}'")
            if tok[1] == ",":
                if want:
                    self.error("expected a value in the set", tok)
                self.take()
                want = True
                continue
            if not want and left.ftype is not None:  # (wirefall's own names keep "{GET HEAD}")
                self.error("expected ',' or '}' in the set", tok)
            want = False
            if (tok[0] == "word" and self.peek(1)[0] == "word" and self.peek(1)[1] == ".."
                    and self.peek(2)[0] == "word"):  # "1 .. 3": a range written with spaces
                lo_t, _dots, hi_t = self.take(), self.take(), self.take()
                lo = self.literal_for(Lit(lo_t[1], False, lo_t[2]), left, ">=", lo_t)
                hi = self.literal_for(Lit(hi_t[1], False, hi_t[2]), left, "<=", hi_t)
                tests.append((lambda lo, hi: lambda x: _bcmp(">=", x, lo) and _bcmp("<=", x, hi))(lo, hi))  # noqa: B023
                continue
            if len(tests) >= MAX_SET:
                self.error(f"too many set members (more than {MAX_SET})")
            kind, text, col = self.take()
            if kind not in ("word", "str", "char"):
                self.error("expected a value in the set", (kind, text, col))
            lo_hi = None
            if kind == "word" and ".." in text:
                lo_s, _, hi_s = text.partition("..")
                if lo_s and hi_s:
                    lo_hi = (lo_s, hi_s)
            if lo_hi is not None:
                lo = self.literal_for(Lit(lo_hi[0], False, col), left, ">=", (kind, text, col))
                hi = self.literal_for(Lit(lo_hi[1], False, col), left, "<=", (kind, text, col))
                tests.append((lambda lo, hi: lambda x: _bcmp(">=", x, lo) and _bcmp("<=", x, hi))(lo, hi))  # noqa: B023 (bound by the outer lambda)
                continue
            if kind == "str":
                lit = Lit(_unescape(text[1:-1]) if not text.startswith("r") else text[2:-1], True, col)
            elif kind == "char":
                lit = Lit(text[1:-1], True, col, char=True)
            else:
                lit = Lit(text, False, col)
            b = self.literal_for(lit, left, "==", (kind, text, col))
            tests.append(self.matcher("==", left.ftype, b, left.short))
        self.take()
        lv = left.vals
        ts = tuple(tests)
        return lambda o: any(t(x) for x in lv(o) for t in ts)


class _LitVal(Val):
    __slots__ = ("lit",)

    def __init__(self, lit: Lit):
        super().__init__(lambda o: [], None, None, "", lit.col)
        self.lit = lit


_EXAMPLES = {"exchanges": ("method", "url", "status", "stream", "protocol", "content_type", "header.NAME"),
             "connections": ("id", "protocol", "transport", "client", "server", "tls.sni", "closed")}


def _any_of(parts):
    fs = tuple(parts)
    return lambda o: any(f(o) for f in fs)


_ADDR_INT = (T.IPV4, T.IPV6)
_ORDER = frozenset(("<", "<=", ">", ">="))


def _bcmp(op: str, x, y) -> bool:
    """``_cmp`` where either side may be a byte string: tshark 4.0 orders byte strings by
    length first, then byte by byte (``tcp.payload > 80:00`` is every payload longer than 2)."""
    if op in _ORDER and isinstance(x, (bytes, bytearray)) and isinstance(y, (bytes, bytearray)) and len(x) != len(y):
        x, y = len(x), len(y)
    return _cmp(op, x, y)


def _cmp(op: str, x, y) -> bool:
    try:
        if op == "==":
            return x == y
        if op == "!=":
            return x != y
        if op == "<":
            return x < y
        if op == "<=":
            return x <= y
        if op == ">":
            return x > y
        if op == ">=":
            return x >= y
        if op == "contains":
            return y in x
    except TypeError:
        return False
    return False


class Filter:
    """A compiled filter: call it on an object (``bool``); ``expr`` and ``scope`` as given."""

    __slots__ = ("expr", "scope", "_pred")

    def __init__(self, expr: str, scope, pred):
        self.expr, self.scope, self._pred = expr, scope, pred

    def __call__(self, obj) -> bool:
        return bool(self._pred(obj))


def compile_filter(expr: str, scope: str | None = None) -> Filter:
    """Compile ``expr`` into a predicate over ``scope``'s objects (see the module docstring):
    ``"packets"`` (``PacketView``), ``"frames"``, ``"exchanges"``, ``"connections"`` or None
    (anything: frames, exchanges, connections or their JSON dicts, as before).
    Raises ``FilterError`` (with the column) for a bad expression or a name the scope lacks."""
    if scope not in (None, "packets", "frames", "exchanges", "connections"):
        raise ValueError(f"unknown filter scope {scope!r}")
    return Filter(expr or "", scope, _Parser(expr or "", scope).parse())


def filter_packets(an, source, expr: str | Filter, progress: Callable[[int, int], None] | None = None) -> array:
    """Numbers of the packets of ``an`` that ``expr`` (compiled for ``"packets"``) matches,
    in order.  ``source`` is a ``PacketSource`` on the capture (bytes are read only for the
    packets and layers the filter needs).  A predicate that fails on a packet (a bug) does
    not match it."""
    f = expr if isinstance(expr, Filter) and expr.scope == "packets" else compile_filter(expr.expr if isinstance(expr, Filter) else expr, "packets")
    out = array("i")
    npk = an.packets
    if not f.expr.strip():
        out.extend(range(1, npk + 1))
        return out
    ctx = PacketContext(an, source)
    pred = f._pred
    for n in range(1, npk + 1):
        pv = PacketView(ctx, n)
        try:
            ok = pred(pv)
        except Exception:  # noqa: BLE001 - one bad packet must not stop the list
            ok = False
        if ok:
            out.append(n)
        if progress is not None and not n & 0xFFFF:
            progress(n, npk)
    return out
