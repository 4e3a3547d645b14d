"""The ``vm`` testbed: a whole run inside a QEMU guest with its own kernel
(``testbed.py``), its options (``config.py``), the guest's agent (``guest.py``), booting
it (``run.py``), the staging folder it writes (``share.py``). The same guest as an ssh
testbed's router: ``cganalysis.testbed.ssh.vmrouter``."""
