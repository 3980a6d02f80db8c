"""Names that do not exist, imports that shadow each other: pyflakes' rules (ruff F) over the
package, the tests and the notebooks. A merge that leaves a stale name fails here in a second
instead of in the middle of the smoke pipeline."""
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_pyflakes_rules_pass():
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff is not installed (env/requirements.lock pins it; run make setup)")
    p = subprocess.run([ruff, "check", "--select", "F", "--output-format", "concise",
                        "experiments", "tests", "notebooks"],
                       cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
