"""Where a run's three hosts live: network namespaces (``netns.py``), a user-mode Linux
router (``uml*.py``), hosts over ssh (``ssh.py``, ``sshbed.py``), a VM guest (``vm*.py``);
the :class:`~cganalysis.testbed.backends.hosts.Host` interface they share, what a live
testbed holds (``state.py``; ``testbed clean``: ``cganalysis.testbed.clean``), one run per
testbed (``lock.py``). Which
backend a run file names is decided in :mod:`cganalysis.testbed.types`."""
