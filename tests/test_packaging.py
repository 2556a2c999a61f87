"""The wheel installs one import package, ``wirefall``, whose subpackages are the design card's
top-level folders (issue 19: nothing named ``analyzer``, ``dissectors`` or ``ui`` at the top of
site-packages, where another project's package of that name would collide)."""
from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_the_wheel_holds_one_top_level_package_with_every_module(tmp_path):
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path), str(ROOT)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    (whl,) = tmp_path.glob("wirefall-*.whl")
    names = zipfile.ZipFile(whl).namelist()
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == {"wirefall"}
    # every module of the source folders is in it, under wirefall/
    src = {str(p.relative_to(ROOT)) for d in ("analyzer", "dissectors", "ui", "lab", "oracle") for p in (ROOT / d).rglob("*.py")}
    assert {f"wirefall/{s}" for s in src} <= set(names)
    entry = zipfile.ZipFile(whl).read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
    assert "wirefall = wirefall.ui.cli:main" in entry
