"""The ``netns`` testbed: server, router and client as network namespaces of this machine
(``testbed.py``), as an ordinary user in a user namespace of their own (``userns.py``),
with mahimahi's shell as the link (``mahimahi.py``)."""
