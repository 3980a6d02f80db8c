"""The thesis's three MLPerf workloads (Ho-Von 2023, Sections 4.1, 4.3 to 4.5, 5.x.1 to 5.x.2).

UNET3D (PyTorch 3D U-Net, .npy pairs), BERT (Keras 3 encoder, TFRecords through tf.data) and
DLRM (PyTorch MLPs + EmbeddingBags, one binary file): deterministic synthetic data, real
training at CPU scale with per-step instrumentation (Listing 4.1), sweeps of batch size x
ranks, and the linear fits of compute time (Eq 5.1 to 5.6).

Modules: ``settings`` (the params sections, no framework import), ``data_*`` (generators),
``unet3d``, ``bert``, ``dlrm`` (one rank's training program), ``steptimer`` (instrumentation
and the JSON-lines application log), ``launch`` (torchrun / multi-process TF launcher and the
sweep), ``fits`` (normal fits and statsmodels OLS), ``validation`` (the real, generated-data and sleep
rows), ``plots`` (the stages' figures), ``intervals`` (findings' values and intervals from
their samples), ``report`` (the stages' claims: measurements joined with the declarations).
"""
