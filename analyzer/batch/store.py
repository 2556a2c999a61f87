"""OUT: four Parquet datasets (folders of part files, one schema each) and their commit log.

  OUT/requests.parquet/part-ID.parquet     (and connections, pages, errors; part-0-schema.parquet
                                           is empty: the schema, for a dataset with no row yet)
  OUT/_commits/ID.json                     the parts of one flush; written last
  OUT/.lock                                held while a batch writes (a second one is refused)

A flush writes the parts of every dataset for the captures finished since the last one, then
its commit file: a part whose commit is missing (the batch was killed between the two) is
removed when OUT is opened next, so a capture's rows are in OUT whole or not at all, and the
rerun analyses it again.  Readers (pandas, polars, DuckDB, pyarrow.dataset) read each folder
as one table (``read_parquet('OUT/requests.parquet/*.parquet')``); the commit log is outside
the datasets.  What is done: the (sha256, keylog_sha256) pairs in pages and errors.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from wirefall.analyzer.batch.rows import SCHEMAS

DATASETS = ("requests", "connections", "pages", "errors")
FLUSH_CAPTURES = 64  # captures per flush (and so per part file) at most
FLUSH_ROWS = 250_000  # request rows held before a flush


class StoreError(Exception):
    pass


class Store:
    def __init__(self, out: str | os.PathLike):
        self.out = Path(out)
        if self.out.exists() and not self.out.is_dir():
            raise StoreError(f"{self.out} exists and is not a folder")
        self.out.mkdir(parents=True, exist_ok=True)
        self._lock = open(self.out / ".lock", "a+")  # noqa: SIM115 - held for the Store's life
        try:
            import fcntl

            fcntl.flock(self._lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._lock.close()
            raise StoreError(f"{self.out} is being written by another wirefall batch") from None
        except ImportError:  # (no fcntl: not POSIX)
            pass
        self.commits = self.out / "_commits"
        self.commits.mkdir(exist_ok=True)
        for name in DATASETS:
            (self.out / f"{name}.parquet").mkdir(exist_ok=True)
        self.removed_orphans = self._remove_orphans()
        self._schema_parts()
        self._pending: dict[str, list[pa.Table]] = {n: [] for n in DATASETS}
        self._pending_captures = 0
        self._pending_rows = 0
        self._seq = 0
        self.written = {n: 0 for n in DATASETS}

    def close(self) -> None:
        try:
            self.flush()
        finally:
            self._lock.close()

    def dataset_dir(self, name: str) -> Path:
        return self.out / f"{name}.parquet"

    def _committed_ids(self) -> set[str]:
        return {p.stem for p in self.commits.glob("*.json")}

    def _remove_orphans(self) -> int:
        ids = self._committed_ids()
        n = 0
        for name in DATASETS:
            d = self.dataset_dir(name)
            for p in d.iterdir():
                if p.name.startswith("part-") and p.suffix == ".parquet" and p.stem[len("part-"):] not in ids:
                    p.unlink()
                    n += 1
                elif p.name.endswith(".tmp"):
                    p.unlink()
        return n

    def _schema_parts(self) -> None:
        """A dataset without rows still has one (empty) part with its schema, so that every
        reader finds a table with its columns (DuckDB's ``read_parquet`` of an empty folder fails)."""
        pid = "0-schema"
        files = []
        for name in DATASETS:
            dest = self.dataset_dir(name) / f"part-{pid}.parquet"
            if not dest.exists():
                tmp = dest.with_name(dest.name + ".tmp")
                pq.write_table(SCHEMAS[name].empty_table(), tmp, compression="zstd")
                os.replace(tmp, dest)
            files.append(f"{name}.parquet/{dest.name}")
        c = self.commits / f"{pid}.json"
        if not c.exists():
            c.write_text(json.dumps({"id": pid, "files": files, "captures": 0}) + "\n")

    def _parts(self, name: str) -> list[Path]:
        return sorted(self.dataset_dir(name).glob("part-*.parquet"))

    def _keys_of(self, name: str) -> set[tuple[str | None, str | None]]:
        keys: set[tuple[str | None, str | None]] = set()
        for p in self._parts(name):
            t = pq.read_table(p, columns=["sha256", "keylog_sha256"])
            keys.update(zip(t.column("sha256").to_pylist(), t.column("keylog_sha256").to_pylist()))
        return keys

    def conditions_of(self, keys: set) -> dict[tuple, dict]:
        """The lab conditions (``CONDITION_KEYS``) the pages rows of ``keys`` were written with."""
        from wirefall.analyzer.batch.inputs import CONDITION_KEYS

        out: dict[tuple, dict] = {}
        if not keys:
            return out
        for p in self._parts("pages"):
            t = pq.read_table(p, columns=["sha256", "keylog_sha256", *CONDITION_KEYS]).to_pylist()
            for r in t:
                k = (r["sha256"], r["keylog_sha256"])
                if k in keys:
                    out.setdefault(k, {c: r[c] for c in CONDITION_KEYS})
        return out

    def done(self) -> tuple[set, set]:
        """(keys analysed, keys that are errors rows)."""
        return self._keys_of("pages"), self._keys_of("errors")

    def drop_errors(self, keys: set) -> int:
        """Remove the errors rows of ``keys`` (``--retry-errors``): each errors part holding one
        is rewritten without it, atomically."""
        n = 0
        for p in self._parts("errors"):
            t = pq.read_table(p, schema=SCHEMAS["errors"])
            ks = list(zip(t.column("sha256").to_pylist(), t.column("keylog_sha256").to_pylist()))
            keep = [k not in keys for k in ks]
            if all(keep):
                continue
            n += keep.count(False)
            t = t.filter(pa.array(keep))
            tmp = p.with_name(p.name + ".tmp")
            if t.num_rows:
                pq.write_table(t, tmp, compression="zstd")
                os.replace(tmp, p)
            else:
                p.unlink()
        return n

    def add(self, result: dict[str, pa.Table]) -> None:
        for name, t in result.items():
            if t is not None and t.num_rows:
                self._pending[name].append(t)
        self._pending_captures += 1
        req = result.get("requests")
        self._pending_rows += req.num_rows if req is not None else 0
        if self._pending_captures >= FLUSH_CAPTURES or self._pending_rows >= FLUSH_ROWS:
            self.flush()

    def flush(self) -> None:
        if not self._pending_captures:
            return
        self._seq += 1
        pid = f"{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{os.getpid()}-{self._seq:05d}"
        files = []
        for name in DATASETS:
            tables = self._pending[name]
            if not tables:
                continue
            t = pa.concat_tables(tables).cast(SCHEMAS[name])
            dest = self.dataset_dir(name) / f"part-{pid}.parquet"
            tmp = dest.with_name(dest.name + ".tmp")
            pq.write_table(t, tmp, compression="zstd")
            os.replace(tmp, dest)
            files.append(f"{name}.parquet/{dest.name}")
            self.written[name] += t.num_rows
        c = self.commits / f"{pid}.json"
        tmp = c.with_name(c.name + ".tmp")
        tmp.write_text(json.dumps({"id": pid, "files": files, "captures": self._pending_captures}) + "\n")
        os.replace(tmp, c)
        self._pending = {n: [] for n in DATASETS}
        self._pending_captures = 0
        self._pending_rows = 0


def read_dataset(out: str | os.PathLike, name: str) -> pa.Table:
    """One dataset of OUT as a table (empty, with its schema, when it has no part yet)."""
    d = Path(out) / f"{name}.parquet"
    parts = sorted(d.glob("part-*.parquet")) if d.is_dir() else []
    if not parts:
        return SCHEMAS[name].empty_table()
    import pyarrow.dataset as ds

    return ds.dataset([str(p) for p in parts], schema=SCHEMAS[name], format="parquet").to_table()
