import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_environment_yml_mirrors_the_lock():
    lock = {l.strip() for l in (ROOT / "env/requirements.lock").read_text().splitlines()
            if re.match(r"^[A-Za-z0-9_.\-\[\]]+==", l.strip())}
    conda = {l.strip()[2:] for l in (ROOT / "environment.yml").read_text().splitlines()
             if re.match(r"^\s+- [A-Za-z0-9_.\-\[\]]+==", l)}
    assert lock == conda


def test_triton_is_left_out():
    lock = (ROOT / "env/requirements.lock").read_text()
    assert not re.search(r"^triton==", lock, re.M)
    import importlib.util
    assert importlib.util.find_spec("triton") is None
