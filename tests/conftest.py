import os
import shutil
import subprocess
from functools import lru_cache
from pathlib import Path

import pytest

import fuzz.profiles  # noqa: F401  (registers --hypothesis-profile=long)

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "captures"
SAMPLES = ROOT / "sample_captures"


def shared(rel: str) -> Path:
    p = SHARED / rel
    if not p.exists():
        pytest.skip(f"third-party capture {rel} not present (../shared/captures)")
    return p


def need_tool(name: str) -> str:
    path = shutil.which(name)
    if not path:
        pytest.skip(f"{name} not installed")
    return path


@lru_cache(maxsize=256)
def run_tool(*args: str) -> str:
    """Run an external tool (tshark, capinfos …) and return its stdout (cached)."""
    need_tool(args[0])
    env = dict(os.environ, LC_ALL="C")
    out = subprocess.run(args, capture_output=True, text=True, env=env, timeout=300)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed: {out.stderr[-500:]}")
    return out.stdout
