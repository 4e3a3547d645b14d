#!/usr/bin/env bash
# Run by Snakemake in the rules' new Conda environment (cganalysis.yaml) after its packages
# are in: the package itself, editable, built by the lock's maturin (no build isolation,
# no dependency resolution: the lock installed them all). Snakemake runs a copy of this
# file from .snakemake/conda/, two levels below the repository.
set -euo pipefail
cd "$(dirname "$0")/../.."
python -m pip install --no-deps --no-build-isolation -e .
