"""Reproductions of five studies of deep-learning training I/O.

The package holds all logic; notebooks under ``notebooks/`` only orchestrate and show.
Start with :mod:`experiments.paths`, :mod:`experiments.config` and :mod:`experiments.results`,
the frame every experiment plugs into (see ``../shared/DESIGN.md`` and README.md).
"""



__version__ = "0.1.0"
