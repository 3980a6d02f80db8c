"""The papers' own numbers that the code uses: generator targets, parameters, figure references.
They appear only in columns that say they are the paper's. What a paper *claims* (its quote, the
value, the rule that judges ours) is declared in ``experiments/claims/papers/<source>.yaml``
instead; a constant no module reads any more is removed (``tests/test_reference.py``).

Sources are in ``../shared/papers/``. Every constant names its source in the comment block
directly above it (or on its line): the paper (Chien, Zhu, Pumma, Nelson, Ho-Von) and the
section, table, figure or equation where the number is printed; ``DLIO's config`` for a value
that is in none of the texts. ``tests/test_reference.py`` fails on a constant without one.
Section numbers are those of the texts in ``../shared/papers/`` (Chien et al.'s Section VI is
Related Work; its results are in Section V, the Abstract and Section VII).
"""

from __future__ import annotations

# Chien et al. 2018, Table I (IOR, median of 5 after a warm-up), MB/s.
CHIEN_TABLE_I = [
    {"system": "Blackdog", "device": "HDD", "read_MBps": 163.00, "write_MBps": 133.14},
    {"system": "Blackdog", "device": "SSD", "read_MBps": 280.55, "write_MBps": 195.05},
    {"system": "Blackdog", "device": "Optane", "read_MBps": 1603.06, "write_MBps": 511.78},
    {"system": "Tegner", "device": "Lustre", "read_MBps": 1968.618, "write_MBps": 991.914},
]

# Chien et al. 2018, Abstract and Section VII: speed-up of tf.data read bandwidth over one thread
# (HDD on Blackdog with 2, 4, 8 threads). The claims' paper values (this, Lustre's 7.8x, the
# burst buffer's 2.6x, the data sets' sizes, DeepIO's BeeGFS bandwidths) are declared with their
# quotes in experiments/claims/papers/; what stays here, code reads.
CHIEN_HDD_SPEEDUP = {2: 1.65, 4: 1.95, 8: 2.3}

# Chien et al. 2018, Section IV-A: the ImageNet subset.
CHIEN_IMAGENET_SUBSET_IMAGES = 16_384

# Nelson's blog, the fio command line after the ImageNet size histogram: the file-size mix as
# fio's bssplit.
NELSON_IMAGENET_BSSPLIT = "2K/1:4K/2:8K/4:16K/8:32K/13:64K/38:128K/33:256K/1"

# ---- issue 6: DeepIO, LMDBIO, Nelson's blog -------------------------------------------------
# Zhu et al. 2018 (DeepIO poster), Fig 7 caption and the text beside it: randomization level of orders kept constant in blocks of k
# images ("RL = 73%, 49%, and 16% imply that 4, 16, and 256 images are concatenated"), percent.
ZHU_DEEPIO_RL_PERCENT = {4: 73, 16: 49, 256: 16}

# Nelson's blog, the collectl disk read statistics (PyTorch and TensorFlow runs), median of the
# five 1-s rows of each table.
NELSON_COLLECTL = {
    "pytorch": {"read_KBps": 747_824, "reads_per_s": 6_595, "KB_per_read": 113, "queue_len": 604},
    "tensorflow": {"read_KBps": 968_776, "reads_per_s": 7_560, "KB_per_read": 128, "queue_len": 7},
}

# ---------------------------------------------------------------------------------------
# Ho-Von 2023 (thesis), the three MLPerf workloads (issue 5; experiments/workloads/).
# Eq 5.1 to 5.6: compute-time mean and standard deviation in seconds on a V100 DGX-1,
# linear in G (NumGPUs) and B (BatchSize; global for DLRM): a*G + b*B + c, with R^2.
HOVON_COMPUTE_FITS = {
    "unet3d": {"mean": {"G": 2.784e-3, "B": 2.755e-1, "c": 2.722e-1, "r2": 0.99},    # Eq 5.1
               "std": {"G": 7.960e-3, "B": 1.152e-2, "c": -4.872e-2, "r2": 0.63}},   # Eq 5.2
    "bert": {"mean": {"G": 6.228e-3, "B": 1.17e-1, "c": -3.294e-1, "r2": 0.99},      # Eq 5.3
             "std": {"G": 4.484e-3, "B": -1.283e-3, "c": 9.669e-3, "r2": 0.64}},     # Eq 5.4
    "dlrm": {"mean": {"G": 6.311e-3, "B": 1.475e-6, "c": -3.612e-3, "r2": 0.95},     # Eq 5.5
             "std": {"G": 3.289e-4, "B": 6.447e-8, "c": -1.446e-3, "r2": 0.71}},     # Eq 5.6
}
# Ho-Von 2023, Section 5.1.3: UNET3D evaluation (sliding window, batch 1) ~ Normal(8.403 s, 4.442 s).
HOVON_UNET3D_EVAL_S = {"mean": 8.403, "std": 4.442}
# Ho-Von 2023, Section 5.3.2: DLRM's data loading is "about 10%" of the step; UNET3D's and BERT's
# "negligible in comparison" (Fig 5.2, 5.9, 5.14).
HOVON_DLRM_DATA_SHARE = 0.10
# Ho-Von 2023, Section 5.1.3 (Fig 5.5, 5.6), UNET3D with sleep() instead of compute: median data latencies
# "between 1 to 3 times lower than those of the original"; inter-quartile ranges of the data
# latency "spanning around 0.0001 seconds for sleep, vs around 0.02 seconds for the original".
HOVON_SLEEP_DATA_LATENCY_RATIO = (1.0, 3.0)        # real / sleep, range
HOVON_SLEEP_DATA_IQR_S = {"sleep": 0.0001, "real": 0.02}
# Ho-Von 2023, Section 5.1.3: UNET3D preprocessing "mostly below 0.3 seconds" on the real data; on generated
# data median data latencies rise by "up to 4 orders of magnitude".
HOVON_UNET3D_PREP_REAL_S = 0.3
HOVON_GENERATED_DATA_LATENCY_RATIO_MAX = 1e4
# Ho-Von 2023, Table 4.1 and Sections 4.1.1-4.1.3: data set shapes at paper scale.
HOVON_DATASETS = {
    "unet3d": {"train_cases": 168, "eval_cases": 42, "image_MB_mean": 117, "image_MB_std": 54,
               "mask_MB_mean": 29, "mask_MB_std": 13, "checkpoint_MB": 500},
    "bert": {"files": 500, "samples_per_file": 313_000, "sample_bytes": 2825, "seq_len": 512,
             "max_predictions": 76, "eval_samples": 10_000, "checkpoint_GB": 4},
    "dlrm": {"train_GB": 671, "samples": 4.2e9, "sample_bytes": 160, "embedding_dim": 128,
             "checkpoint_GB": 27},
}
# Ho-Von 2023, checkpoints in the traced runs of Tables 5.1-5.3 (Sections 5.1.2, 5.2.1, 5.3.1): UNET3D one at
# the end of training (rank 0); BERT at the start and at the end, every one of the 8 workers
# writing its own files; DLRM two (after each evaluation, every 16,384 of 32,768 steps), rank 0,
# overwriting the previous file.
HOVON_CHECKPOINT_EVENTS = {
    "unet3d": {"checkpoints": 1, "writers": 1, "reuse": "overwrite"},
    "bert": {"checkpoints": 2, "writers": 8, "reuse": "new"},
    "dlrm": {"checkpoints": 2, "writers": 1, "reuse": "overwrite"},
}
# DLIO's config (DLIO 2.0's workload YAML files, named in DESIGN.md; in none of the five texts):
# computation_time per step, seconds.
DLIO_COMPUTATION_TIME_S = {"unet3d_v100_b4": 1.3604, "bert_v100_b48": 0.968, "dlrm": 0.064296}
# MLPerf Storage v3.0's RetinaNet (mlcommons/storage configs/dlio/workload/retinanet_b200.yaml; in
# none of the five texts, issue 69): the fields DLIO reads, as the YAML gives them.
MLPERF_V3_RETINANET = {"framework": "pytorch", "format": "jpeg", "record_length_bytes": 322_957,
                       "num_files_train": 1_170_301, "data_loader": "pytorch", "batch_size": 24,
                       "read_threads": 8, "multiprocessing_context": "fork", "epochs": 8,
                       "computation_time": 0.04755, "au": 0.85}
# Ho-Von 2023, the GPU counts its text names: 8 GPUs (Sec 4.1, Fig 5.1, 5.8, 5.13), the single-GPU
# case (Sec 5.1.3) and the 4-GPU case (Sec 5.3.2). The figures' sweeps (Fig 5.2, 5.9, 5.14) may
# hold more counts, which the text does not list, so none is added here.
HOVON_GRID_RANKS = [1, 4, 8]

# ---- Chien et al. 2018, AlexNet mini-application (Sections IV-B, IV-C, V-B, V-C, VII) ----
# Chien et al. 2018, Section IV-B: the Caltech 101 set: 9,144 images, 101 classes + background
# (its median ~12 kB and mean ~14 kB: papers/chien2018-tensorflow-io.yaml).
CHIEN_CALTECH_IMAGES = 9_144
CHIEN_CALTECH_CLASSES = 102
# Chien et al. 2018, Section IV-B: batch 64, one epoch = 142 iterations (9,088 images); six runs,
# the first a warm-up.
CHIEN_ALEXNET_BATCH = 64
CHIEN_ALEXNET_ITERATIONS = 142
# Chien et al. 2018, Section IV-C (100 iterations, a checkpoint every 20).
CHIEN_CKPT_ITERATIONS = 100
CHIEN_CKPT_INTERVAL = 20

# --- Ho-Von 2023, tracing and the similarity metric (Sections 4.2, 4.6; Tables 4.2, 5.1-5.3) ---
# Ho-Von 2023, Sec 5.1.4 (95 %), 5.2.3 (96 %), 5.3.3 (98 %) and the Abstract ("95 % or more"):
# weighted cosine similarities between each workload and its MLPerf Storage emulation.
HOVON_SIMILARITY = {"unet3d": 0.95, "bert": 0.96, "dlrm": 0.98}
# Ho-Von 2023, Table 4.2 and Sec 4.6: weight 2 for every read component, 1 for every write
# component.
HOVON_WEIGHT_READ = 2
HOVON_WEIGHT_WRITE = 1
# Ho-Von 2023, Table 5.1 (UNET3D vs MLPerf Storage), two rows used as a worked example of the difference
# column, (B - A) / A * 100: number of VFS reads 80,745 vs 80,960 -> 0.27 %.
HOVON_TABLE_5_1_VFS_READS = (80745, 80960)
# Ho-Von 2023, Tables 5.1-5.3: the components of both runs, in Table 4.2's order (keys of
# experiments.trace.vector.KEYS): workload, then its MLPerf Storage emulation.
_HOVON_KEYS = ["vfs_reads", "vfs_read_bytes", "unique_files_read", "vfs_read_size_q1",
               "vfs_read_size_median", "vfs_read_size_q3", "bio_reads", "bio_read_bytes",
               "bio_random_read_pct", "bio_sequential_read_pct", "bio_vfs_read_pct", "vfs_writes",
               "vfs_write_bytes", "unique_files_written", "vfs_write_size_q1",
               "vfs_write_size_median", "vfs_write_size_q3", "bio_writes", "bio_write_bytes"]
HOVON_TABLES_5 = {
    "unet3d": {  # Table 5.1, similarity 0.95
        "workload": dict(zip(_HOVON_KEYS, [80745, 1165694431611, 420, 672.0, 4096.0, 4096.0, 118021,
                                           30523412480, 2.57, 97.43, 2.62, 230, 499153191, 1, 1280.0,
                                           3904.0, 1769472.0, 2091, 487636992])),
        "emulation": dict(zip(_HOVON_KEYS, [80960, 1258810223064, 336, 968.0, 4096.0, 4096.0, 126713,
                                            32640921600, 10.53, 89.47, 2.59, 220, 499153191, 1, 1280.0,
                                            110267.5, 4084327.5, 1900, 496320512]))},
    "bert": {  # Table 5.2, similarity 0.96
        "workload": dict(zip(_HOVON_KEYS, [1416, 358804912, 195, 262144, 262144, 262144, 2683, 383926272,
                                           69.25, 30.75, 107.0, 18624, 64751582944, 50, 4096, 12288,
                                           8384512, 219012, 57171083264])),
        "emulation": dict(zip(_HOVON_KEYS, [1375, 360448000, 193, 262144, 262144, 262144, 2519, 313495552,
                                            86.58, 13.42, 86.97, 15392, 64555412992, 16, 4096, 4090736,
                                            8384512, 248983, 64456413184]))},
    "dlrm": {  # Table 5.3, similarity 0.98
        "workload": dict(zip(_HOVON_KEYS, [36867, 182546595840, 2, 5242880, 5242880, 5242880, 698019,
                                           182963814400, 5.46, 94.54, 100.23, 106, 54871274798, 1, 7348,
                                           2097216, 825041024, 206960, 54230310912])),
        "emulation": dict(zip(_HOVON_KEYS, [36862, 173140213760, 2, 5242880, 5242880, 5242880, 682428,
                                            178359902208, 5.29, 94.71, 103.01, 135, 54258333122, 2, 7348,
                                            7446, 724178468, 204929, 53688725504]))},
}

# ---- Ho-Von 2023, the thesis's headline numbers (issue 24) -------------------------------------
# Ho-Von 2023, Sec 5.1.2 (Fig 5.1): UNET3D "evaluations last about 8 times longer than epochs".
HOVON_UNET3D_EVAL_OVER_EPOCH = 8
# Ho-Von 2023, Sec 5.1.4 (Table 5.1): "only around 2.5 % of these VFS reads had to go to storage"
# (the BIO / VFS read row of Table 5.1 prints 2.62 % and 2.59 %), percent.
HOVON_UNET3D_VFS_TO_STORAGE_PCT = 2.5
# Ho-Von 2023, Sec 5.2.2 (Fig 5.11): BERT data throughput "between 10,000 and 50,000 depending on
# the batch size"; compute throughput "slightly above 2 samples per second with a batch size of 1
# to around 5.5 with a batch size of 6" (V100), samples/s.
HOVON_BERT_DATA_SPS = (10_000, 50_000)
HOVON_BERT_COMPUTE_SPS = (2.0, 5.5)
# Ho-Von 2023, Sec 5.3.2 (Fig 5.17): DLRM's sleep and benchmark compute throughputs "seemingly
# reaching an asymptote around 600,000 samples/second" (V100 compute model, Eq 5.5), samples/s.
HOVON_DLRM_COMPUTE_ASYMPTOTE_SPS = 600_000
# Ho-Von 2023, Sec 5.3.2: "Except for the 4 GPU case however, we see that the generated sleep times
# approximate the behaviour of the original": the ranks (GPUs) its sleep findings leave out.
HOVON_DLRM_SLEEP_EXCEPT_RANKS = 4
# Ho-Von 2023, the MLPerf Storage benchmark's data throughput against the real workload's, per
# workload: UNET3D Sec 5.1.3 (Fig 5.5): median data latencies "an order of magnitude higher",
# 0.0028-0.0042 s against 0.0002-0.00055 s (latency_s; no throughput ratio printed); BERT Sec 5.2.2
# (Fig 5.11): "consistently 5 times lower for any batch size" (benchmark / real = 0.2); DLRM
# Sec 5.3.2 (Fig 5.17): from batch 16k up, "around 2.5M samples/second for the highest batch
# size, versus 5M" (benchmark / real = 0.5).
HOVON_BENCHMARK_DATA_LATENCY_S = {"unet3d": {"benchmark": (0.0028, 0.0042), "real": (0.0002, 0.00055)}}
HOVON_BENCHMARK_DATA_THROUGHPUT_RATIO = {"bert": 0.2, "dlrm": 0.5}
HOVON_DLRM_BENCHMARK_DATA_SPS = {"benchmark": 2.5e6, "real": 5e6}
# Ho-Von 2023, Sec 5.3.2 (Fig 5.16, 5.17): below this global batch the benchmark's DLRM latencies
# and throughputs are "all very similar" to the real run's; "This does not hold for the benchmark
# starting at batch sizes of 16k and up" (16k taken as 16,384, the sweep's power of two).
HOVON_DLRM_BENCHMARK_GAP_FROM_BATCH = 16_384
# Ho-Von 2023, what the thesis says of the benchmark's compute throughput against the real run's:
# UNET3D Sec 5.1.3 "very similar"; BERT Sec 5.2.2 "successfully recreate[s] the compute
# throughput"; DLRM Sec 5.3.2 the sleep-time curves "approximate the behaviour of the original"
# except at 4 GPUs. Words, not numbers: shown as the paper's value.
HOVON_BENCHMARK_COMPUTE = {"unet3d": "very similar (Sec 5.1.3)", "bert": "matched (Sec 5.2.2)",
                           "dlrm": "similar except at G=4 (Sec 5.3.2)"}

# ---- headline numbers of the four smaller works (issue 24) ------------------------------------

# Nelson's blog's other numbers (its headline rows) are declared with their quotes in
# experiments/claims/papers/nelson-dl-io-blog.yaml.
