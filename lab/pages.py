"""Pages for ``wirefall lab --page``: a real page's structure replayed from a HAR, and pages
modelled on the seed papers, served from one network host per origin.

A page is a ``Page``: its origins (host names; each gets its own address in the lab's server
namespace and its own name in the lab's DNS server, lab/dns.py) and its resources in the order
the browser discovered them, each with its origin, path, content type, size and *parent* (the
document, or the stylesheet / script that references it). ``write_site`` turns it into files,
one directory per origin, so that a browser discovers the resources as in the HAR:

- ``index.html`` (the document) references the first level in HAR order: stylesheets
  (``<link rel=stylesheet>``), scripts (``<script src>``), images (``<img>``) and anything else
  (``<link rel=preload as=fetch crossorigin=use-credentials>``, which delays the load event as a
  fetch would not; credentialed, so Chromium keeps it on the origin's one credentialed connection
  pool — an anonymous CORS request gets a second connection — and the servers echo the Origin);
- a stylesheet references its children: ``@import`` for stylesheets, a ``background-image``
  rule for anything else (the matching ``<div>`` is in index.html, or Chromium would not fetch
  it);
- a script inserts its children when it runs (``<script>``, ``<link rel=stylesheet>``,
  ``<img>``, and for anything else a credentialed-CORS ``<img>``: all delay the load event — a
  dynamically inserted preload does not, Chromium dumped the page before fetching one), so they
  are discovered after the script has arrived, as the HAR's initiator says.

Every reference is an absolute ``https://host/path`` URL. Bodies have the HAR's sizes (the
transfer size when the HAR has it, else the decoded size): text bodies are filler (CSS rules,
JavaScript comments) around the references, images are a valid file header followed by
deterministic incompressible bytes (the lab serves without compression, as the transfer sizes
already are compressed ones). Everything is a pure function of the input and the seed.

The HAR is read once, whole (HAR files are small JSON; a bound on entries keeps a hostile one
from costing more than ``MAX_ENTRIES`` resources). Only GETs of a page are replayed, the first
of each URL; other methods (POST beacons) are replayed as GETs of a body of their size, so the
structure (a request, a response of that size, from that origin) stays; statuses are not
replayed (every response is a 200: a 202/204/30x of the real site has no meaning without its
application).
"""
from __future__ import annotations

import gzip
import hashlib
import json
import random
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

MAX_ENTRIES = 2000            # resources taken from one HAR page (the rest are left out, counted)
MAX_BODY = 64 << 20           # bytes per resource
MAX_SEGMENT = 96              # characters per path segment of a generated file name
MAX_ORIGINS = 151             # one address each in the lab (lab/net.origin_ip)

# kind -> (extension, content type) used when the HAR's type gives none; the servers map
# extensions to these types (nginx conf, scripts/spdy/server.js, Caddy, h3_server.py)
EXT_TYPES = {
    ".html": "text/html", ".css": "text/css", ".js": "application/javascript", ".json": "application/json",
    ".jpg": "image/jpeg", ".png": "image/png", ".gif": "image/gif", ".webp": "image/webp",
    ".svg": "image/svg+xml", ".ico": "image/x-icon", ".woff2": "font/woff2", ".woff": "font/woff",
    ".txt": "text/plain", ".xml": "application/xml", ".bin": "application/octet-stream",
}
TYPE_EXT = {
    "text/html": ".html", "text/css": ".css", "application/javascript": ".js", "text/javascript": ".js",
    "application/x-javascript": ".js", "application/ecmascript": ".js", "application/json": ".json",
    "image/jpeg": ".jpg", "image/jpg": ".jpg", "image/png": ".png", "image/gif": ".gif", "image/webp": ".webp",
    "image/svg+xml": ".svg", "image/x-icon": ".ico", "image/vnd.microsoft.icon": ".ico",
    "font/woff2": ".woff2", "font/woff": ".woff", "application/font-woff": ".woff", "application/font-woff2": ".woff2",
    "text/plain": ".txt", "application/xml": ".xml", "text/xml": ".xml",
}


class PageError(ValueError):
    pass


@dataclass
class Resource:
    url: str                 # https://host/path as served and referenced
    host: str
    path: str                # path on that host ("/" for the document)
    file: str                # file under the origin's directory (index.html for "/")
    content_type: str
    kind: str                # html | css | js | image | font | other
    bytes: int
    parent: str | None       # url of the resource that references it; None for the document
    har_url: str | None = None
    har_method: str | None = None
    har_status: int | None = None


@dataclass
class Page:
    name: str
    source: str              # "har:FILE", "builtin:jpeg", ...
    resources: list[Resource]
    notes: list[str] = field(default_factory=list)

    @property
    def document(self) -> Resource:
        return self.resources[0]

    @property
    def origins(self) -> list[str]:
        out: list[str] = []
        for r in self.resources:
            if r.host not in out:
                out.append(r.host)
        return out

    def manifest(self) -> dict[str, Any]:
        return {"name": self.name, "source": self.source, "origins": self.origins,
                "requests": [r.url for r in self.resources], "count": len(self.resources) - 1, "seed": None,
                "bytes": sum(r.bytes for r in self.resources), "resources": [asdict(r) for r in self.resources],
                "notes": self.notes}


def kind_of(content_type: str | None, url: str = "") -> str:
    t = (content_type or "").split(";")[0].strip().lower()
    if t == "text/html":
        return "html"
    if t == "text/css":
        return "css"
    if "javascript" in t or "ecmascript" in t:
        return "js"
    if t.startswith("image/"):
        return "image"
    if t.startswith("font/") or "font" in t:
        return "font"
    if not t:  # no type in the HAR: the URL's extension
        ext = Path(urlsplit(url).path).suffix.lower()
        return {".css": "css", ".js": "js", ".html": "html"}.get(ext, "image" if ext in (".jpg", ".png", ".gif", ".webp", ".svg", ".ico") else "other")
    return "other"


def _safe_segment(s: str) -> str:
    s = re.sub(r"[^A-Za-z0-9._~-]", "_", s) or "_"
    if s in (".", ".."):
        s = "_" + s
    if len(s) > MAX_SEGMENT:
        h = hashlib.sha256(s.encode()).hexdigest()[:12]
        s = s[: MAX_SEGMENT - 13] + "-" + h
    return s


def local_path(url: str, content_type: str, is_document: bool = False) -> str:
    """The path a resource is served at: the HAR URL's path with characters a static server or a
    file system would treat specially replaced, the query folded into the last segment, and an
    extension that gives the resource its content type (the servers type files by extension)."""
    if is_document:
        return "/"
    u = urlsplit(url)
    segs = [_safe_segment(unquote(x)) for x in u.path.split("/") if x]
    if not segs or u.path.endswith("/"):
        segs.append("index")
    if u.query:
        segs[-1] = _safe_segment(segs[-1] + "_" + unquote(u.query))
    t = content_type.split(";")[0].strip().lower()
    want = TYPE_EXT.get(t, ".bin" if t not in ("", "text/html") else ".txt")
    if t == "text/html":
        want = ".html"
    if not segs[-1].lower().endswith(want) or EXT_TYPES.get(Path(segs[-1]).suffix.lower()) is None:
        segs[-1] = segs[-1][: MAX_SEGMENT - len(want)] + want
    return "/" + "/".join(segs)


def served_type(path: str) -> str:
    return EXT_TYPES.get(Path(path).suffix.lower(), "application/octet-stream") if path != "/" else "text/html"


# ------------------------------------------------------------------ HAR

def read_har(path: str | Path) -> dict:
    p = Path(path)
    raw = p.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    try:
        har = json.loads(raw)
    except ValueError as e:
        raise PageError(f"{p}: not a HAR (JSON: {e})") from None
    if not isinstance(har, dict) or not isinstance(har.get("log"), dict) or not isinstance(har["log"].get("entries"), list):
        raise PageError(f"{p}: not a HAR (no log.entries)")
    return har


def _size(entry: dict) -> int:
    r = entry.get("response") or {}
    c = r.get("content") or {}
    for v in (r.get("bodySize"), r.get("_bodySize"), c.get("size")):
        if isinstance(v, (int, float)) and v >= 0:
            return min(int(v), MAX_BODY)
    return 0


def _initiator(entry: dict) -> str | None:
    ini = entry.get("_initiator")
    if isinstance(ini, dict):  # Chrome DevTools: {"type": ..., "url": ...} or a stack
        u = ini.get("url")
        if not u:
            st = ini.get("stack") or {}
            frames = st.get("callFrames") or []
            u = frames[0].get("url") if frames and isinstance(frames[0], dict) else None
        return u if isinstance(u, str) else None
    return ini if isinstance(ini, str) else None


def from_har(path: str | Path, page_index: int | None = None, name: str | None = None) -> Page:
    """The page of a HAR (``page_index`` into log.pages, default the first page with entries):
    its document (the first text/html GET of the page's origin, else its first entry), then
    every other URL in the order the HAR started them, parented by the HAR's initiator
    (WebPageTest's ``_initiator`` URL, Chrome's ``_initiator`` object) when that is a stylesheet
    or script of the page, else by the document."""
    har = read_har(path)
    log = har["log"]
    entries = [e for e in log["entries"] if isinstance(e, dict) and isinstance(e.get("request"), dict)]
    pages = log.get("pages") or []
    refs = [e.get("pageref") for e in entries]
    if page_index is not None:
        if not 0 <= page_index < len(pages):
            raise PageError(f"{path}: page {page_index} not in the HAR ({len(pages)} pages)")
        want = pages[page_index].get("id")
    else:
        want = next((r for r in refs if r is not None), None)
    chosen = [e for e in entries if want is None or e.get("pageref") == want]
    chosen.sort(key=lambda e: str(e.get("startedDateTime") or ""))  # ISO 8601: the order they started
    notes: list[str] = []
    if not chosen:
        raise PageError(f"{path}: the HAR has no entries for its page")
    from .dns import valid_name

    urls_seen: dict[str, dict] = {}
    no_name = 0
    for e in chosen:
        u = e["request"].get("url")
        if not isinstance(u, str) or urlsplit(u).scheme not in ("http", "https") or not urlsplit(u).hostname:
            continue
        if not valid_name(urlsplit(u).hostname or ""):  # an address or not a DNS name: no origin to serve it
            no_name += 1
            continue
        urls_seen.setdefault(u, e)
    if no_name:
        notes.append(f"{no_name} requests to hosts that are not DNS names left out")
    if not urls_seen:
        raise PageError(f"{path}: no http(s) request to a named host in the HAR's page")
    if len({urlsplit(u).hostname for u in urls_seen}) > MAX_ORIGINS:
        raise PageError(f"{path}: more than {MAX_ORIGINS} origins (the lab has an address for {MAX_ORIGINS})")
    if len(urls_seen) > MAX_ENTRIES:
        notes.append(f"{len(urls_seen) - MAX_ENTRIES} URLs beyond {MAX_ENTRIES} left out")
    items = list(urls_seen.items())[:MAX_ENTRIES]
    page_url = next((p.get("_URL") or p.get("title") for p in pages if p.get("id") == want), None) if pages else None
    doc_i = 0
    for i, (u, e) in enumerate(items):
        ct = ((e.get("response") or {}).get("content") or {}).get("mimeType") or ""
        if kind_of(ct, u) == "html" and (e["request"].get("method") or "GET") == "GET" \
                and (page_url is None or urlsplit(u).hostname == urlsplit(str(page_url)).hostname):
            doc_i = i
            break
    items.insert(0, items.pop(doc_i))
    dup = len(chosen) - len(urls_seen)
    if dup:
        notes.append(f"{dup} repeated requests of a URL replayed once")
    res: list[Resource] = []
    by_har: dict[str, Resource] = {}
    used: dict[tuple[str, str], int] = {}
    for i, (u, e) in enumerate(items):
        host = (urlsplit(u).hostname or "").lower()
        ct = (((e.get("response") or {}).get("content") or {}).get("mimeType") or "").split(";")[0].strip().lower()
        kind = "html" if i == 0 else kind_of(ct, u)
        if i and kind == "html":
            kind = "other"  # an iframe's document: fetched, not parsed here
        path_ = local_path(u, ct or ("text/html" if i == 0 else ""), is_document=i == 0)
        k = (host, path_)
        if k in used:  # two HAR URLs that sanitise alike: keep both, apart
            used[k] += 1
            stem, ext = (path_.rsplit(".", 1) + [""])[:2]
            path_ = f"{stem}-{used[k]}.{ext}" if ext else f"{stem}-{used[k]}"
        used[k] = used.get(k, 0)
        stype = served_type(path_)
        r = Resource(url=f"https://{host}{path_}", host=host, path=path_,
                     file="index.html" if path_ == "/" else path_.lstrip("/"), content_type=stype, kind=kind,
                     bytes=_size(e), parent=None, har_url=u, har_method=e["request"].get("method"),
                     har_status=(e.get("response") or {}).get("status"))
        res.append(r)
        by_har[u] = r
    for r, (_u, e) in zip(res[1:], items[1:]):
        ini = _initiator(e)
        p = by_har.get(ini) if ini else None
        # a stylesheet or script can reference it; anything else (the document, an image) -> document
        r.parent = p.url if p is not None and p.kind in ("css", "js") and p is not r else res[0].url
    _break_cycles(res)
    posts = sum(1 for r in res if (r.har_method or "GET") != "GET")
    if posts:
        notes.append(f"{posts} non-GET requests replayed as GETs of their response's size")
    return Page(name=name or Path(str(path)).name.split(".")[0], source=f"har:{Path(str(path)).name}", resources=res, notes=notes)


def _break_cycles(res: list[Resource]) -> None:
    """A parent must come before its child in the page's order (it is fetched first): a child
    whose initiator starts later in the HAR (clock skew, or a cycle) is parented by the document."""
    pos = {r.url: i for i, r in enumerate(res)}
    for i, r in enumerate(res[1:], 1):
        if r.parent is None or pos.get(r.parent, i) >= i:
            r.parent = res[0].url


# ------------------------------------------------------------------ built-in pages

def _resource(host: str, path: str, kind: str, size: int, parent: str | None) -> Resource:
    return Resource(url=f"https://{host}{path}", host=host, path=path, file="index.html" if path == "/" else path.lstrip("/"),
                    content_type=served_type(path), kind=kind, bytes=size, parent=parent)


# Carlucci, De Cicco, Mascolo, "HTTP over UDP: an experimental investigation of QUIC" (SAC 2015):
# a page of JPEG images from one server. Their object sizes are not at hand here (the paper is not
# in shared/specs); the default is 30 JPEGs of ~12 kB (360 kB), within what their QUIC PLT allows
# at 3 Mbit/s (1.14 s × 3 Mbit/s = 427 kB). jpeg:N:KB sets both.
JPEG_DEFAULT = (30, 12)


def jpeg_page(count: int = JPEG_DEFAULT[0], kb: float = JPEG_DEFAULT[1], host: str = "www.jpeg.lab.test") -> Page:
    if not 1 <= count <= 500 or not 0.2 <= kb <= 10_000:
        raise PageError("jpeg:N:KB needs 1 ≤ N ≤ 500 images of 0.2–10000 kB")
    doc = _resource(host, "/", "html", 0, None)  # sized by its references
    res = [doc] + [_resource(host, f"/img/photo-{i:02d}.jpg", "image", int(kb * 1000), doc.url) for i in range(1, count + 1)]
    return Page(name=f"jpeg-{count}x{kb:g}kB", source="builtin:jpeg", resources=res,
                notes=["Carlucci et al. 2015: N JPEG images on one page, one server"])


# The SPDY whitepaper's page: "25 of the top 100 websites"; the whitepaper gives no page figures, so
# the page is the average page of Google's "Web metrics: size and number of resources" (same
# "Let's make the web faster" initiative, May 2010): 44.56 GETs from 7.01 hosts, 320 KB on the wire;
# 29.39 images (205.99 KB), 7.09 external scripts (57.98 KB), 3.22 stylesheets (18.72 KB).
WHITEPAPER: dict[str, tuple[int, int]] = {"images": (29, 205_990), "js": (7, 57_980), "css": (3, 18_720), "html": (1, 24_000), "other": (4, 13_310),
              "hosts": (7, 0)}


def _split(total: int, n: int, rng: random.Random, spread: float = 0.8) -> list[int]:
    """n sizes around total/n (log-normal spread), summing to total exactly."""
    w = [rng.lognormvariate(0, spread) for _ in range(n)]
    s = sum(w)
    out = [max(200, int(total * x / s)) for x in w]
    out[-1] += total - sum(out)
    return out


def whitepaper_page(seed: int = 9) -> Page:
    rng = random.Random(seed)
    hosts = ["www.site.test", "static.site.test", "img1.site.test", "img2.site.test",
             "cdn.widgets.test", "ads.adnet.test", "stats.analytics.test"][: WHITEPAPER["hosts"][0]]
    www, static, img1, img2, cdn, ads, stats = hosts
    doc = _resource(www, "/", "html", WHITEPAPER["html"][1], None)
    res = [doc]
    css_sizes = _split(WHITEPAPER["css"][1], WHITEPAPER["css"][0], rng)
    js_sizes = _split(WHITEPAPER["js"][1], WHITEPAPER["js"][0], rng)
    img_sizes = _split(WHITEPAPER["images"][1], WHITEPAPER["images"][0], rng, 1.1)
    oth_sizes = _split(WHITEPAPER["other"][1], WHITEPAPER["other"][0], rng)
    css = [_resource(www if i == 0 else static, f"/css/style-{i + 1}.css", "css", s, doc.url) for i, s in enumerate(css_sizes)]
    js_hosts = [static, static, static, cdn, cdn, stats, ads]
    js = [_resource(h, f"/js/script-{i + 1}.js", "js", s, doc.url) for i, (h, s) in enumerate(zip(js_hosts, js_sizes))]
    js[4].parent = js[3].url  # a widget's loader inserts its module
    js[6].parent = js[5].url  # the analytics tag inserts the ad script
    res += css[:2] + js[:4]
    # images: 6 from the stylesheets (sprites, backgrounds), 3 inserted by scripts, 20 in the HTML
    imgs = []
    for i, s in enumerate(img_sizes):
        h = [www, img1, img2][i % 3] if i < 26 else ads
        ext = ".png" if i % 4 == 1 else ".gif" if i % 9 == 8 else ".jpg"
        parent = css[i % 3].url if i < 6 else js[6].url if i >= 26 else doc.url
        imgs.append(_resource(h, f"/img/image-{i + 1:02d}{ext}", "image", s, parent))
    res += imgs[6:26]
    res += [css[2]] + imgs[:6] + js[4:] + imgs[26:]
    others = [_resource(www, "/data/feed.json", "other", oth_sizes[0], js[0].url),
              _resource(static, "/data/config.json", "other", oth_sizes[1], js[1].url),
              _resource(stats, "/collect/beacon.gif", "image", oth_sizes[2], js[5].url),
              _resource(ads, "/ad/frame.txt", "other", oth_sizes[3], js[6].url)]
    res += others
    _break_cycles(res)
    return Page(name="whitepaper", source="builtin:whitepaper", resources=res,
                notes=["Web metrics 2010 average page: 44 GETs, 7 hosts, ~320 kB"])


def resolve(spec: str, har_page: int | None = None) -> Page | Path:
    """``--page``: a HAR file (.har, .har.gz, .json[.gz]) → Page; ``jpeg[:N[:KB]]`` or
    ``whitepaper`` → Page; a directory → that directory (served as it is)."""
    p = Path(spec)
    if p.is_dir():
        return p
    if p.is_file():
        return from_har(p, har_page)
    name, _, rest = spec.partition(":")
    if name == "jpeg":
        parts = [x for x in rest.split(":") if x]
        try:
            n = int(parts[0]) if parts else JPEG_DEFAULT[0]
            kb = float(parts[1]) if len(parts) > 1 else JPEG_DEFAULT[1]
        except ValueError:
            raise PageError(f"--page {spec}: use jpeg, jpeg:N or jpeg:N:KB") from None
        return jpeg_page(n, kb)
    if name == "whitepaper" and not rest:
        return whitepaper_page()
    raise PageError(f"--page {spec}: not a directory, a HAR file, 'jpeg[:N[:KB]]' or 'whitepaper'")


# ------------------------------------------------------------------ bodies

def children(page: Page) -> dict[str, list[Resource]]:
    out: dict[str, list[Resource]] = {}
    for r in page.resources[1:]:
        out.setdefault(r.parent or page.document.url, []).append(r)
    return out


def css_descendant_images(page: Page) -> list[Resource]:
    """Resources referenced by background rules of stylesheets (need an element in the page)."""
    css = {r.url for r in page.resources if r.kind == "css"}
    return [r for r in page.resources[1:] if r.parent in css and r.kind != "css"]


def _cls(r: Resource, page: Page) -> str:
    return f"wf-r{page.resources.index(r)}"


def _pad_text(head: str, tail: str, size: int, open_: str, close: str, rng: random.Random) -> bytes:
    words = ("header nav card grid item panel button title footer list media badge modal tooltip "
             "avatar banner sidebar content wrapper layout").split()
    body = head.encode() + tail.encode()
    room = size - len(body) - len(open_) - len(close) - 1
    if room <= 0:
        return body
    filler = []
    n = 0
    while n < room:
        w = rng.choice(words)
        filler.append(w)
        n += len(w) + 1
    pad = (" ".join(filler))[:room] + "\n"
    return head.encode() + (open_ + pad + close).encode() + tail.encode()


def html_body(page: Page, size: int, rng: random.Random) -> bytes:
    kids = children(page).get(page.document.url, [])
    h = ["<!DOCTYPE html>", "<html lang=\"en\">", "<head>", "<meta charset=\"utf-8\">",
         f"<title>wirefall lab page {page.name}</title>", "<link rel=\"icon\" href=\"data:,\">", "</head>", "<body>"]
    h += [f"<div class=\"{_cls(r, page)}\" style=\"width:8px;height:8px\"></div>" for r in css_descendant_images(page)]
    for r in kids:
        if r.kind == "css":
            h.append(f"<link rel=\"stylesheet\" href=\"{r.url}\">")
        elif r.kind == "js":
            h.append(f"<script src=\"{r.url}\"></script>")
        elif r.kind == "image":
            h.append(f"<img src=\"{r.url}\" width=\"8\" height=\"8\" alt=\"\">")
        else:
            h.append(f"<link rel=\"preload\" href=\"{r.url}\" as=\"fetch\" crossorigin=\"use-credentials\">")
    tail = "\n</body>\n</html>\n"
    return _pad_text("\n".join(h) + "\n", tail, size, "<!-- ", " -->\n", rng)


def css_body(page: Page, r: Resource, rng: random.Random) -> bytes:
    kids = children(page).get(r.url, [])
    lines = [f"/* {r.path}: wirefall lab stylesheet */"]
    lines += [f"@import url(\"{k.url}\");" for k in kids if k.kind == "css"]
    lines += [f".{_cls(k, page)} {{ background-image: url(\"{k.url}\"); }}" for k in kids if k.kind != "css"]
    return _pad_text("\n".join(lines) + "\n", "", r.bytes, "/* ", " */\n", rng)


def js_body(page: Page, r: Resource, rng: random.Random) -> bytes:
    kids = children(page).get(r.url, [])
    tags = {"js": "script", "css": "css", "image": "img"}  # anything else: "other" (a CORS <img>, see below)
    items = ",".join(json.dumps([tags.get(k.kind, "other"), k.url]) for k in kids)
    code = (f"/* {r.path}: wirefall lab script */\n(function () {{\n'use strict';\nvar d = document;\n"
            f"[{items}].forEach(function (x) {{ var e;\n"
            "  if (x[0] === 'script') { e = d.createElement('script'); e.src = x[1]; (d.body || d.head).appendChild(e); }\n"
            "  else if (x[0] === 'css') { e = d.createElement('link'); e.rel = 'stylesheet'; e.href = x[1]; d.head.appendChild(e); }\n"
            "  else { e = d.createElement('img'); if (x[0] !== 'img') { e.crossOrigin = 'use-credentials'; }\n"
            "    e.src = x[1]; e.width = 8; e.height = 8; (d.body || d.head).appendChild(e); }\n});\n})();\n") if kids else f"/* {r.path}: wirefall lab script */\n"
    return _pad_text(code, "", r.bytes, "/* ", " */\n", rng)


_MAGIC = {".png": b"\x89PNG\r\n\x1a\n", ".gif": b"GIF89a", ".jpg": b"\xff\xd8\xff\xe0\x00\x10JFIF\x00",
          ".webp": b"RIFF\x00\x00\x00\x00WEBPVP8 ", ".ico": b"\x00\x00\x01\x00", ".woff2": b"wOF2", ".woff": b"wOFF"}


def binary_body(r: Resource, rng: random.Random) -> bytes:
    magic = _MAGIC.get(Path(r.path).suffix.lower(), b"")
    n = max(0, r.bytes - len(magic))
    return (magic + rng.randbytes(n))[: max(r.bytes, 0)] if r.bytes else b""


def write_site(page: Page, out: Path, seed: int = 11, jpeg=None) -> dict:
    """Write the page under ``out/<host>/…``; returns the manifest (also ``out/page.json``).
    ``jpeg(width, height, rng) -> bytes`` makes real JPEGs for the jpeg page (cjpeg); without it
    JPEG bodies are a header and random bytes like the other images. An empty body (a 204
    beacon's) is written as one byte: ngtcp2's example server answers an empty file with 404."""
    out = Path(out)
    files = []
    for r in page.resources:
        rng = random.Random(f"{seed}:{r.url}")
        if r is page.document:
            data = html_body(page, r.bytes, rng)
        elif r.kind == "css":
            data = css_body(page, r, rng)
        elif r.kind == "js":
            data = js_body(page, r, rng)
        elif jpeg is not None and r.path.endswith(".jpg"):
            data = _jpeg_of_size(jpeg, r.bytes, rng)
        elif r.content_type.startswith("text/") or r.content_type in ("application/json", "application/xml"):
            data = _pad_text("", "", r.bytes, "", "", rng) if r.bytes else b""
        else:
            data = binary_body(r, rng)
        if not data:  # ngtcp2's example server answers an empty file with 404: one byte instead
            data = b"\n"
        p = out / r.host / r.file
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
        if r is page.document:
            r.bytes = len(data)  # the document is what its references need, at least
        files.append({"path": r.path, "host": r.host, "url": r.url, "bytes": len(data),
                      "sha256": hashlib.sha256(data).hexdigest(), "content_type": r.content_type})
    m = page.manifest()
    m["files"] = files
    m["bytes"] = sum(f["bytes"] for f in files)
    (out / "page.json").write_text(json.dumps(m, indent=1) + "\n")
    return m


def _jpeg_of_size(jpeg, size: int, rng: random.Random) -> bytes:
    """A real JPEG about ``size`` bytes: pick dimensions by bytes per pixel at quality 85 and pad
    with a COM segment when it comes out smaller (a JPEG decoder skips comments)."""
    import math

    w = max(16, int(math.sqrt(size / 0.35 * 4 / 3)))
    h = max(16, w * 3 // 4)
    for _ in range(6):
        data = jpeg(w, h, rng)
        if len(data) <= size:
            break
        w, h = max(16, int(w * 0.85)), max(16, int(h * 0.85))
    pad = size - len(data)
    while pad > 4:
        n = min(pad - 4, 65533)
        com = b"\xff\xfe" + (n + 2).to_bytes(2, "big") + rng.randbytes(n)
        data = data[:2] + com + data[2:]
        pad -= len(com)
    return data
