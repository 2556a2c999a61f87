"""A small display-filter language in Wireshark's style, shared by CLI, TUI and web.

    stream == 5 && type == "HEADERS"
    url contains "css" || status >= 400
    !(protocol == "h2") and method in {"GET" "HEAD"}

Fields are the JSON names of frames, requests and connections (``stream_id`` — alias
``stream`` —, ``type``, ``url``, ``status``, ``protocol``, ``method``, ``packet``,
``connection``, ``direction``, ``length``, ``content_type`` …); ``header.NAME`` reads a
header (request or response); a bare field tests that it is present and not false/empty.
Operators: ``== != < <= > >= contains matches`` (``eq ne lt le gt ge ~`` too) and ``in {…}``;
``&& || !`` (``and or not``) and parentheses.  Strings compare case-sensitively except
``contains``/``matches`` on header names.  A bad expression raises ``FilterError`` with the
column (1-based) where it went wrong.
"""
from __future__ import annotations

import re
from typing import Any, Callable

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

OPS = {"==": "==", "eq": "==", "!=": "!=", "ne": "!=", "<": "<", "lt": "<", "<=": "<=", "le": "<=",
       ">": ">", "gt": ">", ">=": ">=", "ge": ">=", "contains": "contains", "matches": "matches", "~": "matches"}

_TOKEN = re.compile(
    r"""\s*(?:
    (?P<str>"(?:[^"\\]|\\.)*")|
    (?P<num>-?(?:0x[0-9a-fA-F]+|\d+(?:\.\d+)?)(?![\w.]))|
    (?P<op>==|!=|<=|>=|<|>|~|&&|\|\||!|\(|\)|\{|\}|,)|
    (?P<word>[A-Za-z_][\w.\-:]*)
    )""",
    re.X,
)


_KEYWORDS = {"and", "or", "not", "in"} | {k for k in OPS if k.isalpha()}


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
    out = []
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
        text = m.group(kind)
        col = m.start(kind) + 1
        if kind == "word" and text.lower() in _KEYWORDS:
            kind = "op"
            text = text.lower()
        out.append((kind, text, col))
        pos = m.end()
    out.append(("end", "", n + 1))
    return out


def _get(obj: Any, name: str) -> Any:
    name = ALIASES.get(name, name)
    if name.startswith("header.") or name.startswith("headers."):
        h = name.split(".", 1)[1].lower()
        for attr in ("request_headers", "response_headers", "headers"):
            hs = obj.get(attr) if isinstance(obj, dict) else getattr(obj, attr, None)
            for k, v in hs or ():
                if k.lower() == h:
                    return v
        return None
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


def _compare(op: str, a: Any, b: Any) -> bool:
    if a is None:
        return False
    if isinstance(a, (list, tuple)) and op in ("==", "contains"):  # multi-valued field
        return any(_compare(op, x, b) for x in a)
    if op == "contains":
        return str(b).lower() in str(a).lower() if isinstance(b, str) else False
    if op == "matches":
        try:
            return re.search(b, str(a), re.I) is not None
        except re.error:
            return False
    if isinstance(b, (int, float)) and not isinstance(a, (int, float)):
        try:
            a = float(a)
        except (TypeError, ValueError):
            return False
    elif isinstance(b, str) and not isinstance(a, str):
        a = str(a)
    try:
        if op == "==":
            return a == b
        if op == "!=":
            return a != b
        if op == "<":
            return a < b
        if op == "<=":
            return a <= b
        if op == ">":
            return a > b
        if op == ">=":
            return a >= b
    except TypeError:
        return False
    return False


class _Parser:
    def __init__(self, expr: str):
        self.expr = expr
        self.toks = _tokenize(expr)
        self.i = 0

    def peek(self):
        return self.toks[self.i]

    def take(self):
        t = self.toks[self.i]
        self.i += 1
        return t

    def error(self, msg: str, tok=None):
        tok = tok or self.peek()
        raise FilterError(msg, tok[2], self.expr)

    def parse(self) -> Callable[[Any], bool]:
        if self.peek()[0] == "end":
            return lambda obj: True
        f = self.or_()
        if self.peek()[0] != "end":
            self.error(f"unexpected {self.peek()[1]!r}")
        return f

    def or_(self):
        left = self.and_()
        while self.peek()[1] in ("||", "or"):
            self.take()
            right = self.and_()
            left = (lambda l, r: lambda o: l(o) or r(o))(left, right)
        return left

    def and_(self):
        left = self.not_()
        while self.peek()[1] in ("&&", "and"):
            self.take()
            right = self.not_()
            left = (lambda l, r: lambda o: l(o) and r(o))(left, right)
        return left

    def not_(self):
        if self.peek()[1] in ("!", "not"):
            self.take()
            inner = self.not_()
            return lambda o: not inner(o)
        return self.primary()

    def value(self):
        kind, text, col = self.take()
        if kind == "str":
            return bytes(text[1:-1], "utf-8").decode("unicode_escape")
        if kind == "num":
            return int(text, 16) if text.lower().startswith(("0x", "-0x")) else (float(text) if "." in text else int(text))
        if kind == "word":
            return text
        self.error("expected a value", (kind, text, col))

    def primary(self):
        kind, text, col = self.peek()
        if text == "(":
            self.take()
            inner = self.or_()
            if self.peek()[1] != ")":
                self.error("expected ')'")
            self.take()
            return inner
        if kind != "word":
            self.error("expected a field name" if kind != "end" else "expression ends too early")
        self.take()
        field = text
        nk, nt, ncol = self.peek()
        if nt in OPS and nk == "op":
            self.take()
            op = OPS[nt]
            if self.peek()[0] == "end":
                self.error(f"expected a value after {nt!r}")
            val = self.value()
            if op == "matches":
                try:
                    re.compile(val)
                except re.error as e:
                    self.error(f"bad regular expression: {e}", (nk, nt, ncol))
            return lambda o: _compare(op, _get(o, field), val)
        if nt == "in":
            self.take()
            if self.peek()[1] != "{":
                self.error("expected '{' after 'in'")
            self.take()
            vals = []
            while self.peek()[1] != "}":
                if self.peek()[0] == "end":
                    self.error("expected '}'")
                if self.peek()[1] == ",":
                    self.take()
                    continue
                vals.append(self.value())
            self.take()
            return lambda o: any(_compare("==", _get(o, field), v) for v in vals)
        if nk not in ("end",) and nt not in (")", "&&", "||", "and", "or"):
            self.error(f"expected an operator after {field!r}", (nk, nt, ncol))

        def present(o):
            v = _get(o, field)
            return v is not None and v is not False and v != "" and v != []

        return present


def compile_filter(expr: str) -> Callable[[Any], bool]:
    """Compile ``expr`` into a predicate over frames, exchanges, connections or dicts."""
    return _Parser(expr or "").parse()
