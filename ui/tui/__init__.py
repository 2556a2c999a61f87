"""The wirefall terminal UI.  ``run(path, keylogs)`` opens a capture (``wirefall FILE``,
``wirefall tui FILE --keylog K``)."""
from __future__ import annotations


def run(path: str, keylogs: list[str] | None = None) -> int:
    from .app import WirefallApp

    app = WirefallApp(path, keylogs or [])
    app.run()
    return 1 if app.load_error else 0


__all__ = ["run"]
