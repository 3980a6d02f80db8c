"""Randomization level (RL) of an input order, as DeepIO (Zhu et al. 2018) defines it, made precise.

The poster writes RL = H / H_fully, with H the cross-entropy between the input sequence and a
fully shuffled one, built from the chance 1/(N - i) of drawing an element without replacement.
We make that exact for any *order generator* that, at step ``i``, draws the next element
uniformly among ``c_i`` candidates (``c_i = 1`` when the step is forced):

    H(order)  = mean over the generator's draws of log2(c_i)          [bits per draw]
    H_fully   = mean over i = 1..N of log2(i) = log2(N!) / N          [a full shuffle of N]
    RL        = H / H_fully                                          (0 = constant order, 1 = full shuffle)

A *forced* step (the 2nd..k-th sample of a block kept in constant order) is not a draw: a block
of k consecutive samples is one shuffled element, as in the poster ("every 4, 16 and 256 images
are treated as an independent element in shuffling"). So an order of N samples in blocks of k
has N/k draws among N/k, N/k - 1, ..., 1 candidates and ``RL = (log2((N/k)!) / (N/k)) / H_fully``.

The strict information content of the whole order, ``RL_total = sum(log2 c_i) / log2(N!)``, is
returned too (it counts forced steps as zero bits and is much smaller).

Orders produced by the opportunistic loader (:func:`opportunistic_order`) draw at every step
among the unused samples held in memory, so their ``c_i`` is the buffer occupancy.
"""

from __future__ import annotations

import math

import numpy as np


def h_fully(n: int) -> float:
    """H_fully for ``n`` samples: log2(n!) / n, in bits per draw."""
    if n < 1:
        raise ValueError(f"n = {n}; must be >= 1")
    return math.lgamma(n + 1) / math.log(2) / n


def rl_from_choices(choices: np.ndarray, n: int) -> dict:
    """RL and RL_total of an order of ``n`` samples from its candidate counts ``choices``.

    ``choices[i]`` is the number of candidates the generator drew among at step i (0 or 1 for a
    forced step; forced steps are those with ``choices == 0``). Returns bits and ratios.
    """
    c = np.asarray(choices, dtype=np.float64)
    draws = c[c >= 1]
    hf = h_fully(n)
    h = float(np.log2(draws).mean()) if len(draws) else 0.0
    total = float(np.log2(draws).sum()) if len(draws) else 0.0
    return {"H_bits": h, "H_fully_bits": hf, "RL": h / hf if hf > 0 else 1.0,
            "RL_total": total / (hf * n) if hf > 0 else 1.0, "draws": int(len(draws))}


def rl_blocked(n: int, k: int) -> float:
    """Closed form of RL for ``n`` samples shuffled in blocks of ``k`` (constant order inside)."""
    if k < 1:
        raise ValueError(f"k = {k}; must be >= 1")
    blocks = math.ceil(n / k)
    return h_fully(blocks) / h_fully(n) if blocks > 1 else 0.0


def blocked_order(n: int, k: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """An order of ``0..n-1`` where every ``k`` consecutive samples stay in constant order.

    The blocks (the last may be shorter) are shuffled as units. Returns the order and the
    candidate counts (``c_i`` at a block start, 0 for forced steps).
    """
    if k < 1:
        raise ValueError(f"k = {k}; must be >= 1")
    starts = np.arange(0, n, k)
    perm = rng.permutation(len(starts))
    order, choices = [], []
    for j, b in enumerate(perm):
        s = starts[b]
        block = np.arange(s, min(s + k, n))
        order.append(block)
        c = np.zeros(len(block), dtype=np.int64)
        c[0] = len(starts) - j
        choices.append(c)
    return np.concatenate(order), np.concatenate(choices)


def partition(n: int, procs: int, p: int) -> tuple[int, int]:
    """The contiguous slice [lo, hi) of ``n`` samples that process ``p`` of ``procs`` owns."""
    lo = n * p // procs
    return lo, n * (p + 1) // procs


def opportunistic_schedule(lo: int, hi: int, memory: int, chunk: int,
                           rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, list]:
    """One process's opportunistic order over its samples [lo, hi).

    The buffer holds ``memory`` samples. It is filled, and refilled whenever ``chunk`` slots are
    free, by sequential reads of ``chunk`` consecutive samples, in file order starting at a
    random chunk boundary (wrapping). Each step serves a sample drawn uniformly (``rng``, seeded
    the same way in every process) among the unused samples in memory.

    Returns (order, candidate counts, reads) where reads are (first sample, count) in issue order.
    """
    n = hi - lo
    memory = max(1, min(memory, n))
    chunk = max(1, min(chunk, memory))
    nchunks = math.ceil(n / chunk)
    first = int(rng.integers(nchunks)) if nchunks > 1 else 0
    chunks = [(lo + ((first + j) % nchunks) * chunk) for j in range(nchunks)]
    reads, pool = [], []
    order = np.empty(n, dtype=np.int64)
    choices = np.empty(n, dtype=np.int64)
    nxt = 0

    def fill():
        nonlocal nxt
        while nxt < len(chunks) and memory - len(pool) >= min(chunk, hi - chunks[nxt]):
            s = chunks[nxt]
            cnt = min(chunk, hi - s)
            reads.append((s, cnt))
            pool.extend(range(s, s + cnt))
            nxt += 1

    fill()
    for i in range(n):
        if not pool:  # cannot happen with memory >= chunk, kept as a guard
            fill()
        j = int(rng.integers(len(pool)))
        choices[i] = len(pool)
        pool[j], pool[-1] = pool[-1], pool[j]
        order[i] = pool.pop()
        fill()
    return order, choices, reads


def opportunistic_order(n: int, ratio: float, procs: int, chunk: int, seed: int,
                        epoch: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The global opportunistic order of ``procs`` processes over ``n`` samples.

    Process p owns a contiguous share and a buffer of ``ratio * n / procs`` samples; processes
    deliver in turn (one sample each, round-robin), as workers consuming from every server.
    Returns the delivered order and the candidate counts.
    """
    if not 0 < ratio <= 1:
        raise ValueError(f"ratio R = {ratio}; must be in (0, 1]")
    if procs < 1:
        raise ValueError(f"procs P = {procs}; must be >= 1")
    parts = []
    for p in range(procs):
        lo, hi = partition(n, procs, p)
        if hi <= lo:
            continue
        rng = np.random.default_rng([seed, epoch, p])
        mem = max(1, int(round(ratio * (hi - lo))))
        o, c, _ = opportunistic_schedule(lo, hi, mem, chunk, rng)
        parts.append((o, c))
    width = max(len(o) for o, _ in parts)
    order, choices = [], []
    for i in range(width):
        for o, c in parts:
            if i < len(o):
                order.append(o[i])
                choices.append(c[i])
    return np.array(order, dtype=np.int64), np.array(choices, dtype=np.int64)


def shuffled_order(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """A full shuffle with its candidate counts (n, n-1, ..., 1): RL = 1."""
    return rng.permutation(n), np.arange(n, 0, -1)
