"""Intervals over runs (``stats``) and how often each method covers the true value
(``coverage``, its table ``coverage_table``)."""
