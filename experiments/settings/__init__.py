"""What a run is set by: where things live (``paths``), the validated sections of ``params.yaml``
(``config``, ``common_config``) and the papers' own numbers the code uses (``reference``)."""
