"""`pip wheel python/` builds a wheel holding the package and its extension."""

import os
import subprocess
import sys
import zipfile

ROOT = os.path.join(os.path.dirname(__file__), "..")


def test_pip_wheel(tmp_path):
    # --no-build-isolation: scikit-build-core and nanobind come from the
    # test environment (scripts/setup.sh installs them), no download.
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps",
                    "-q", "-w", str(tmp_path), ROOT], check=True)
    wheels = [f for f in os.listdir(tmp_path) if f.endswith(".whl")]
    assert len(wheels) == 1 and wheels[0].startswith("attn-")
    names = zipfile.ZipFile(tmp_path / wheels[0]).namelist()
    assert "attn/__init__.py" in names and "attn/flex.py" in names
    assert any(n.startswith("attn/_attn") and n.endswith(".so") for n in names)
