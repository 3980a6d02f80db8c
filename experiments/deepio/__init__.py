"""Zhu et al. 2018, DeepIO: "Entropy-Aware I/O Pipelining for Large-Scale Deep Learning on HPC
Systems" (MASCOTS poster).

Reproduced: the randomization level (RL) of sample orders (:mod:`.randomization`), validation
accuracy of a small classifier against the order it is fed in, and the read bandwidth of an
ordered loader against DeepIO's opportunistic one over a memory ratio and process count
(:mod:`.experiment`, Fig 7, 8, 10, 11 style); figures and claims in :mod:`.report`.
"""
