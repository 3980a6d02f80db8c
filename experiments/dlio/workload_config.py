"""DLIO's workload config for one (workload, ranks G, batch size B), from the same
``params.yaml`` sections as our real runs (``unet3d``, ``bert``, ``dlrm``), the measured facts
of the data set (:mod:`.dataset`) and a compute time (a compute-model file, thesis Eq 5.1-5.6,
or a number). Pure: no file is written, nothing is run; :func:`build` returns the config
(the ``workload`` group of DLIO's Hydra config, as DLIO's own ``configs/workload/*.yaml``) and
the notes that say where DLIO cannot do what the real run does.

How each real setting maps (DLIO 2.0.0's keys; see the module docs of :mod:`experiments.dlio`):

| | UNET3D | BERT | DLRM |
|---|---|---|---|
| framework / reader | pytorch / pytorch, ``npy`` | tensorflow / tensorflow, ``tfrecord`` | pytorch / pytorch, ``indexed_binary`` (reader plugin) |
| data | our cases (a sample = one file, 2 per case) | DLIO-generated, our files x samples x bytes | our file, index beside it |
| batch_size (per rank) | 2 B (files) | B | B / G (our B is global) |
| read_threads | ``train.workers`` | ``train.cycle_length`` (parallel reads) | 0 (no workers) |
| steps | ``train.epochs`` epochs | ``train.steps`` | ``train.steps`` |
| evaluation | after the last epoch (or every ``eval_every``) | not run (see notes) | not run (see notes) |
| checkpoint | after the last epoch, rank 0 | at the last step, every rank | every ``eval_every`` steps, rank 0 |
| computation_time | model(G, B) | model(G, B) | model(G, B global) |

RetinaNet (MLPerf Storage v3.0's ``retinanet_b200.yaml``, issue 69): pytorch / pytorch, ``jpeg``
(our JPEGs through a view of ``.jpeg`` links); batch B; ``read_threads`` = ``train.read_threads``,
``multiprocessing_context: fork``; ``train.epochs`` epochs; evaluation after the last epoch
(eval_time 0); a checkpoint after the last epoch, rank 0; ``metric.au`` the config's 0.85;
``record_length`` our measured mean file size and ``record_length_stdev`` its spread (the v3.0
YAML names the size ``record_length_bytes``, which DLIO 2.0.0 does not read: docs/dlio.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..settings.config import ConfigError
from .dataset import DataFacts, dlio_record_length

WORKLOADS = ("unet3d", "bert", "dlrm", "retinanet")
# DLIO 2.0 sleeps numpy.random.normal(mean, std) with no floor: a negative draw stops the run
# (ValueError: sleep length must be non-negative). The std is kept below mean / STD_GUARD.
STD_GUARD = 5.0
# TensorFlow's TFRecordDataset read buffer when none is given is 256 KiB; DLIO's bert_v100.yaml
# sets transfer_size to the same value.
TF_READ_BUFFER = 262144
DLRM_READER = "dlio_artifact_plugins.IndexedBinaryReaderQuietMap"


@dataclass
class Compute:
    """The per-step compute time DLIO sleeps: mean and std in seconds, and where they came from."""

    mean_s: float
    std_s: float
    source: str
    dlio_std_s: float = 0.0
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"compute_source": self.source, "compute_mean_s": self.mean_s,
                "compute_std_s": self.std_s, "dlio_computation_time": max(0.0, self.mean_s),
                "dlio_computation_time_stdev": self.dlio_std_s}


def compute_time(workload: str, ranks: int, batch_size: int, compute_time_s: float | None = None,
                 compute_model=None) -> Compute:
    """The compute time per step: ``compute_time_s`` if given (std 0), else the compute model
    resolved at (G = ranks, B) as every run is (``experiments.workloads.compute_model.resolve``)."""
    if compute_time_s is not None:
        if not (isinstance(compute_time_s, (int, float)) and math.isfinite(compute_time_s)
                and compute_time_s >= 0):
            raise ConfigError(f"DLIO compute_time_s = {compute_time_s!r}; allowed: a number of "
                              "seconds >= 0 (or None to take it from a compute model)")
        c = Compute(float(compute_time_s), 0.0, "given")
    else:
        from ..workloads import compute_model as cm

        r = cm.resolve(compute_model, workload, ranks, batch_size)
        c = Compute(r["mean_s"], r["std_s"], r["source"])
    if c.mean_s < 0:
        c.notes.append(f"the compute model gives a negative mean ({c.mean_s:.4g} s) at G={ranks}, "
                       f"B={batch_size}; DLIO sleeps 0")
    c.dlio_std_s = c.std_s
    mean = max(0.0, c.mean_s)
    if c.std_s > 0 and mean - STD_GUARD * c.std_s < 0:
        c.dlio_std_s = mean / STD_GUARD
        c.notes.append(f"computation_time_stdev {c.std_s:.4g} s lowered to {c.dlio_std_s:.4g} s "
                       f"(mean / {STD_GUARD:g}): DLIO 2.0 sleeps normal(mean, std) with no floor and "
                       "a negative draw stops the run")
    return c


def _section(section) -> dict:
    return section.model_dump() if hasattr(section, "model_dump") else dict(section)


def _check_common(workload: str, ranks: int, batch_size: int) -> None:
    if workload not in WORKLOADS:
        raise ConfigError(f"DLIO workload = {workload!r}; allowed: {', '.join(WORKLOADS)}")
    if not isinstance(ranks, int) or isinstance(ranks, bool) or ranks < 1:
        raise ConfigError(f"DLIO ranks = {ranks!r}; allowed: an integer >= 1 (processes, one per "
                          "emulated accelerator)")
    if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
        raise ConfigError(f"DLIO batch_size = {batch_size!r}; allowed: an integer >= 1")


@dataclass
class Built:
    """A DLIO workload config and what the caller needs to read DLIO's numbers back."""

    workload: str
    ranks: int
    batch_size: int             # ours: per rank (UNET3D, BERT) or global (DLRM)
    config: dict                # DLIO's `workload` group
    compute: Compute
    dlio_samples_per_sample: int  # DLIO samples that make one of our samples (2 for UNET3D)
    bytes_per_dlio_sample: float  # measured mean bytes of one DLIO sample (ours or DLIO's)
    needs_generation: bool
    notes: list[str]

    def facts(self) -> dict:
        return {"workload": self.workload, "ranks": self.ranks, "batch_size": self.batch_size,
                **self.compute.as_dict(), "dlio_samples_per_sample": self.dlio_samples_per_sample,
                "bytes_per_dlio_sample": self.bytes_per_dlio_sample,
                "dlio_generated_data": self.needs_generation}


def build(workload: str, section, ranks: int, batch_size: int, data: DataFacts, compute: Compute,
          *, data_folder: str, checkpoint_folder: str, checkpoint_bytes: int | None, seed: int,
          output_folder: str) -> Built:
    """DLIO's workload config for ``workload`` at (``ranks``, ``batch_size``); see the module
    docstring for the mapping. Raises :class:`ConfigError` before any work when DLIO could not
    run it (more ranks than files, more steps than one pass over the data, ...)."""
    _check_common(workload, ranks, batch_size)
    s = _section(section)
    notes = list(compute.notes)
    G, B = ranks, batch_size
    cfg: dict = {"model": f"{workload}_artifact",
                 "workflow": {"generate_data": False, "train": True, "evaluation": False,
                              "checkpoint": False, "profiling": False},
                 "dataset": {"data_folder": data_folder, "num_files_eval": 0, "keep_files": True,
                             "num_subfolders_train": 0, "num_subfolders_eval": 0},
                 "reader": {"file_shuffle": "seed", "sample_shuffle": "seed"},
                 "train": {"seed": int(seed), "computation_time": max(0.0, compute.mean_s),
                           "computation_time_stdev": compute.dlio_std_s},
                 "checkpoint": {"checkpoint_folder": checkpoint_folder, "layer_parameters": [],
                                "optimization_groups": []},
                 "output": {"folder": output_folder, "log_file": "dlio.log"}}
    ck = cfg["checkpoint"]
    per = _PARTS[workload](cfg, s, G, B, data, notes)
    gen = workload == "bert"   # DLIO reads a TFRecord set it generated (the note says why)
    if checkpoint_bytes is not None:
        if not isinstance(checkpoint_bytes, int) or checkpoint_bytes < 1:
            raise ConfigError(f"DLIO checkpoint_bytes = {checkpoint_bytes!r}; allowed: an integer "
                              ">= 1 (bytes of one real checkpoint), or None")
        cfg["workflow"]["checkpoint"] = True
        ck["model_size"] = int(checkpoint_bytes)
        notes.append(f"checkpoint: one tensor of {checkpoint_bytes} B (model_size; layer_parameters "
                     "set to [] so DLIO adds no 24.8 MB default layer file)")
    else:
        notes.append("no checkpoint: the size of the real run's checkpoint is not known (run the "
                     "workload's stage first, or pass checkpoint_bytes)")
    return Built(workload, G, B, cfg, compute, per, data.bytes_per_sample, gen, notes)


def _unet3d(cfg: dict, s: dict, G: int, B: int, data: DataFacts, notes: list[str]) -> int:
    """UNET3D's part of DLIO's config (PyTorch, one .npy file per sample, a case = ``per``
    files, evaluation every ``eval_every`` epochs); returns ``per``."""
    tr, ck = s["train"], cfg["checkpoint"]
    per = data.extra.get("files_per_case", 2)
    cases = data.extra["cases"]
    if G > cases or B * G > cases:
        raise ConfigError(f"DLIO unet3d: batch {B} x {G} ranks needs more than the {cases} "
                          f"training cases in {data.folder}; allowed: batch x ranks <= {cases}")
    workers = int(tr["workers"])
    crop = int(s["model"]["crop"])
    cfg["framework"] = "pytorch"
    cfg["dataset"].update(format="npy", num_files_train=data.train_files, num_samples_per_file=1,
                          record_length=int(round(data.bytes_per_sample)),
                          record_length_stdev=int(round(data.bytes_std)),
                          record_length_resize=min(int(round(data.bytes_per_sample)), 4 * crop ** 3))
    cfg["reader"].update(data_loader="pytorch", batch_size=per * B, read_threads=workers,
                         prefetch_size=2 * max(1, workers), batch_size_eval=per)
    cfg["train"]["epochs"] = int(tr["epochs"])
    notes.append(f"a DLIO sample is one .npy file; a case is {per} files (image, mask), so DLIO's "
                 f"batch is {per} x {B} files and its samples/s are divided by {per}")
    if data.eval_files:
        every = int(tr["eval_every"])
        cfg["workflow"]["evaluation"] = True
        cfg["dataset"]["num_files_eval"] = data.eval_files
        cfg["evaluation"] = {"eval_time": 0.0, "eval_after_epoch": every or int(tr["epochs"]),
                             "epochs_between_evals": every or int(tr["epochs"])}
        notes.append("evaluation reads every evaluation case once (batch = one case) with "
                     "eval_time 0: no compute model covers the sliding-window inference")
        if data.eval_files // per < G:
            notes.append(f"only {data.eval_files // per} evaluation cases for {G} ranks: DLIO "
                         "reads whole batches (one case) per rank, so some ranks read none "
                         "(the real run pads the split)")
    ck.update(checkpoint_after_epoch=int(tr["epochs"]), epochs_between_checkpoints=1,
              type="rank_zero")
    return per


def _bert(cfg: dict, s: dict, G: int, B: int, data: DataFacts, notes: list[str]) -> int:
    """BERT's part of DLIO's config (TensorFlow, a TFRecord set DLIO generates, checkpoint at
    the last step); returns the files per sample (1)."""
    tr, ck = s["train"], cfg["checkpoint"]
    if G > data.train_files:
        raise ConfigError(f"DLIO bert: {G} ranks but {data.train_files} files; DLIO shards "
                          f"files over ranks; allowed: ranks <= {data.train_files}")
    per_pass = data.train_files * data.samples_per_file // (B * G)
    steps = int(tr["steps"])
    if steps > per_pass:
        raise ConfigError(f"DLIO bert: bert.train.steps = {steps} is more than one pass over "
                          f"the data ({data.train_files} files x {data.samples_per_file} samples "
                          f"/ (batch {B} x {G} ranks) = {per_pass} steps), which DLIO 2.0 refuses; "
                          f"allowed: steps <= {per_pass} (or more data)")
    cfg["framework"] = "tensorflow"
    cfg["dataset"].update(format="tfrecord", num_files_train=data.train_files,
                          num_samples_per_file=data.samples_per_file,
                          record_length=dlio_record_length(data.bytes_per_sample),
                          record_length_stdev=0, file_prefix="part")
    cfg["reader"].update(data_loader="tensorflow", batch_size=B,
                         read_threads=min(int(tr["cycle_length"]), data.train_files),
                         computation_threads=int(tr["map_threads"]),
                         shuffle_size=int(tr["shuffle_buffer"]), transfer_size=TF_READ_BUFFER,
                         prefetch_size=0)
    cfg["train"].update(epochs=1, total_training_steps=steps, seed_change_epoch=False)
    ck.update(steps_between_checkpoints=steps, type="all_ranks")
    notes.append("DLIO's TFRecord reader parses every record for features 'image' and 'size', "
                 "which our BERT records do not have: DLIO reads a TFRecord set it generated "
                 f"({data.train_files} files x {data.samples_per_file} samples, record_length "
                 f"{cfg['dataset']['record_length']} B for our {data.bytes_per_sample:.0f} B per "
                 "serialized sample)")
    notes.append("no evaluation: DLIO 2.0 reads whole evaluation files (num_samples_per_file is "
                 f"shared with training); the real run reads {tr['eval_steps']} batches")
    notes.append("checkpoint at the last step only (DLIO cannot checkpoint before step 1; the "
                 "real run also writes one at the start)")
    return 1


def _dlrm(cfg: dict, s: dict, G: int, B: int, data: DataFacts, notes: list[str]) -> int:
    """DLRM's part of DLIO's config (PyTorch, one indexed binary file, the global batch split
    over the ranks); returns the files per sample (1)."""
    tr, ck = s["train"], cfg["checkpoint"]
    if B % G:
        raise ConfigError(f"DLIO dlrm: the global batch {B} is split over {G} ranks; allowed: "
                          f"a batch size that is a multiple of ranks")
    per_rank = B // G
    per_pass = data.samples_per_file // (per_rank * G)
    steps = int(tr["steps"])
    if steps > per_pass:
        raise ConfigError(f"DLIO dlrm: dlrm.train.steps = {steps} is more than one pass over "
                          f"the {data.samples_per_file} samples at global batch {B} "
                          f"({per_pass} steps), which DLIO 2.0 refuses; allowed: steps <= {per_pass}")
    # DLIO's PyTorch path, as MLPerf's dlrm.yaml, with DLIO's reader plugin hook naming
    # IndexedBinaryReaderQuietMap (plugins/dlio_artifact_plugins.py): DLIO's own reader
    # minus a debug f-string that formats the whole sample map on every sample.
    cfg["framework"] = "pytorch"
    cfg["dataset"].update(format="indexed_binary", num_files_train=1,
                          num_samples_per_file=data.samples_per_file,
                          record_length=int(data.bytes_per_sample), record_length_stdev=0)
    cfg["reader"].update(data_loader="pytorch", batch_size=per_rank, read_threads=0,
                         prefetch_size=0, reader_classname=DLRM_READER)
    cfg["train"].update(epochs=1, total_training_steps=steps)
    every = int(tr["eval_every"]) or steps
    ck.update(steps_between_checkpoints=every, type="rank_zero")
    notes.append("reader plugin IndexedBinaryReaderQuietMap (DLIO's reader_classname hook): "
                 "DLIO 2.0's read_index formats the rank's whole sample map into a debug "
                 "message on every sample (O(samples) per sample: 10 ms at 4,096 samples, "
                 "1 s at 500,000); the plugin drops that line and nothing else")
    notes.append(f"DLIO reads each sample with its own open/seek/read/close ({per_rank} per "
                 "step and rank, 160 B through a buffered file, in a shuffled order); the real "
                 "loader reads one global batch with one pread per step")
    notes.append("no evaluation: DLIO 2.0 has one num_samples_per_file for training and "
                 f"evaluation (ours: {data.samples_per_file} and {data.eval_samples_per_file}); "
                 "its dlrm.yaml keys eval_num_samples_per_file, total_eval_steps and "
                 "steps_between_evals are not read by its config loader")
    notes.append(f"checkpoints every {every} steps under new names (the real run overwrites "
                 "one file)")
    return 1


def _retinanet(cfg: dict, s: dict, G: int, B: int, data: DataFacts, notes: list[str]) -> int:
    """RetinaNet's part of DLIO's config, the v3.0 ``retinanet_b200.yaml``'s fields from our
    section (PyTorch, one JPEG per sample); returns the files per sample (1)."""
    from ..settings.reference import MLPERF_V3_RETINANET as V3

    tr, ck = s["train"], cfg["checkpoint"]
    if B * G > data.train_files:
        raise ConfigError(f"DLIO retinanet: batch {B} x {G} ranks needs more than the {data.train_files} "
                          f"training files in {data.folder}; allowed: batch x ranks <= {data.train_files}")
    workers = int(tr["read_threads"])
    cfg["framework"] = V3["framework"]
    # record_length (not the v3.0 YAML's record_length_bytes, which DLIO 2.0.0 does not read):
    # what DLIO multiplies its samples/s by for its MB/s
    cfg["dataset"].update(format=V3["format"], num_files_train=data.train_files, num_samples_per_file=1,
                          record_length=int(round(data.bytes_per_sample)),
                          record_length_stdev=int(round(data.bytes_std)))
    cfg["reader"].update(data_loader=V3["data_loader"], batch_size=B, read_threads=workers,
                         multiprocessing_context=V3["multiprocessing_context"],
                         prefetch_size=2 * max(1, workers), batch_size_eval=1)
    cfg["train"]["epochs"] = int(tr["epochs"])
    cfg["metric"] = {"au": V3["au"]}
    if data.eval_files:
        cfg["workflow"]["evaluation"] = True
        cfg["dataset"]["num_files_eval"] = data.eval_files
        e = int(tr["epochs"])
        cfg["evaluation"] = {"eval_time": 0.0, "eval_after_epoch": e, "epochs_between_evals": e}
        notes.append("evaluation reads every evaluation file once after the last epoch with eval_time 0 "
                     "(the real run detects on each; no compute model covers it)")
    ck.update(checkpoint_after_epoch=int(tr["epochs"]), epochs_between_checkpoints=1, type="rank_zero")
    notes.append("DLIO's image reader decodes each JPEG (PIL, np.asarray) and does not resize it; the real "
                 f"loader also resizes to {s['model']['image_size']} px and scales its boxes")
    notes.append(f"record_length {cfg['dataset']['record_length']} B, our files' mean (the v3.0 config's "
                 f"record_length_bytes is {V3['record_length_bytes']} B, a key DLIO 2.0.0 does not read)")
    return 1


_PARTS = {"unet3d": _unet3d, "bert": _bert, "dlrm": _dlrm, "retinanet": _retinanet}
