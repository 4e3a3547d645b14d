"""The testbed: hosts (namespaces, a UML router, ssh hosts, a VM), the bottleneck (kernel
qdiscs, the link emulator or mahimahi), captures, qdisc statistics, calibration,
provenance and teardown.

One subpackage per concern, importing downwards: ``spec`` (configuration, parsed without
touching a host) <- ``rendering`` (exact commands) <- one package per testbed type
(``netns``, ``uml``, ``sim``, ``vm``, ``ssh``) and ``shared`` (what they have in common:
hosts, topology, delay placements, state, lock), ``dataplane`` (the installed bottleneck
and its calibration) and ``measure`` (captures, probes, provenance).
:mod:`cganalysis.testbed.types` is the registry of testbed types that runs consult.
docs/testbed.md describes it for users; docs/architecture.md where a change goes.
"""
