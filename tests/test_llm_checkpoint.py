"""LLM checkpointing as MLPerf Storage defines it (experiments.emulator.llm_*)."""

import pytest

from experiments.emulator import llm_layout as L


@pytest.mark.parametrize("name", sorted(L.PUBLISHED_GIB))
def test_full_size_totals_match_the_published_sizes(name):
    lo = L.layout(name)
    assert lo.total_bytes / 2**30 == pytest.approx(L.PUBLISHED_GIB[name], rel=0.01)
    # the optimizer is 12 B a parameter, the weights 2 B: 6 : 1 (norms replicated over TP aside)
    assert lo.kind_bytes("optim") / lo.kind_bytes("model") == pytest.approx(6, rel=0.02)


def test_zero3_names_and_counts_per_rank():
    lo = L.layout("llama3-70b")           # TP 8 x PP 1 x DP 8: 64 ranks, 2 files each
    assert lo.ranks == 64 and all(len(fs) == 2 for fs in lo.files)
    assert [f.name for f in lo.files[11]] == ["zero_pp_rank_1_mp_rank_3_model_states.pt",
                                              "zero_pp_rank_1_mp_rank_3_optim_states.pt"]
    # ZeRO-3 shards the weights over DP: every rank's model file is the same size
    assert len({fs[0].bytes for fs in lo.files}) == 1


def test_zero1_layer_files_are_written_by_dp_rank_0_only():
    lo = L.layout("llama3-405b", scale=4096)   # TP 8 x PP 32 x DP 2
    m = lo.model
    model_files = [f for fs in lo.files for f in fs if f.kind == "model"]
    # every layer (embedding, 126 transformer layers, head, norm) once per TP rank
    assert len(model_files) == (m.layers + 3) * m.tp
    assert all(len(fs) == 1 for fs in lo.files[m.mp:])          # DP rank 1: optimizer only
    assert [f.name for f in lo.files[0]][:2] == ["layer_0-model_0_model_states.pt",
                                                 "layer_1-model_0_model_states.pt"]
    last = lo.files[m.mp - 1]                                     # last stage, last TP rank
    assert last[-2].name == f"layer_{m.layers + 2}-model_{m.mp - 1}_model_states.pt"
    assert sum(len(fs) for fs in lo.files) == len(model_files) + lo.ranks


def test_scale_keeps_names_counts_and_mix():
    full, small = L.layout("llama3-8b"), L.layout("llama3-8b", scale=1000)
    assert [[f.name for f in fs] for fs in full.files] == [[f.name for f in fs] for fs in small.files]
    assert [len(f.tensors) for f in small.files[0]] == [len(f.tensors) for f in full.files[0]]
    assert small.total_bytes == pytest.approx(full.total_bytes / 1000, rel=0.001)
    # fewer ranks of the same model: same total, more bytes a rank
    four = L.layout("llama3-8b", ranks=4, scale=1000)
    assert four.total_bytes == pytest.approx(small.total_bytes, rel=0.001)


@pytest.mark.parametrize("kw, word", [({"name": "llama3-7b"}, "allowed: llama3-8b"),
                                      ({"name": "llama3-70b", "ranks": 12}, "multiple of 8"),
                                      ({"name": "llama3-8b", "scale": 0.5}, ">= 1")])
def test_bad_layout_input_names_value_and_allowed(kw, word):
    with pytest.raises(ValueError, match=word):
        L.layout(**kw)
