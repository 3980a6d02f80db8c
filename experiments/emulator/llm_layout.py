"""The files of an LLM checkpoint as MLPerf Storage's checkpointing benchmark lays them out.

Pure arithmetic, no I/O: the model dimensions of llama3 8B, 70B, 405B and the 1T model as
MLPerf Storage v2.0 configures them (``configs/dlio/workload/llama3_*.yaml`` of
mlcommons/storage), the parallelism the rules fix, and for every rank the files it writes per
checkpoint, with DeepSpeed's names as DLIO writes them
(``dlio_benchmark/checkpointing/base_checkpointing.py``):

- ZeRO-3 (8B, 70B): every rank writes ``zero_pp_rank_{dp}_mp_rank_{mp}_model_states.pt``
  (its 1/DP shard of its tensor-parallel slice of every layer) and
  ``zero_pp_rank_{dp}_mp_rank_{mp}_optim_states.pt``;
- ZeRO-1 with pipeline parallelism (405B, 1T): the ranks of data-parallel rank 0 write one
  file per layer of their pipeline stage, ``layer_{i}-model_{mp}_model_states.pt``; every rank
  writes its optimizer file.

Parameters (the benchmark's count, GQA included): embedding ``v*h`` + per layer (input norm
``h``, QKV ``h*(h + 2*kv_heads*h/heads)``, output ``h*h``, norm ``h``, gated MLP ``3*h*ffn``)
+ final norm ``h`` + LM head ``v*h``. Weights are fp16 (2 B a parameter), the optimizer fp32:
three tensors of the rank's 1/(DP*TP*PP) share of the parameters (master weights, two Adam
moments: 12 B a parameter) and three small ``5*h`` tensors, as DLIO's.

``scale`` divides every tensor's element count (at least one element stays): file count,
names, the model/optimizer ratio and each file's tensor-size mix are kept. Units: bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

MODEL_BYTES, OPTIM_BYTES = 2, 4   # fp16 weights, fp32 optimizer state


@dataclass(frozen=True)
class Model:
    """Dimensions (MLPerf Storage's config) and the rules' parallelism of one model."""

    name: str
    layers: int
    hidden: int
    ffn: int
    heads: int
    kv_heads: int
    vocab: int
    tp: int
    pp: int
    dp: int
    zero: int

    @property
    def mp(self) -> int:
        """Model-parallel ranks: TP x PP."""
        return self.tp * self.pp

    @property
    def ranks(self) -> int:
        return self.tp * self.pp * self.dp


# dims from mlcommons/storage configs/dlio/workload/llama3_{8b,70b,405b,1t}.yaml (the 70B
# config gives 128 heads where the released model has 64: the benchmark's count is kept, it is
# what its published 912 GiB rests on); parallelism from the v2.0 rules
MODELS = {
    "llama3-8b": Model("llama3-8b", 32, 4096, 14336, 32, 8, 128256, tp=1, pp=1, dp=8, zero=3),
    "llama3-70b": Model("llama3-70b", 80, 8192, 28672, 128, 8, 128256, tp=8, pp=1, dp=8, zero=3),
    "llama3-405b": Model("llama3-405b", 126, 16384, 53248, 128, 8, 128256, tp=8, pp=32, dp=2, zero=1),
    "llama3-1t": Model("llama3-1t", 128, 25872, 98304, 192, 32, 128256, tp=8, pp=64, dp=2, zero=1),
}

# the totals the rules publish per checkpoint, in GiB (their "GB"; 405B's "5.29 TB" is 5,292
# GiB, not 5.29 TiB = 5,417 GiB), to test the layout against; 1T's "18 TB" is not derived
PUBLISHED_GIB = {"llama3-8b": 105, "llama3-70b": 912, "llama3-405b": 5292}


def parameters(m: Model) -> int:
    """Parameters of the whole model (the benchmark's formula, above)."""
    h, dkv = m.hidden, (m.hidden // m.heads) * m.kv_heads
    layer = h + h * (h + 2 * dkv) + h * h + h + 3 * h * m.ffn
    return 2 * m.vocab * h + m.layers * layer + h


def layer_elements(m: Model, index: int, dp: int) -> list[int]:
    """Element counts of the tensors of layer ``index`` one rank holds: 0 = embedding, 1..L the
    transformer layers, L+1 the LM head, L+2 the final norm; ZeRO-3 shards them over ``dp``."""
    h, dkv = m.hidden, (m.hidden // m.heads) * m.kv_heads
    s = dp if m.zero >= 3 else 1
    if index in (0, m.layers + 1):
        return [h * m.vocab // m.tp // s]
    if index == m.layers + 2:
        return [h // s]
    return [h // s, h * (h + 2 * dkv) // m.tp // s, h * h // m.tp // s, h // s,
            2 * h * m.ffn // m.tp // s, h * m.ffn // m.tp // s]


def layer_range(m: Model, pp_rank: int) -> range:
    """The layers (``layer_elements``' indices) of pipeline stage ``pp_rank``: transformer layers
    dealt as evenly as possible, the first ``L % PP`` stages one more; the embedding on the
    first stage, the LM head and final norm on the last."""
    per, rem = divmod(m.layers, m.pp)
    if pp_rank < rem:
        start = pp_rank * (per + 1) + 1
        end = start + per
    else:
        start = rem * (per + 1) + (pp_rank - rem) * per + 1
        end = start + per - 1
    if pp_rank == m.pp - 1:
        end = m.layers + 2
    if pp_rank == 0:
        start = 0
    return range(start, end + 1)


@dataclass(frozen=True)
class File:
    """One checkpoint file of one rank: its name, kind (``model``/``optim``), and the byte size
    of each tensor in it (after scaling)."""

    name: str
    kind: str
    tensors: tuple[int, ...]
    dtype_bytes: int

    @property
    def bytes(self) -> int:
        """Tensor bytes (torch.save adds a few KiB of pickle and zip headers)."""
        return sum(self.tensors)


def _scaled(elements: list[int], scale: float, dtype_bytes: int) -> tuple[int, ...]:
    return tuple(max(1, int(e // scale)) * dtype_bytes for e in elements if e > 0)


def check_ranks(m: Model, ranks: int) -> int:
    """Data-parallel ranks of a run of ``ranks`` ranks; ValueError unless ``ranks`` is a
    positive multiple of TP x PP."""
    if ranks < 1 or ranks % m.mp:
        raise ValueError(f"--ranks = {ranks}: {m.name} has TP {m.tp} x PP {m.pp} = {m.mp} model-"
                         f"parallel ranks; allowed: a multiple of {m.mp} (the rules: {m.ranks})")
    return ranks // m.mp


def rank_files(m: Model, rank: int, ranks: int | None = None, scale: float = 1.0) -> list[File]:
    """The files rank ``rank`` (of ``ranks``, default the rules') writes per checkpoint."""
    ranks = ranks or m.ranks
    dp = check_ranks(m, ranks)
    dp_rank, mp_rank = rank // m.mp, rank % m.mp
    pp_rank = (rank // m.tp) % m.pp
    out = []
    if m.zero >= 3:
        el = [e for i in layer_range(m, pp_rank) for e in layer_elements(m, i, dp)]
        out.append(File(f"zero_pp_rank_{dp_rank}_mp_rank_{mp_rank}_model_states.pt", "model",
                        _scaled(el, scale, MODEL_BYTES), MODEL_BYTES))
    elif dp_rank == 0:
        for i in layer_range(m, pp_rank):
            out.append(File(f"layer_{i}-model_{mp_rank}_model_states.pt", "model",
                            _scaled(layer_elements(m, i, dp), scale, MODEL_BYTES), MODEL_BYTES))
    p = parameters(m) // (dp * m.mp)
    out.append(File(f"zero_pp_rank_{dp_rank}_mp_rank_{mp_rank}_optim_states.pt", "optim",
                    _scaled([p, 5 * m.hidden] * 3, scale, OPTIM_BYTES), OPTIM_BYTES))
    return out


def checkpoint_dir(step: int, epoch: int = 1) -> str:
    """DeepSpeed's folder of one checkpoint."""
    return f"global_epoch{epoch}_step{step}"


@dataclass(frozen=True)
class Layout:
    model: Model
    ranks: int
    scale: float
    files: tuple[tuple[File, ...], ...]   # per rank

    @property
    def rank_bytes(self) -> list[int]:
        return [sum(f.bytes for f in fs) for fs in self.files]

    @property
    def total_bytes(self) -> int:
        """Bytes of one checkpoint, all ranks."""
        return sum(self.rank_bytes)

    @property
    def largest_file(self) -> int:
        return max(f.bytes for fs in self.files for f in fs)

    def kind_bytes(self, kind: str) -> int:
        return sum(f.bytes for fs in self.files for f in fs if f.kind == kind)


def layout(name: str, ranks: int | None = None, scale: float = 1.0) -> Layout:
    """Every rank's files of one checkpoint of model ``name`` (a key of :data:`MODELS`)."""
    if name not in MODELS:
        raise ValueError(f"--model = {name!r}; allowed: {', '.join(MODELS)}")
    if not scale >= 1:
        raise ValueError(f"--scale = {scale}: allowed: a number >= 1 (it divides every tensor)")
    m = MODELS[name]
    ranks = ranks or m.ranks
    check_ranks(m, ranks)
    return Layout(m, ranks, scale, tuple(tuple(rank_files(m, r, ranks, scale)) for r in range(ranks)))


def describe(lo: Layout, full: Layout | None = None) -> str:
    """The dry run's text: files per rank, bytes per file and per rank, the total; at full size
    (``full``) beside the scaled layout."""
    def one(x: Layout, what: str) -> list[str]:
        rb = x.rank_bytes
        sizes = sorted({f.bytes for fs in x.files for f in fs})
        counts = sorted({len(fs) for fs in x.files})
        return [f"{what}: {x.model.name}, {x.ranks} ranks (TP {x.model.tp} x PP {x.model.pp} x DP "
                f"{x.ranks // x.model.mp}, ZeRO-{x.model.zero}), scale 1/{x.scale:g}",
                f"  files per rank: {counts[0]}..{counts[-1]}; per checkpoint {sum(map(len, x.files))}",
                f"  bytes per file: {sizes[0]:,} .. {sizes[-1]:,} B",
                f"  bytes per rank: {min(rb):,} .. {max(rb):,} B",
                f"  total per checkpoint: {x.total_bytes:,} B = {x.total_bytes / 2**30:,.3f} GiB "
                f"(model {x.kind_bytes('model') / 2**30:,.3f} GiB, optimizer "
                f"{x.kind_bytes('optim') / 2**30:,.3f} GiB)"]
    lines = one(full, "full size") if full is not None else []
    lines += one(lo, "this run")
    r0 = lo.files[0]
    lines.append(f"  rank 0 writes: {', '.join(f.name for f in r0[:4])}{' ...' if len(r0) > 4 else ''}")
    return "\n".join(lines)
