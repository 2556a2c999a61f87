#!/usr/bin/env python3
"""Deterministic test page for the wirefall capture lab.

Writes an HTML page with N sub-resources of realistic types and sizes:
stylesheets, scripts, JPEG photos, PNG icons and a JSON document (fetched by
script, announced with <link rel=preload> so it delays the load event and a
headless browser that dumps the DOM after `load` has fetched it).

Images are real: PNGs are written with zlib + struct (a valid, decodable
file; the format is simple enough that no imaging library is needed), JPEGs
are encoded by `cjpeg` (Debian package libjpeg-turbo-progs) from a PPM drawn
here. Everything is a pure function of (count, seed), so two runs write
byte-identical files (given the same cjpeg version).

    python scripts/lab/page/generate.py OUTDIR [--count 12]

`resources(count)` gives the list without writing anything (the tests use it).
The favicon is suppressed with `<link rel=icon href="data:,">`, so a browser
fetches exactly index.html + the listed resources.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
import shutil
import struct
import subprocess
import sys
import zlib
from pathlib import Path

# Base set, in the order resources are taken when count < len(BASE).
# (path, kind, target size in bytes or (width, height) for images)
BASE = [
    ("/css/main.css", "css", 24_000),
    ("/js/vendor.js", "js", 90_000),
    ("/img/hero.jpg", "jpeg", (800, 400)),
    ("/js/app.js", "js", 30_000),
    ("/img/logo.png", "png", (200, 60)),
    ("/img/photo-1.jpg", "jpeg", (400, 300)),
    ("/img/photo-2.jpg", "jpeg", (400, 300)),
    ("/data/config.json", "json", 4_000),
    ("/css/theme.css", "css", 6_000),
    ("/img/icon-1.png", "png", (32, 32)),
    ("/img/icon-2.png", "png", (32, 32)),
    ("/js/analytics.js", "js", 8_000),
]
CONTENT_TYPES = {"css": "text/css", "js": "application/javascript", "jpeg": "image/jpeg",
                 "png": "image/png", "json": "application/json", "html": "text/html"}


def resources(count: int = 12) -> list[dict]:
    """The page's sub-resources (not index.html), in document order."""
    out = []
    for i in range(count):
        if i < len(BASE):
            path, kind, size = BASE[i]
        else:  # beyond the base set: alternate thumbnails and small scripts
            n = i - len(BASE) + 1
            if n % 3:
                path, kind, size = f"/img/thumb-{n}.jpg", "jpeg", (160 + 8 * (n % 5), 120)
            else:
                path, kind, size = f"/js/module-{n}.js", "js", 3_000 + 500 * (n % 7)
        out.append({"path": path, "kind": kind, "content_type": CONTENT_TYPES[kind],
                    "size" if isinstance(size, int) else "dims": size})
    return out


def request_paths(count: int = 12) -> list[str]:
    """Every path a browser requests for the page: '/' then each resource."""
    return ["/"] + [r["path"] for r in resources(count)]


# ---------------------------------------------------------------- text bodies

_WORDS = ("header nav card grid item panel button title footer list media badge "
          "modal tooltip avatar banner sidebar content wrapper layout").split()


def _css(path: str, size: int, rng: random.Random) -> bytes:
    lines = [f"/* {path}: generated stylesheet for the wirefall test page */"]
    n = 0
    while sum(len(x) + 1 for x in lines) < size:
        a, b = rng.choice(_WORDS), rng.choice(_WORDS)
        lines.append(
            f".{a}-{b}-{n} {{ margin: {rng.randint(0, 24)}px {rng.randint(0, 24)}px; "
            f"padding: {rng.randint(0, 16)}px; color: #{rng.randrange(0x1000000):06x}; "
            f"font-size: {rng.randint(10, 28)}px; border-radius: {rng.randint(0, 8)}px; }}")
        n += 1
    return ("\n".join(lines) + "\n").encode()[:size]


def _js(path: str, size: int, rng: random.Random, extra: str = "") -> bytes:
    head = f"/* {path}: generated script for the wirefall test page */\n(function () {{\n'use strict';\n"
    tail = extra + "})();\n"
    body, n = [], 0
    budget = size - len(head) - len(tail)
    while sum(len(x) + 1 for x in body) < budget:
        a, b = rng.choice(_WORDS), rng.choice(_WORDS)
        body.append(f"function {a}_{b}_{n}(x, y) {{ var t = x * {rng.randint(2, 97)} + y; "
                    f"return t % {rng.randint(3, 1000)} === 0 ? '{a}' : t; }}")
        n += 1
    text = head + "\n".join(body) + "\n"
    text = text[: max(len(head), budget)]
    # never cut in the middle of a statement: drop the partial last line
    text = text[: text.rfind("\n") + 1] if not text.endswith("\n") else text
    return (text + tail).encode()


def _json(size: int, rng: random.Random) -> bytes:
    items, doc = [], {}
    while True:
        items.append({"id": len(items) + 1, "name": f"{rng.choice(_WORDS)}-{len(items)}",
                      "enabled": rng.random() < 0.5, "weight": rng.randint(1, 1000)})
        doc = {"version": 3, "features": items}
        if len(json.dumps(doc, indent=1)) >= size:
            items.pop()
            doc = {"version": 3, "features": items}
            return (json.dumps(doc, indent=1) + "\n").encode()


# ---------------------------------------------------------------- images

def _pixels(w: int, h: int, rng: random.Random, noise: int) -> bytearray:
    """RGB picture: gradient sky, a few discs, sine hills and a little noise."""
    discs = [(rng.randrange(w), rng.randrange(h), rng.randint(h // 10 + 1, h // 3 + 2),
              (rng.randrange(256), rng.randrange(256), rng.randrange(256))) for _ in range(4)]
    ph = rng.random() * 6.28
    buf = bytearray(w * h * 3)
    i = 0
    for y in range(h):
        for x in range(w):
            r, g, b = 40 + 120 * y // h, 90 + 100 * x // w, 200 - 80 * y // h
            hill = h * (0.65 + 0.12 * math.sin(x / w * 9 + ph))
            if y > hill:
                r, g, b = 50 + (x * 7 + y * 3) % 40, 120 + (y % 30), 40
            for cx, cy, cr, col in discs:
                if (x - cx) ** 2 + (y - cy) ** 2 < cr * cr:
                    r, g, b = col
            if noise:
                d = rng.randint(-noise, noise)
                r, g, b = r + d, g + d, b + d
            buf[i] = min(255, max(0, r))
            buf[i + 1] = min(255, max(0, g))
            buf[i + 2] = min(255, max(0, b))
            i += 3
    return buf


def _png(w: int, h: int, rng: random.Random) -> bytes:
    px = _pixels(w, h, rng, noise=0)
    raw = b"".join(b"\x00" + bytes(px[y * w * 3:(y + 1) * w * 3]) for y in range(h))

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def _jpeg(w: int, h: int, rng: random.Random) -> bytes:
    cjpeg = shutil.which("cjpeg")
    if not cjpeg:
        sys.exit("generate.py: cjpeg not found (apt-get install libjpeg-turbo-progs)")
    ppm = b"P6\n%d %d\n255\n" % (w, h) + bytes(_pixels(w, h, rng, noise=18))
    return subprocess.run([cjpeg, "-quality", "85", "-optimize"], input=ppm,
                          capture_output=True, check=True).stdout


# ---------------------------------------------------------------- page

def _html(res: list[dict]) -> bytes:
    css = [r for r in res if r["kind"] == "css"]
    js = [r for r in res if r["kind"] == "js"]
    img = [r for r in res if r["kind"] in ("jpeg", "png")]
    jsn = [r for r in res if r["kind"] == "json"]
    h = ["<!DOCTYPE html>", "<html lang=\"en\">", "<head>", "<meta charset=\"utf-8\">",
         "<title>wirefall test page</title>", "<link rel=\"icon\" href=\"data:,\">"]
    h += [f"<link rel=\"stylesheet\" href=\"{r['path']}\">" for r in css]
    h += [f"<link rel=\"preload\" href=\"{r['path']}\" as=\"fetch\" crossorigin=\"anonymous\">" for r in jsn]
    h += ["</head>", "<body>", "<header><h1>wirefall test page</h1></header>", "<main>"]
    for k, r in enumerate(img):
        w, hh = r["dims"]
        h.append(f"<figure><img src=\"{r['path']}\" width=\"{w}\" height=\"{hh}\" alt=\"picture {k + 1}\">"
                 f"<figcaption>Picture {k + 1}</figcaption></figure>")
    h.append("<p>" + " ".join(_WORDS) * 4 + "</p>")
    h.append("<pre id=\"config\"></pre>")
    h.append("</main>")
    h += [f"<script src=\"{r['path']}\"></script>" for r in js]
    for r in jsn:
        h.append("<script>fetch(\"%s\", {mode: \"cors\", credentials: \"same-origin\"})"  # noqa: UP031  (a JavaScript template)
                 ".then(function (r) { return r.json(); })"
                 ".then(function (d) { document.getElementById(\"config\").textContent = "
                 "\"features: \" + d.features.length; });</script>" % r["path"])
    h += ["</body>", "</html>", ""]
    return "\n".join(h).encode()


def build(outdir: Path, count: int = 12, seed: int = 11) -> dict:
    """Write the page into outdir; return its manifest (also written as page.json)."""
    outdir = Path(outdir)
    res = resources(count)
    files = {}
    for r in res:
        rng = random.Random(f"{seed}:{r['path']}")
        k = r["kind"]
        if k == "css":
            data = _css(r["path"], r["size"], rng)
        elif k == "js":
            data = _js(r["path"], r["size"], rng)
        elif k == "json":
            data = _json(r["size"], rng)
        elif k == "png":
            data = _png(*r["dims"], rng)
        else:
            data = _jpeg(*r["dims"], rng)
        files[r["path"]] = data
    files["/index.html"] = _html(res)
    for path, data in files.items():
        p = outdir / path.lstrip("/")
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    manifest = {
        "count": count, "seed": seed,
        "requests": request_paths(count),
        "files": [{"path": p, "bytes": len(d), "sha256": hashlib.sha256(d).hexdigest(),
                   "content_type": CONTENT_TYPES["html" if p.endswith(".html") else
                                                 next(r["kind"] for r in res if r["path"] == p)]}
                  for p, d in sorted(files.items())],
    }
    (outdir / "page.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("outdir", type=Path)
    ap.add_argument("--count", type=int, default=12, help="number of sub-resources (default 12)")
    ap.add_argument("--seed", type=int, default=11)
    a = ap.parse_args(argv)
    m = build(a.outdir, a.count, a.seed)
    total = sum(f["bytes"] for f in m["files"])
    print(f"wrote {len(m['files'])} files, {total} bytes, to {a.outdir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
