"""The ``sim`` testbed: a whole run inside one user-mode Linux kernel on simulated time;
its options (``config.py``), the kernel's process (``kernel.py``) and its user namespace
(``user.py``), the guest's first process (``guest.py``), the code at fixed paths
(``code.py``), the run's identity (``identity.py``), the host probe (``probe.py``)."""
