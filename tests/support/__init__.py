"""What tests and benchmarks share and the package does not ship: a synthetic bottleneck with
known truth (synthetic.py) and the emulator's three-namespace bed (netbed.py). Benchmarks
import them as ``tests.support...``, run from the repository root as ``python -m benchmarks.X``."""
