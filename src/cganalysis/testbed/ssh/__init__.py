"""The ``ssh`` testbed: hosts reached over ssh (``host.py``), the testbed file and its
hosts (``testbed.py``), a VM guest booted here as its router (``vmrouter.py``), what
``testbed clean`` undoes on them (``clean.py``)."""
