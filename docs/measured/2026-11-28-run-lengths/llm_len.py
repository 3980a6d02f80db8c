"""(docs/measured/2026-11-28-run-lengths) LLM checkpointing runs of 4 and 2 checkpoints (the
default profile's before and after), blocks alternating 4, 2, 2, 4, each block every (tier,
variant) once: a run's wall seconds (run_s), to check the saving estimate."""
from pathlib import Path

import pandas as pd

from experiments import config, tiers as T
from experiments.emulator import llm_stage as S

cfg = config.load(seed=None, tiers=None, llm_checkpoint=None)
c0 = cfg.llm_checkpoint
dirs = {n: Path(T.prepare(T.tier_named(n, cfg.tiers, "llm_checkpoint.tiers")).path)
        for n in dict.fromkeys([*c0.tiers, c0.burst_buffer.fast, c0.burst_buffer.slow])}
rows = []
for block, n in enumerate([4, 2, 2, 4]):
    c = c0.model_copy(update={"checkpoints": n, "repeats": 1})
    S.check(c, dirs)
    m = S.measure(c, dirs, cfg.seed + block)
    r = m.rows.assign(checkpoints=n, block=block)[["block", "checkpoints", "tier", "variant", "run_s"]]
    print(r.to_string(index=False), flush=True)
    rows.append(r)
df = pd.concat(rows)
df.to_csv("/tmp/p64/llm_len.csv", index=False)
print(df.groupby("checkpoints")["run_s"].describe())
