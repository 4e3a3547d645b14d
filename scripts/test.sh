#!/usr/bin/env bash
# The whole test suite: lints and type checks, Rust tests, Python tests (unit, property,
# integration in network namespaces, the tiny end-to-end workflow, notebooks).
# Needs root for the namespace tests; in CI (CI=true) they must run, not skip.
set -euo pipefail
cd "$(dirname "$0")/.."
[[ -x "$HOME/.cargo/bin/cargo" ]] && export PATH="$HOME/.cargo/bin:$PATH"
# The project's environment (scripts/install.sh) first: its python, pytest, ruff, snakemake.
venv="${CGA_VENV:-.venv}"
[[ -x "$venv/bin/python" ]] || { echo "test.sh: no $venv: run bash scripts/install.sh --dev" >&2; exit 1; }
export PATH="$PWD/$venv/bin:$PATH"

step() { printf '\n== %s\n' "$*"; }

step "ruff"
ruff check src tests workflow benchmarks notebooks
ruff format --check src tests workflow benchmarks notebooks
step "mypy (strict on the package)"
mypy
step "snakefmt and snakemake --lint"
snakefmt --check Snakefile workflow/rules
snakemake --lint
step "rust: fmt, clippy, tests"
cargo fmt --all --check
cargo clippy --workspace --all-targets --quiet -- -D warnings
cargo test -p cga-core -p cga-emu -p cga-cg -p cga-simrng --quiet
step "pytest"
# The slowest tests are listed: the suite must stay under 30 minutes on 2 cores.
python3 -m pytest --durations=30 "$@"
