"""The testbed: hosts (namespaces or ssh), the bottleneck (kernel qdiscs or the link
emulator), captures, qdisc statistics, calibration, provenance and teardown.

Configuration (config.py, qdisc.py) is parsed and validated without touching the host;
render.py, emuconf.py and mahimahi.py turn it into exact commands; the rest acts on hosts
through hosts.Host. docs/testbed.md describes it for users.
"""
