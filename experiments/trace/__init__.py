"""Tracing toolkit (the thesis's Sections 4.2 and 4.6, Table 4.2, Listing A.1, Fig 5.1).

- :mod:`.tracer`     ``Tracer`` (context manager) and ``run`` (a command): bpftrace, strace or
                     /proc back ends, chosen automatically and recorded; one schema
                     (:mod:`.schema`); ``mode="timeline"`` (a row per call) or ``"vector"``
                     (calls counted in the kernel: Table 4.2 at a fraction of the cost).
- :mod:`.session`    ``Session``: one tracer for several runs, each run's trace cut out by time
                     (the probes attach once: about 8 s saved per run with bpftrace).
- :mod:`.resolve`    which file each call touched: from the kernel's ``struct file``
                     (bpftrace) or by following descriptors (``dup*``, ``fcntl``, ``fork``).
- :mod:`.vector`     the characteristic vector of Table 4.2 (data/checkpoint file filters,
                     Listing A.1's random/sequential block reads, VFS sequentiality).
- :mod:`.similarity` the weighted cosine similarity of Eq 4.1/4.2 and the per-component table.
- :mod:`.phases`     the application log of training phases (documented format).
- :mod:`.timeline`   Fig 5.1-style timelines; :mod:`.chrome` Chrome trace / Perfetto export.
- :mod:`.known_io`   a program doing known I/O through every path (the attribution tests);
  :mod:`.lmdb_runs`  traced LMDBIO readers; :mod:`.stage` the ``tracing_patterns`` stage;
  :mod:`.bench`      the overhead benchmark (both modes, every back end).
- ``python -m experiments.trace --help``: run, vector, compare, timeline, chrome, status.
"""

from .schema import COLUMNS, Trace, TraceError, load  # noqa: F401
from .session import Session  # noqa: F401
from .tracer import Tracer, backend_status, choose_backend, run  # noqa: F401
