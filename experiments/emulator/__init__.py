"""The emulator: a storage benchmark that loads storage as UNET3D, BERT or DLRM training does,
without accelerators (the thesis's Ch. 3 and 5, MLPerf Storage's method, made measurable).

Each emulated accelerator is a process running the real workload's data path (imported from
:mod:`experiments.workloads`), sleeping the compute time a compute-model file gives, and writing
checkpoints as a pattern traced from the real framework says. Guide: ``docs/emulator.md``.

Public API (imported lazily, so ``from experiments.emulator import checkpoint`` loads only that)::

    from experiments import emulator
    cfg = emulator.from_params("unet3d", None, batch_size=4, accelerators=2,
                               compute_model="thesis-v100", data_dir="/mnt/nvme/unet3d")
    print(emulator.describe(cfg))              # dry run: resolved config + launch command
    emulator.command(cfg, "RUN_DIR")           # the launch command as a list
    s = emulator.run(cfg, "results/emu/unet3d")  # -> summary dict (summary.json, summary.md)
    s["au"], s["au_pass"], s["throughput_samples_per_s"], s["data_bytes_per_s"]
    emulator.max_accelerators(cfg, out_dir)    # largest G with AU >= 90 %, and what it tried
    emulator.datasize("unet3d", None, accelerators=8, batch_size=4)
    pat, rows = emulator.derive_pattern(trace, checkpoint_dir, "dlrm", ranks=2, app_log=run_dir)

LLM checkpointing as MLPerf Storage defines it (llama3 8B to 1T, DeepSpeed's files, fsync,
reads kept off the page cache, the burst buffer in front): :mod:`.llm_layout` (the files),
:mod:`.llm_rank` (an MPI rank), :mod:`.llm_checkpoint` (a run, its checks and metrics),
:mod:`.llm_burst_buffer`, :mod:`.llm_report` (the ``llm_checkpoint`` stage); ``python -m
experiments.emulator checkpoint --help``.

Command line: ``python -m experiments.emulator --help``.
"""

from importlib import import_module

_API = {
    "from_params": ("config", "from_params"), "EmulatorConfig": ("config", "EmulatorConfig"),
    "data_layout": ("config", "data_layout"), "command": ("launch", "command"),
    "run": ("runner", "run"), "describe": ("runner", "describe"),
    "summarize": ("report", "summarize"), "max_accelerators": ("search", "max_accelerators"),
    "datasize": ("datasize", "datasize"), "derive_pattern": ("checkpoint", "derive"),
    "load_pattern": ("checkpoint", "load"), "replay_pattern": ("checkpoint", "replay"),
    "write_pattern_file": ("checkpoint", "write_file"),
}
__all__ = sorted(_API)


def __getattr__(name):
    if name in _API:
        mod, attr = _API[name]
        return getattr(import_module(f"{__name__}.{mod}"), attr)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
