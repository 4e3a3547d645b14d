"""The bottleneck as installed on the router: which data plane a run uses
(``resolve.py``: kernel qdiscs, the link emulator or mahimahi), installing it and reading
its counters (``bottleneck.py``; ``poller.py`` polls the kernel's statistics on the
router; ``mmlog.py`` reads mahimahi's log)."""
