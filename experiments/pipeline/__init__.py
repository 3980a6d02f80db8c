"""The commands over the stages: ``dvc.yaml`` from the registry (``depcheck``), a stage's
notebook run (``run_notebook``), the profiles (``profile``), DVC's state (``dvc_run``), the plan
and its reference times (``forecast``), the artifact-evaluation table (``ae_table``) and the
benchmarks (``bench``, ``quietrun``)."""
