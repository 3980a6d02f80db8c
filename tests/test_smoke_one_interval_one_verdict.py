"""Issue 66, item 4, on the smoke run's claims table: no row's verdict disagrees with the interval
it shows (an ``inconclusive`` whose interval lies wholly on one side of its rule and margin, or a
``holds``/``fails`` on an interval that straddles)."""

import pandas as pd
import pytest

from experiments.verdicts.verdict import disagreements

pytestmark = pytest.mark.smoke


def test_no_claims_row_contradicts_its_interval(smoke_root):
    t = pd.read_csv(smoke_root / "results" / "claims" / "claims.csv")
    assert len(t) and {"ci_low", "ci_high", "verdict", "rule", "margin", "kind"} <= set(t.columns)
    bad = disagreements(t)
    assert not bad, pd.DataFrame(bad).to_string()


def test_every_stage_claim_agrees_with_its_interval(smoke_root):
    import json

    rows = [c for p in sorted((smoke_root / "results").glob("*/claims.json")) if p.parent.name != "claims"
            for c in json.loads(p.read_text())]
    bad = disagreements(rows)
    assert not bad, pd.DataFrame(bad).to_string()
