"""What ``wirefall batch INPUTS…`` analyses: the captures that captures, folders, globs and lab
run folders name, each with its key logs and its conditions.

- A file is taken as it is (a capture or a browser log: ``analyze`` decides); a folder is walked
  (sorted, symbolic links to files followed, to folders not) for names that end like a capture
  (``.pcap``, ``.pcapng``, ``.cap``, optionally ``.gz``/``.xz``/``.bz2``/``.zst``); a glob is
  expanded (``**`` too) and each match taken as a file or a folder, but for files named as key
  logs (below): they are read with their captures.
- A folder holding a ``manifest.json`` of ``wirefall lab`` (``schema: wirefall-lab/1``, written by
  ``lab/run.py``) is a lab run folder: each of its ``runs[]`` names its capture
  (``<dir>/<files.capture>``) and key log (``files.keys``), and gives the conditions
  (``protocol`` → ``lab_protocol``, ``condition``, ``rtt_ms``, ``loss_pct``, ``rate_mbit``,
  ``run``).  A manifest whose runs' files lie beside it rather than in ``<dir>``
  (sample_captures/lossy) is read the same way.
- The key log of a capture not in a manifest is found beside it by name, as
  sample_captures/ pairs them: ``NAME.keys`` for ``NAME.pcapng`` (also ``NAME.keylog``,
  ``NAME.key_log.txt``, ``NAME.keys.gz``, ``NAME.key_log.txt.gz``), else a ``keylog.txt`` /
  ``sslkeylog.log`` / ``keys.txt`` in the same folder (../shared/captures); ``--keylog`` files
  are added to every capture's.  Secrets in a pcapng's Decryption Secrets Blocks are read by the
  pipeline itself.  ``$SSLKEYLOGFILE`` is read here, on the client, when nothing else gives a key
  log (as ``wirefall requests`` does), so that a worker's environment never changes a result.

Hashes: ``sha256`` of the capture's bytes, ``keylog_sha256`` of the key logs' (each file's SHA-256
in order, hashed again; None without a key log).  The two identify a result: a rerun skips a pair
already in OUT, and a second input with the same pair in one run is analysed once.
"""
from __future__ import annotations

import glob
import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CAPTURE_NAME = re.compile(r"\.(pcap|pcapng|cap)(\.(gz|xz|bz2|zst|zstd))?$", re.IGNORECASE)
KEYLOG_SUFFIXES = (".keys", ".keylog", ".key_log.txt", ".keys.gz", ".key_log.txt.gz", ".keylog.gz")
FOLDER_KEYLOGS = ("keylog.txt", "sslkeylog.log", "keys.txt")
LAB_SCHEMA = "wirefall-lab/1"
CONDITION_KEYS = ("condition", "lab_protocol", "rtt_ms", "loss_pct", "rate_mbit", "run")
MAX_INPUTS = 1_000_000  # captures one batch takes (a bound on the job list, not a practical limit)


@dataclass
class Job:
    """One capture to analyse: what the task needs, and nothing the worker must look up."""

    path: str
    keylogs: list[str] = field(default_factory=list)
    conditions: dict[str, Any] = field(default_factory=dict)
    sha256: str | None = None
    keylog_sha256: str | None = None
    problem: str | None = None  # why it cannot be analysed (unreadable...): an errors row at once

    @property
    def key(self) -> tuple[str | None, str | None]:
        return (self.sha256, self.keylog_sha256)

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "keylogs": list(self.keylogs), "conditions": dict(self.conditions),
                "sha256": self.sha256, "keylog_sha256": self.keylog_sha256}


class InputError(Exception):
    """An input names nothing (no such file, a glob with no match, no capture in a folder)."""


def _strip_capture_ext(name: str) -> str:
    m = CAPTURE_NAME.search(name)
    if m:
        return name[: m.start()]
    return os.path.splitext(name)[0]


def keylogs_beside(path: str) -> list[str]:
    """The key log found beside a capture by name (see the module docstring), or []."""
    d, name = os.path.split(path)
    base = _strip_capture_ext(name)
    for suf in KEYLOG_SUFFIXES:
        p = os.path.join(d, base + suf)
        if os.path.isfile(p):
            return [p]
    for n in FOLDER_KEYLOGS:
        p = os.path.join(d, n)
        if os.path.isfile(p):
            return [p]
    return []


def keylogs_for(path: str, extra: list[str] | None = None, env: str | None = None, found: list[str] | None = None) -> list[str]:
    """A capture's key logs, by the rule of the module docstring: ``found`` (a lab manifest's)
    or else the one beside it by name (``keylogs_beside``), then each of ``extra``
    (``--keylog``) not already among them; with none of those, ``env`` (``$SSLKEYLOGFILE``,
    read by the caller) when it is a file.  ``wirefall batch`` (below) and ``wirefall
    compare`` (ui/cli.py) find key logs by it."""
    kl = list(found) if found is not None else keylogs_beside(path)
    kl += [k for k in extra or [] if k not in kl]
    if not kl and env and os.path.isfile(env):
        kl = [env]
    return kl


def _num(v):
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def read_manifest(folder: Path) -> dict[str, tuple[list[str], dict[str, Any]]] | None:
    """A lab run folder's captures: absolute path -> (key logs, conditions); None when the
    folder has no ``wirefall lab`` manifest (or one that cannot be read: its captures are then
    found like any others')."""
    mf = folder / "manifest.json"
    if not mf.is_file():
        return None
    try:
        if mf.stat().st_size > 64 << 20:
            return None
        m = json.loads(mf.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(m, dict) or m.get("schema") != LAB_SCHEMA or not isinstance(m.get("runs"), list):
        return None
    out: dict[str, tuple[list[str], dict[str, Any]]] = {}
    for r in m["runs"]:
        if not isinstance(r, dict) or not isinstance(r.get("files"), dict):
            continue
        cap = r["files"].get("capture")
        if not isinstance(cap, str) or not cap:
            continue
        sub = r.get("dir") if isinstance(r.get("dir"), str) else ""
        where = folder / sub if sub and (folder / sub / cap).exists() else folder
        capture = where / cap
        if not capture.exists():
            continue
        keys = r["files"].get("keys")
        kl = [str(where / keys)] if isinstance(keys, str) and keys and (where / keys).is_file() else []
        run = r.get("run")
        cond = {"condition": r.get("condition") if isinstance(r.get("condition"), str) else None,
                "lab_protocol": r.get("protocol") if isinstance(r.get("protocol"), str) else None,
                "rtt_ms": _num(r.get("rtt_ms")), "loss_pct": _num(r.get("loss_pct")), "rate_mbit": _num(r.get("rate_mbit")),
                "run": run if isinstance(run, int) and not isinstance(run, bool) else None}
        out[os.path.abspath(capture)] = (kl, cond)
    return out


def _walk(folder: str) -> list[str]:
    found = []
    for root, dirs, files in os.walk(folder):
        dirs.sort()
        for n in sorted(files):
            if CAPTURE_NAME.search(n):
                p = os.path.join(root, n)
                if os.path.isfile(p):
                    found.append(p)
    return found


def _is_keylog(path: str) -> bool:
    """A file named as a capture's key log (``NAME.keys``, ``keylog.txt`` …): read with its
    capture, not analysed as one."""
    name = os.path.basename(path).lower()
    return name.endswith(KEYLOG_SUFFIXES) or name in FOLDER_KEYLOGS


def expand(inputs: list[str], folded: list[str] | None = None) -> list[str]:
    """Every capture path the inputs name, in order, each once (by real path); ``folded``
    gets the paths left out for naming a file already taken (a symbolic link, a second path)."""
    out: list[str] = []
    seen: set[str] = set()

    def take(p: str) -> None:
        rp = os.path.realpath(p)
        if rp not in seen:
            seen.add(rp)
            out.append(p)
        elif folded is not None:
            folded.append(p)

    for arg in inputs:
        if os.path.isdir(arg):
            caps = _walk(arg)
            if not caps:
                raise InputError(f"{arg}: no capture in this folder (names ending .pcap, .pcapng, .cap, optionally compressed)")
            for p in caps:
                take(p)
        elif os.path.exists(arg):
            take(arg)
        elif glob.has_magic(arg):
            hits = sorted(glob.glob(arg, recursive=True))
            if not hits:
                raise InputError(f"{arg}: no file matches")
            for h in hits:
                if os.path.isdir(h):
                    for p in _walk(h):
                        take(p)
                elif os.path.isfile(h) and not _is_keylog(h):  # ('runs/*/page-h2*' matches page-h2.keys too: a key log, not a capture)
                    take(h)
        else:
            raise InputError(f"{arg}: no such file or folder")
        if len(out) > MAX_INPUTS:
            raise InputError(f"more than {MAX_INPUTS} captures in one batch")
    return out


def _manifests_for(paths: list[str]) -> dict[str, tuple[list[str], dict[str, Any]]]:
    """Lab manifests of the folders (and their parents, up to 3 levels: ``<cond>/run<k>/``)
    holding the captures."""
    seen: dict[str, dict | None] = {}
    merged: dict[str, tuple[list[str], dict[str, Any]]] = {}
    for p in paths:
        d = Path(os.path.abspath(p)).parent
        for folder in [d, *list(d.parents)[:3]]:
            k = str(folder)
            if k not in seen:
                seen[k] = read_manifest(folder)
                if seen[k]:
                    for cap, v in seen[k].items():  # type: ignore[union-attr]
                        merged.setdefault(cap, v)
    return merged


def sha256_file(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            b = f.read(1 << 20)
            if not b:
                break
            h.update(b)
    return h.hexdigest()


def keylog_digest(paths: list[str]) -> str | None:
    if not paths:
        return None
    h = hashlib.sha256(b"wirefall-keylogs\0")
    for p in paths:
        h.update(sha256_file(p).encode() + b"\0")
    return h.hexdigest()


def collect(inputs: list[str], keylogs: list[str] | None = None, use_env: bool = True,
            folded: list[str] | None = None) -> list[Job]:
    """The jobs of a batch: every capture with its key logs, conditions and hashes.  A capture
    that cannot be read (or whose key log cannot) is a Job with ``problem`` set: it becomes a
    row of errors.parquet, never the end of the batch.  Raises InputError for an input that
    names nothing.  ``folded``: see ``expand``."""
    extra = list(keylogs or [])
    for k in extra:
        if not os.path.isfile(k):
            raise InputError(f"--keylog {k}: no such file")
    paths = expand(inputs, folded)
    lab = _manifests_for(paths)
    env = os.environ.get("SSLKEYLOGFILE") if use_env else None
    jobs = []
    for p in paths:
        ap = os.path.abspath(p)
        found, cond = lab[ap] if ap in lab else (None, {})
        kl = keylogs_for(p, extra, env, found)
        job = Job(path=os.path.abspath(p), keylogs=[os.path.abspath(k) for k in kl],
                  conditions={k: cond.get(k) for k in CONDITION_KEYS})
        try:
            job.sha256 = sha256_file(p)
        except OSError as e:
            job.problem = f"cannot read the capture: {e.strerror or e}"
        else:
            try:
                job.keylog_sha256 = keylog_digest(job.keylogs)
            except OSError as e:
                job.problem = f"cannot read a key log: {e.strerror or e}"
        jobs.append(job)
    return jobs
