"""Run one emulation into a results folder, or describe it without running (dry run).

``run(cfg, out_dir)`` on one machine works in ``<out_dir>.partial`` and renames it to
``out_dir`` once ``summary.json`` is written, so a folder named ``out_dir`` always holds a
finished run. Across machines (``cfg.nodes > 1``) every node runs ``run(cfg, out_dir,
node_rank=k, rdzv_endpoint=HOST:PORT)`` into the same (shared, or later gathered) folder; node
0 writes the summary after its ranks are done (every rank waits at a final barrier after
writing its records, so they are all there), and a folder without ``summary.json`` is not
finished.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

from ..host import device_audit
from . import launch, report
from .config import EmulatorConfig, check_config


def run(cfg: EmulatorConfig, out_dir, node_rank: int = 0, rdzv_endpoint: str | None = None,
        rdzv_id: str | None = None, hosts: list[str] | None = None, base_port: int | None = None,
        check: bool = True, parents=None) -> dict:
    """Run the emulation ``cfg``; returns the summary (``summary.json``; node 0) or ``{}``
    (other nodes). On one machine the summary carries the device audit of the run
    (:func:`.report.audit`); across machines it is not taken (each node's device saw its
    share). ``parents`` (one machine): an :class:`experiments.host.warm_launch.Parents` whose warm
    parent forks the ranks where it serves them (:func:`.launch.start`). Bad input raises :class:`~experiments.settings.config.ConfigError` before any process
    starts; a failed rank raises ``RuntimeError`` with its output."""
    if check:
        check_config(cfg)
    out_dir = Path(out_dir)
    if cfg.nodes == 1 and not rdzv_endpoint:
        work = out_dir.with_name(out_dir.name + ".partial")
        # what the device under the data did over the run, beside what the ranks read
        with device_audit.Span(cfg.data_dir, f"emulator {cfg.workload} G={cfg.accelerators}") as span:
            launch.execute(cfg, work, fresh=True, parents=parents)
        s = report.audit(report.summarize(work), span)
        s["run_dir"] = str(out_dir)
        report.write(work, s)
        _fix_paths(work, out_dir)
        shutil.rmtree(out_dir, ignore_errors=True)
        os.replace(work, out_dir)
        return s
    out_dir.mkdir(parents=True, exist_ok=True)
    launch.execute(cfg, out_dir, node_rank, rdzv_endpoint, rdzv_id or "emulator", hosts, base_port,
                   fresh=False)
    if node_rank != 0:
        return {}
    from .slurm import TASKS

    # a Slurm task writes into its own folder (<out>/tasks/task<K>, joined by `gather`): the other
    # nodes' files never appear there, and waiting for them cost every Slurm run _await_nodes's 60 s
    if out_dir.parent.name != TASKS:
        _await_nodes(out_dir, cfg.nodes)
    return report.write(out_dir)


def _await_nodes(out_dir: Path, nodes: int, timeout_s: float = 60.0) -> bool:
    """Wait (at most ``timeout_s``) for every node's ``threads-node<k>.csv``: the others pass
    the ranks' final barrier with node 0 and write theirs seconds later where the folder is
    shared. Whether all are there; a summary without some says so (``report.summarize``)."""
    deadline = time.monotonic() + timeout_s
    while not all((out_dir / f"threads-node{k}.csv").exists() for k in range(nodes)):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.5)
    return True


def _fix_paths(work: Path, final: Path) -> None:
    """run.json names the folder the ranks wrote to; after the rename it is ``final``."""
    p = work / "run.json"
    r = json.loads(p.read_text())
    r["run_dir"] = str(final)
    p.write_text(json.dumps(r, indent=1))


def describe(cfg: EmulatorConfig, out_dir="RUN_DIR", rdzv_endpoint: str | None = None,
             hosts: list[str] | None = None) -> str:
    """The dry run: the resolved configuration, what the run does and the launch command(s)."""
    import shlex

    from .checkpoint import load as load_pattern
    from ..workloads import compute_model as cm
    from .config import SCHEDULE, data_layout

    lines = ["resolved configuration:", json.dumps(cfg.to_json(), indent=1), ""]
    try:
        c = cm.resolve(cfg.compute_model, cfg.workload, cfg.accelerators, cfg.batch_size)
        lines.append(f"compute per step: Normal({c['mean_s']:.4g} s, {c['std_s']:.3g} s) from {cfg.compute_model}")
    except Exception as e:  # noqa: BLE001 - a dry run reports, it does not stop
        lines.append(f"compute model: {e}")
    try:
        p = load_pattern(cfg.checkpoint_pattern).require(cfg.workload)
        lines.append("checkpoint per writer: " + ("none" if p is None else
                     f"{p.summary.get('files')} file(s), {p.summary.get('writes')} writes, "
                     f"{p.summary.get('bytes')} B, writers {p.writers}, {p.reuse}"))
    except Exception as e:  # noqa: BLE001
        lines.append(f"checkpoint pattern: {e}")
    try:
        lay = data_layout(cfg.workload, cfg.data_dir)
        lines.append(f"data: {cfg.data_dir}: {lay.get('train_files')} training file(s), "
                     f"{lay['train_bytes'] / 1e6:.4g} MB")
    except Exception as e:  # noqa: BLE001
        lines.append(f"data: {e}")
    lines.append(f"schedule (as the real run): {SCHEDULE[cfg.workload]}")
    lines.append("")
    if cfg.nodes == 1 and not rdzv_endpoint:
        lines.append(f"launch (in {out_dir}.partial, renamed to {out_dir} when done):")
        lines.append(shlex.join(launch.command(cfg, f"{out_dir}.partial")))
    else:
        for k in range(cfg.nodes):
            lines.append(f"launch on node {k}:")
            lines.append(shlex.join(launch.command(cfg, out_dir, k, rdzv_endpoint, hosts)))
    return "\n".join(lines)
