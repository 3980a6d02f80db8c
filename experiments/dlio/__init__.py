"""DLIO, the anchor: the real ``dlio-benchmark`` 2.0.0 (the base of MLPerf Storage) configured
from ``params.yaml``, run, and read back, so our emulator can be put beside measured DLIO numbers.

For the side-by-side stage::

    from experiments import dlio
    r = dlio.run("unet3d", cfg=None, ranks=2, out_dir="results/x/dlio-unet3d",
                 compute_time_s=None, compute_model="fit", batch_size=2)
    r["status"]          # "measured" or "not measured" (r["why"] says why)
    r["row"]             # flat: samples/s, MB/s, DLIO's AU %, Eq 3.1 AU, steps, ...
    r["epochs"], r["steps"]   # tidy tables (per epoch; per rank and step)

    plan = dlio.prepare("bert", None, 2, out)     # writes the config, puts the data in place
    tr, rc = experiments.trace.Tracer(watch=plan.data_paths).run(plan.logged_command(),
                                                                 env=plan.env, cwd=plan.cwd)
    r = dlio.collect(plan, rc, wall_s)            # or simply dlio.execute(plan, tracer=...)

``dlio.status()`` says whether DLIO's environment (``.venv-dlio``) can run here and why not.
``python -m experiments.dlio --help``: status, plan (dry run: config and command), run, bench.
Modules: :mod:`.environment` (the venv), :mod:`.dataset` (what DLIO reads), :mod:`.workload_config`
(params -> DLIO config), :mod:`.runner` (launch), :mod:`.outputs` (DLIO's JSON -> tables),
:mod:`.bench` (zero-compute throughput per tier beside fio).
"""

from .environment import Status, status  # noqa: F401
from .runner import (DlioUnavailable, Plan, collect, command, execute, not_measured,  # noqa: F401
                     prepare, run, with_compute)
from .workload_config import WORKLOADS  # noqa: F401
