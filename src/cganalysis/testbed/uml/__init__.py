"""The ``uml`` testbed: the router a user-mode Linux kernel of its own (``testbed.py``),
its options (``config.py``), the kernel's boot check (``boot.py``), its agent and
console (``agent.py``, ``console.py``), the router as a Host (``host.py``)."""
