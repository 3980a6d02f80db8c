"""The papers' own numbers, in one place. They appear only in columns that say they are the paper's.

Sources are in ``../shared/papers/``; each constant names its table or figure.
"""

from __future__ import annotations

# Chien et al. 2018, Table I (IOR, median of 5 after a warm-up), MB/s.
CHIEN_TABLE_I = [
    {"system": "Blackdog", "device": "HDD", "read_MBps": 163.00, "write_MBps": 133.14},
    {"system": "Blackdog", "device": "SSD", "read_MBps": 280.55, "write_MBps": 195.05},
    {"system": "Blackdog", "device": "Optane", "read_MBps": 1603.06, "write_MBps": 511.78},
    {"system": "Tegner", "device": "Lustre", "read_MBps": 1968.618, "write_MBps": 991.914},
]

# Chien et al. 2018, Section VI: speed-up of tf.data read bandwidth over one thread.
CHIEN_HDD_SPEEDUP = {2: 1.65, 4: 1.95, 8: 2.3}
CHIEN_LUSTRE_SPEEDUP_8 = 7.8

# Chien et al. 2018, Section IV-A: the ImageNet subset.
CHIEN_IMAGENET_SUBSET_IMAGES = 16_384
CHIEN_IMAGENET_MEDIAN_KB = 112  # "median image size 112KB"

# Chien et al. 2018, Section VI: burst buffer speed-up over checkpointing straight to HDD.
CHIEN_BURST_BUFFER_SPEEDUP = 2.6

# Nelson's blog: the ImageNet file-size mix, as fio's bssplit.
NELSON_IMAGENET_BSSPLIT = "2K/1:4K/2:8K/4:16K/8:32K/13:64K/38:128K/33:256K/1"
