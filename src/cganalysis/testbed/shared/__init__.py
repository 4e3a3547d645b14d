"""What every testbed type shares: the Host interface (``hosts.py``), the topology a
testbed hands a run (``topology.py``), a live testbed's state file (``state.py``), one
run per testbed (``lock.py``), the user's runtime folder (``runtime.py``), the mark on a
run's processes (``procmark.py``), kernel paths a testbed file may name
(``kernelpath.py``)."""
