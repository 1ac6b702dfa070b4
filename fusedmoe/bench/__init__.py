"""Benchmarks: the harness (``harness``), the torch peers (``peers``), the bandwidth floor
(``floor``) and the reports (``report``).  Run them with ``fusedmoe bench``."""
