"""The wirefall terminal UI.  ``run(path, keylogs)`` opens a capture (``wirefall FILE``,
``wirefall tui FILE --keylog K``); ``compare=B`` (``wirefall tui A --compare B
[--keylog-b KB]``) opens the compare view of A against B (B is read with A's key logs and
``keylogs_b``); ``use_cache`` (``--cache``) reads and stores the analysis of ``path`` in the
analysis cache (``analyzer.cache``); ``limits`` (``--limit NAME=N``) go to ``analyze``; ``overlays`` (``--har/--netlog/--qlog``):
``(kind, path)`` of browser logs laid over the capture (``analyzer.browserlog.overlay``); ``overlays_b``
(``--har-b/--netlog-b/--qlog-b``) those laid over B in the compare view."""
from __future__ import annotations


def run(path: str, keylogs: list[str] | None = None, compare: str | None = None, keylogs_b: list[str] | None = None,
        use_cache: bool = False, limits: dict | None = None, overlays: list[tuple[str, str]] | None = None,
        overlays_b: list[tuple[str, str]] | None = None) -> int:
    from .app import WirefallApp

    app = WirefallApp(path, keylogs or [], compare=compare, keylogs_b=keylogs_b or [], use_cache=use_cache, limits=limits,
                      overlays=overlays, overlays_b=overlays_b)
    app.run()
    return 1 if app.load_error else 0


__all__ = ["run"]
