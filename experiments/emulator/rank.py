"""One emulated accelerator: ``python -m experiments.emulator.rank RUN_DIR`` (under ``torchrun``
for UNET3D and DLRM, one process per rank with ``TF_CONFIG`` for BERT; :mod:`.launch` starts it).

A thin dispatcher: it runs the real workload's own rank program
(:mod:`experiments.workloads.unet3d`, ``.bert``, ``.dlrm``), whose loop
(:mod:`experiments.workloads.loop`) sees the ``emulator`` block of ``run.json`` and then builds
no model, sleeps the compute time the run's resolved compute model (``run.json`` ``compute``)
draws, waits at the per-step barrier (``sync_steps``) and replays the checkpoint pattern
where the real program saves (:func:`.checkpoint.replayer`, passed in here: the workloads do
not import the emulator). So the data path, the step
records, the phases and the exit are the real run's, by construction.
"""

from __future__ import annotations

from importlib import import_module

from ..workloads.loop import read_run

PROGRAMS = {"unet3d": "unet3d", "bert": "bert", "dlrm": "dlrm", "retinanet": "retinanet"}


def main(argv=None) -> None:
    from .checkpoint import replayer

    run = read_run(argv)
    import_module(f"experiments.workloads.{PROGRAMS[run['workload']]}").main(argv, replay=replayer)


if __name__ == "__main__":
    main()
