"""Real, sleep, emulator and DLIO traced side by side (Ho-Von 2023 Tables 5.1-5.3, Fig 5.7,
5.12, 5.18, and MLPerf Storage v3.0's RetinaNet as a fourth workload, with the emulator on
fixed-size files as a fifth side): the ``traced_comparison`` stage (notebook 52).

- :mod:`.settings` the ``traced_comparison`` section of ``params.yaml``;
- :mod:`.sides`    runs each side of one workload under :class:`experiments.trace.Tracer`
                   (the real and sleep runs through :mod:`experiments.workloads.launch`, the
                   emulator through :mod:`experiments.emulator`, DLIO through
                   :mod:`experiments.dlio`) and measures its throughputs;
- :mod:`.stage`    the measuring stage: a run is one pass of a workload (every side once,
                   traced), through :mod:`experiments.repeats`; what it writes;
- :mod:`.compare`  the per-component tables and the similarities (pure: tables in, tables
                   out; unit-tested on tiny vectors);
- :mod:`.findings`, :mod:`.report` the report's claims (intervals over the passes) and figures.
"""
