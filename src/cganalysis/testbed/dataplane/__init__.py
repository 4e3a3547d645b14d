"""The bottleneck as installed on the router: the data planes and what each one owns
(``planes.py``: kernel qdiscs, the link emulator, mahimahi), which one a run uses on its
host (``resolve.py``), installing it and reading its counters (``bottleneck.py``;
``poller.py`` polls the kernel's statistics on the router; ``mmlog.py`` reads mahimahi's
log)."""
