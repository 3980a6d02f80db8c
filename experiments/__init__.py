"""Reproductions of five studies of deep-learning training I/O.

The package holds all logic; notebooks under ``notebooks/`` only orchestrate and show.
Start with :mod:`experiments.settings.paths`, :mod:`experiments.settings.config` and :mod:`experiments.output.results`,
the frame every experiment plugs into (see ``../shared/DESIGN.md`` and README.md).
"""



__version__ = "0.1.0"
