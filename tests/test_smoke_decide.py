"""``make decide`` on the smoke profile: in a copy of the smoke project after its
whole ``dvc repro``, buy one round of the configurations one LMDBIO finding compares; the rows
are appended and marked, the first run's kept, DVC stays consistent, the configurations that
share a finding with them are topped up, and every finding of the stage whose configurations
were neither bought nor topped up keeps its verdict, value and interval (its level counts the
looks at its own data: experiments/claims/report_levels.py)."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from conftest import Background, smoke_project
from experiments.repeats import purchases as P
from experiments.repeats.findings import Steering, compared

pytestmark = pytest.mark.smoke
FINDING = "lmdbio_lmm_fewer_switches_cifar"


def _decide(base: Path, env: dict):
    """``make decide`` of one finding in a copy of the smoke project (its data linked) in
    ``base``: what the test asserts on, the first run's rows and verdicts read before."""
    smoke_root = smoke_project()
    root = base / "project"
    shutil.copytree(smoke_root, root, symlinks=True, ignore=shutil.ignore_patterns("data", "tmp"))
    (root / "data").symlink_to((smoke_root / "data").resolve(), target_is_directory=True)
    env = {**env, "DLIO_ROOT": str(root), "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"}
    first = pd.read_parquet(root / "results/lmdbio/raw.parquet")
    before = {c["id"]: c for c in json.loads((root / "results/lmdbio_report/claims.json").read_text())}
    try:
        p = subprocess.run([sys.executable, "-m", "experiments.review.decide", "--minutes", "10", "--finding", FINDING],
                           cwd=root, env=env, capture_output=True, text=True, timeout=600)
    except BaseException:
        _remove_own_tiers(root, env, smoke_root)
        raise
    return smoke_root, root, env, first, before, p


def _remove_own_tiers(root: Path, env: dict, smoke_root: Path) -> None:
    """The copy's own tier folders outside it (/dev/shm), not the smoke project's."""
    own = subprocess.run([sys.executable, "-m", "experiments.host.tiers", "dirs", "--own"], cwd=root, env=env,
                         capture_output=True, text=True).stdout.split()
    for d in own:
        if not str(d).startswith(str(smoke_root)) and Path(d).resolve() != (smoke_root / "data").resolve():
            shutil.rmtree(d, ignore_errors=True)


# started when the pipeline ends, beside the unit tests (31 s of the fresh-clone CI's serial tail)
DECIDED = Background(_decide)


@pytest.mark.background(DECIDED)
def test_decide_buys_one_findings_configurations_and_appends_its_rows(smoke_run):
    smoke_root, root, env, first, before, p = DECIDED.result()
    try:
        assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
        raw = pd.read_parquet(root / "results/lmdbio/raw.parquet")
        kept = raw[raw["made_by"] == P.FIRST].drop(columns="made_by").reset_index(drop=True)
        pd.testing.assert_frame_equal(kept, first.drop(columns="made_by", errors="ignore"), check_dtype=False)
        new = raw[raw["made_by"] == "decide 1"]
        bought_ = yaml.safe_load((root / "params.yaml").read_text())["decide"]["lmdbio"]
        assert len(bought_) == 1 and bought_[0]["runs"] == len(bought_[0]["configs"]) >= 2
        assert {c["strategy"] for c in bought_[0]["configs"]} == {"lmm", "lmdb"}
        # and the top-up: a run of each configuration sharing a finding with the bought ones
        top = bought_[0].get("top_up", []) if bought_[0].get("top_up_runs") else []
        assert len(new) == bought_[0]["runs"] + bought_[0].get("top_up_runs", 0) * len(top)
        assert (new["repeat"] > first["repeat"].max()).all() and new["run"].min() > first["run"].max()
        assert "Two runs compared: before and after" in p.stdout
        st = subprocess.run(["dvc", "status", "lmdbio", "lmdbio_report", "claims"], cwd=root, env=env,
                            capture_output=True, text=True, check=True).stdout
        assert "up to date" in st, st
        # the findings that compare none of the configurations bought or topped up keep what they had
        steer = [Steering(r["id"], r["rule"], r.get("margin"), r["compares"])
                 for r in json.loads((root / "results/claim_rules/lmdbio.json").read_text())]
        course = json.loads((root / "results/lmdbio/rounds.json").read_text())
        keys = course["keys"]
        cfgs = [dict(zip(keys, k)) for k in dict.fromkeys(P.key_of(r, keys) for r in first[keys].itertuples(index=False))]
        touched = {P.key_of(c, keys) for c in bought_[0]["configs"] + top}
        after = {c["id"]: c for c in json.loads((root / "results/lmdbio_report/claims.json").read_text())}
        kept_ids = [i for i in before if (idx := compared(i, cfgs, steer, course.get("context") or {}))
                    and not {P.key_of(cfgs[j], keys) for j in idx} & touched]
        assert kept_ids, (sorted(touched), sorted(before))
        same = lambda a, b: a == b or (a is None or pd.isna(a)) and (b is None or pd.isna(b))  # noqa: E731
        for i in kept_ids:
            assert all(same(before[i].get(k), after[i].get(k)) for k in ("verdict", "our_value", "ci_low", "ci_high")), \
                (i, before[i], after[i])
    finally:
        _remove_own_tiers(root, env, smoke_root)
