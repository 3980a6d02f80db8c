"""Chien et al. 2018, "Characterizing Deep-Learning I/O Workloads in TensorFlow" (KTH).

Reproduced: the fio device baseline (Table I, :mod:`.fio_baseline`), the tf.data read
micro-benchmark over the ImageNet-like JPEGs (Fig 4, 5, :mod:`.tfdata_read`, report in
:mod:`.tfdata_read_report`), AlexNet training on the Caltech-like set with and without prefetch
and across batch sizes (Fig 6-8, :mod:`.alexnet`), and checkpoints written to a fast tier and
drained to a slow one by a burst buffer (Fig 9, 10, :mod:`.burst_buffer`; its drain process is
``python -m experiments.chien.burst_buffer drain``); figures and claims in :mod:`.alexnet_report`.
The data sets come from :mod:`experiments.datasets`.
"""
