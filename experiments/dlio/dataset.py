"""What DLIO reads: our generated data sets seen through a folder of DLIO's layout, or, where
DLIO cannot read our files, a data set DLIO generates itself with the same format and sizes.

DLIO 2.0 reads ``<data_folder>/train/*.<format>`` and ``<data_folder>/valid/*.<format>`` (both
folders must exist, even without evaluation) with one ``num_samples_per_file`` for both.

- **UNET3D**: DLIO's ``npy`` reader ``np.load``\\ s any .npy file, so it reads our cases as they
  are. The view folder holds two links, ``train -> <data>/train`` and ``valid -> <data>/eval``.
  One DLIO sample is one file: a case is two files (image ``_x.npy``, mask ``_y.npy``).
- **DLRM**: DLIO's ``indexed_binary`` reader needs files named ``*.indexed_binary`` with an
  offset index (``.off.idx``) and a size index (``.sz.idx``) of int64 beside them. The view
  holds links to our ``train_data.bin`` / ``test_data.bin`` under those names and the two
  index files (sample ``i`` at ``160 i``, 160 B), so DLIO reads our bytes.
- **RetinaNet**: DLIO's image reader (``format: jpeg``, PIL) decodes any JPEG, so it reads our
  files; it lists ``*.jpeg`` only, so the view holds one link per file, ``train/<name>.jpeg ->
  <data>/train/<name>.jpg`` (and ``valid/`` for the evaluation files). One DLIO sample is one file.
- **BERT**: DLIO's TFRecord reader parses every record for the features ``image`` (bytes) and
  ``size`` (int64); our records (``input_ids``, ...) stop it with ``InvalidArgumentError:
  Feature: image ... is required but could not be found``. DLIO therefore generates its own
  TFRecord set (``generate_data``) with our file count, samples per file and mean serialized
  sample size; :func:`bert_facts` measures ours and :func:`generated_bytes` DLIO's.

Links are symbolic (they cross file systems, so the view can sit beside the run's output): a
tracer sees DLIO open paths under the view folder; the bytes are those of the data set.
"""

from __future__ import annotations

import os
import shutil
import struct
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..settings.config import ConfigError

WORKLOADS = ("unet3d", "bert", "dlrm", "retinanet")
DLRM_SAMPLE_BYTES = 160  # experiments.workloads.data_dlrm.SAMPLE_BYTES (40 int32)
TFRECORD_FRAMING = 16    # per record: uint64 length, uint32 CRC of it, uint32 CRC of the data
# DLIO's TFRecord example (features 'image' bytes of dim*dim, 'size' int64) serializes to
# dim*dim plus this many bytes (measured: 494 B framed for dim 21 = 441 B + 16 + 37).
DLIO_TFEXAMPLE_OVERHEAD = 37


@dataclass
class DataFacts:
    """Measured facts of one of our data sets, what the DLIO config is sized from."""

    workload: str
    folder: Path
    train_files: int          # files DLIO will list under train/
    eval_files: int
    samples_per_file: int     # DLIO's num_samples_per_file
    eval_samples_per_file: int
    bytes_per_sample: float   # mean bytes of one DLIO sample (a file for UNET3D)
    bytes_std: float = 0.0
    train_bytes: int = 0
    extra: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"workload": self.workload, "folder": str(self.folder), "train_files": self.train_files,
                "eval_files": self.eval_files, "samples_per_file": self.samples_per_file,
                "eval_samples_per_file": self.eval_samples_per_file,
                "bytes_per_sample": self.bytes_per_sample, "bytes_std": self.bytes_std,
                "train_bytes": self.train_bytes, **self.extra}


def _missing(folder: Path, what: str) -> ConfigError:
    return ConfigError(f"DLIO data: {what} missing in {folder}; generate the workload's data first "
                       f"(`dvc repro workload_data`) or pass data_dir = a folder that has it")


def _splits(folder: Path, manifest: str, name: str, what: str):
    """(training rows, evaluation rows) of a data set's manifest (column ``split``); stops when
    the manifest or every training row is missing."""
    import pandas as pd

    if not (folder / manifest).exists():
        raise _missing(folder, f"{manifest} (the {name} manifest)")
    m = pd.read_csv(folder / manifest)
    tr, ev = m[m["split"] == "train"], m[m["split"] == "eval"]
    if tr.empty:
        raise _missing(folder, what)
    return tr, ev


def unet3d_facts(folder: Path) -> DataFacts:
    """Our UNET3D set: every .npy file is one DLIO sample (two per case)."""
    from ..workloads.data_unet3d import MANIFEST

    folder = Path(folder)
    tr, ev = _splits(folder, MANIFEST, "UNET3D", "training cases")
    sizes = np.concatenate([tr["bytes_x"].to_numpy(), tr["bytes_y"].to_numpy()]).astype(float)
    for p in list(tr["path_x"][:1]) + list(tr["path_y"][:1]):
        if not (folder / p).exists():
            raise _missing(folder, p)
    return DataFacts("unet3d", folder, train_files=2 * len(tr), eval_files=2 * len(ev),
                     samples_per_file=1, eval_samples_per_file=1,
                     bytes_per_sample=float(sizes.mean()), bytes_std=float(sizes.std()),
                     train_bytes=int(sizes.sum()),
                     extra={"cases": int(len(tr)), "eval_cases": int(len(ev)), "files_per_case": 2})


def count_tfrecords(path: Path) -> tuple[int, int]:
    """(records, payload bytes) of a TFRecord file, from its length prefixes (no TensorFlow)."""
    n = payload = 0
    with open(path, "rb") as f:
        while True:
            head = f.read(12)
            if not head:
                break
            if len(head) < 12:
                raise ConfigError(f"DLIO data: {path} is not a complete TFRecord file (truncated record)")
            (length,) = struct.unpack("<Q", head[:8])
            f.seek(length + 4, os.SEEK_CUR)
            n += 1
            payload += length
    return n, payload


def bert_facts(folder: Path) -> DataFacts:
    """Our BERT set: files, records per file and mean serialized sample size (from the files)."""
    folder = Path(folder)
    files = sorted((folder / "train").glob("part-*.tfrecord"))
    if not files:
        raise _missing(folder, "train/part-*.tfrecord")
    counts = [count_tfrecords(p) for p in files]
    records = [c[0] for c in counts]
    if len(set(records)) != 1:
        raise ConfigError(f"DLIO data: the BERT files in {folder}/train hold different numbers of "
                          f"samples ({sorted(set(records))}); DLIO needs one samples-per-file")
    total = sum(p.stat().st_size for p in files)
    ev = sorted((folder / "eval").glob("*.tfrecord"))
    ev_n = count_tfrecords(ev[0])[0] if ev else 0
    return DataFacts("bert", folder, train_files=len(files), eval_files=len(ev),
                     samples_per_file=records[0], eval_samples_per_file=ev_n,
                     bytes_per_sample=total / sum(records), train_bytes=total,
                     extra={"payload_bytes_per_sample": sum(c[1] for c in counts) / sum(records)})


def dlrm_facts(folder: Path) -> DataFacts:
    """Our DLRM set: one training file of 160-byte samples (and one test file)."""
    from ..workloads.data_dlrm import FILES

    folder = Path(folder)
    tr, ev = folder / FILES["train"], folder / FILES["eval"]
    if not tr.exists():
        raise _missing(folder, FILES["train"])
    n = tr.stat().st_size // DLRM_SAMPLE_BYTES
    ne = ev.stat().st_size // DLRM_SAMPLE_BYTES if ev.exists() else 0
    return DataFacts("dlrm", folder, train_files=1, eval_files=int(ev.exists()), samples_per_file=n,
                     eval_samples_per_file=ne, bytes_per_sample=float(DLRM_SAMPLE_BYTES),
                     train_bytes=tr.stat().st_size)


def retinanet_facts(folder: Path) -> DataFacts:
    """Our RetinaNet set: one JPEG per sample; the mean and spread of the training files' sizes."""
    from ..workloads.data_retinanet import MANIFEST

    folder = Path(folder)
    tr, ev = _splits(folder, MANIFEST, "RetinaNet", "training JPEGs")
    sizes = tr["bytes"].to_numpy(dtype=float)
    return DataFacts("retinanet", folder, train_files=len(tr), eval_files=len(ev), samples_per_file=1,
                     eval_samples_per_file=1, bytes_per_sample=float(sizes.mean()), bytes_std=float(sizes.std()),
                     train_bytes=int(sizes.sum()))


def facts(workload: str, folder: Path) -> DataFacts:
    if workload == "unet3d":
        return unet3d_facts(folder)
    if workload == "bert":
        return bert_facts(folder)
    if workload == "dlrm":
        return dlrm_facts(folder)
    if workload == "retinanet":
        return retinanet_facts(folder)
    raise ConfigError(f"DLIO workload = {workload!r}; allowed: {', '.join(WORKLOADS)}")


def _link(target: Path, link: Path) -> None:
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(Path(target).resolve())


def write_index(path: Path, n: int, sample_bytes: int) -> None:
    """DLIO's indexed-binary index files for ``n`` fixed-size samples: ``path.off.idx`` (offsets)
    and ``path.sz.idx`` (sizes), int64 little-endian, as DLIO's generator writes them."""
    off = np.arange(n, dtype=np.int64) * sample_bytes
    Path(f"{path}.off.idx").write_bytes(off.tobytes())
    Path(f"{path}.sz.idx").write_bytes(np.full(n, sample_bytes, dtype=np.int64).tobytes())


def make_view(f: DataFacts, view: Path) -> Path:
    """Build the folder DLIO reads (``train/``, ``valid/``) for our data set ``f``; returns it."""
    view = Path(view)
    shutil.rmtree(view, ignore_errors=True)
    view.mkdir(parents=True)
    if f.workload == "unet3d":
        _link(f.folder / "train", view / "train")
        if (f.folder / "eval").is_dir():
            _link(f.folder / "eval", view / "valid")
        else:
            (view / "valid").mkdir()
    elif f.workload == "dlrm":
        from ..workloads.data_dlrm import FILES

        for split, sub, n in (("train", "train", f.samples_per_file), ("eval", "valid", f.eval_samples_per_file)):
            (view / sub).mkdir()
            if n:
                dst = view / sub / (Path(FILES[split]).stem + ".indexed_binary")
                _link(f.folder / FILES[split], dst)
                write_index(dst, n, DLRM_SAMPLE_BYTES)
    elif f.workload == "retinanet":
        import pandas as pd

        from ..workloads.data_retinanet import MANIFEST

        m = pd.read_csv(f.folder / MANIFEST)
        for split, sub in (("train", "train"), ("eval", "valid")):
            (view / sub).mkdir()
            for p in m.loc[m["split"] == split, "path"]:
                _link(f.folder / p, view / sub / (Path(p).stem + ".jpeg"))
    else:
        raise ValueError(f"no view of our {f.workload} data: DLIO generates its own")
    return view


def dlio_record_length(serialized_bytes: float) -> int:
    """DLIO's ``record_length`` whose generated TFRecord sample serializes closest to
    ``serialized_bytes`` (framing included): DLIO writes an image of int(sqrt(L))^2 bytes."""
    payload = max(1.0, serialized_bytes - TFRECORD_FRAMING - DLIO_TFEXAMPLE_OVERHEAD)
    dim = max(1, int(round(payload ** 0.5)))
    return dim * dim


def generated_bytes(folder: Path, fmt: str = "tfrecord") -> tuple[int, int]:
    """(files, bytes) of the training files of a data set DLIO generated in ``folder``."""
    files = list((Path(folder) / "train").glob(f"*.{fmt}"))
    return len(files), sum(p.stat().st_size for p in files)


COMPLETE = ".dlio-complete"


def generated_ok(folder: Path, key: str) -> bool:
    """Whether ``folder`` holds a finished DLIO-generated set made for ``key``."""
    p = Path(folder) / COMPLETE
    return p.exists() and p.read_text().strip() == key
