"""The machine a stage runs on: its storage tiers and page cache (``tiers``, ``cache``), what it
is (``envinfo``), what its devices and processes did (``dstat``, ``device_audit``), and how
ranks and helpers start and stop on it (``launcher``, ``mpi_node``, ``warm_launch``, ``procs``)."""
