"""``wirefall batch``: many captures at once on Dask, into Parquet (docs/BATCH.md).

- ``inputs``: what the command line names — captures, folders, globs, lab run folders — as
  ``Job``s with key logs, conditions and content hashes;
- ``rows``: the task a worker runs on one capture, and the Arrow schemas of the datasets;
- ``store``: OUT's Parquet datasets, their commit log and what is already done;
- ``run``: the Dask side (LocalCluster or a given scheduler, progress, faults).

Needs the optional ``cluster`` extra (dask, distributed, pyarrow): importing
``wirefall.analyzer.batch`` alone loads none of them; ``missing()`` names what is not installed.
The report's figures are drawn in ``ui/batch_report.py`` (no plotting below ui/).
"""
from __future__ import annotations

import importlib.util

REQUIRED = ("dask", "distributed", "pyarrow")


def missing() -> list[str]:
    """The modules of the ``cluster`` extra that cannot be imported."""
    out = []
    for m in REQUIRED:
        try:
            if importlib.util.find_spec(m) is None:
                out.append(m)
        except (ImportError, ValueError):
            out.append(m)
    return out
