"""A testbed's configuration, parsed and validated without touching a host: the network
half of a run file (``config.py``), queue disciplines (``qdisc.py``; every kind and its
parameters in the registry ``qdisc_kinds.py``), testbed files (``bedfile.py``) and the
checked readers every value that can reach a command line passes through
(``validate.py``)."""
