"""Write environment.yml from env/requirements.lock, so conda users get the same pins.

Run by `make lock`; tests/test_env.py checks that the two agree.
"""
import pathlib
import re

root = pathlib.Path(__file__).resolve().parent.parent
pins = [line.strip() for line in (root / "env" / "requirements.lock").read_text().splitlines()
        if re.match(r"^[A-Za-z0-9_.\-\[\]]+==", line.strip())]
text = ("# Generated from env/requirements.lock by env/lock_to_conda.py (make lock); do not edit.\n"
        "# conda env create -f environment.yml && conda activate dlio-artifact && pip install --no-deps -e .\n"
        "name: dlio-artifact\nchannels:\n  - conda-forge\ndependencies:\n  - python=3.11\n  - pip\n"
        "  - fio\n  - strace\n  - pip:\n" + "".join(f"      - {p}\n" for p in pins))
(root / "environment.yml").write_text(text)
print(f"environment.yml: {len(pins)} pins")
