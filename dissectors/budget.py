"""Running totals against caps: the one mechanism behind wirefall's per-connection and
per-capture budgets (decoded header bytes, decompression work, state per flow …).

Sans-IO and dependency-free, so dissectors can charge work as they do it.  A budget may
have a parent: a connection's budget charges the capture's too, and either one running
out refuses the work.  Once refused, a budget stays exhausted (``hit``) so that callers
can mark what was not decoded and say so once, not at every frame.

    capture = Budget("hpack_decoded_bytes", 256 << 20)
    conn = capture.child(16 << 20)
    if not conn.take(len(block_out)):
        ...  # mark the block "not decoded: budget hpack_decoded_bytes"
"""
from __future__ import annotations


class Budget:
    __slots__ = ("name", "cap", "used", "parent", "hit", "refused")

    def __init__(self, name: str, cap: int, parent: Budget | None = None) -> None:
        self.name = name
        self.cap = cap
        self.used = 0
        self.parent = parent
        self.hit = False  # this budget (or its parent) refused work at least once
        self.refused = 0  # units of work refused

    def child(self, cap: int) -> Budget:
        """A budget of ``cap`` that also charges this one (a connection within a capture)."""
        return Budget(self.name, cap, self)

    def room(self) -> int:
        """How many units may still be taken."""
        r = self.cap - self.used
        b = self.parent
        while b is not None:  # (a loop, not a call per level: asked per listed frame and header block)
            if b.cap - b.used < r:
                r = b.cap - b.used
            b = b.parent
        return r if r > 0 else 0

    def take(self, n: int) -> bool:
        """Charge ``n`` units; False (and nothing charged) when this or a parent cannot.
        Each budget that lacked the room is marked ``hit``; so is this one."""
        if self.hit or n > self.room():
            self.hit = True
            self.refused += n
            b: Budget | None = self.parent
            while b is not None:
                if n > b.cap - b.used:
                    b.hit = True
                    b.refused += n
                b = b.parent
            return False
        b = self
        while b is not None:
            b.used += n
            b = b.parent
        return True

    def charge(self, n: int) -> bool:
        """Charge ``n`` units even past the cap (work already done); False once over."""
        b: Budget | None = self
        over = False
        while b is not None:
            b.used += n
            if b.used > b.cap:
                b.hit = True
                over = True
            b = b.parent
        if over:
            self.hit = True
        return not over

    @property
    def exhausted(self) -> bool:
        return self.hit or self.room() <= 0

    def __repr__(self) -> str:
        return f"Budget({self.name!r}, {self.used}/{self.cap}{', hit' if self.hit else ''})"
