"""What a stage writes and how it looks: its results folder (``results``), its headline numbers
(``headline``), its figures (``style``), the host and commit behind what it reads
(``provenance``) and its progress bars (``progress``)."""
