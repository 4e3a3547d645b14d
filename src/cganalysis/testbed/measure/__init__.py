"""Measuring a testbed rather than configuring it: the router's captures (``capture.py``),
what a host offers (``probe.py``), what it was (``provenance.py``), what its bottleneck
really delivers (``calibration.py``)."""
