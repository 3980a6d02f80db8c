"""Pumma et al., "I/O Bottleneck Investigation in Deep Learning Systems" (LMDBIO).

Reproduced: P processes reading one LMDB database in batches under the paper's read strategies,
from every process walking its own cursor to one reader per node sharing batches and direct
``pread`` of recorded value offsets (:mod:`.read`: read time and throughput per strategy and
process count); figures and claims in :mod:`.report`.
"""
