"""Nelson's blog post on deep-learning I/O (hpc.social): TFRecords against individual JPEG
files, and PyTorch DataLoader workers.

Reproduced: one epoch read as TFRecord shards or as JPEG files through tf.data with a private
thread pool, in images/s and MB/s with the device's reads/s and request size sampled alongside
(:mod:`.tfrecord`), and the PyTorch JPEG loader against ``num_workers`` (:mod:`.torch_jpeg_loader`,
kept apart from TensorFlow); figures and claims in :mod:`.report`.
"""
