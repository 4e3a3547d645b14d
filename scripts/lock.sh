#!/usr/bin/env bash
# Rewrites the Python dependency locks, requirements/python3.X.txt: one per Python that a
# supported system ships (3.11 Debian 12, 3.12 Ubuntu 24.04, 3.13 Debian 13; the list is
# src/cganalysis/dependencies.py's), each every package of pyproject.toml's dependencies,
# all extras and build-system.requires pinned with its hashes, resolved by uv for Linux.
# scripts/install.sh installs from the lock of its Python; docs/environment.md says more.
#
#   bash scripts/lock.sh                       # after editing pyproject.toml's requirements:
#                                              # keeps every pin that still fits
#   bash scripts/lock.sh --upgrade             # everything to the newest the ranges allow
#   bash scripts/lock.sh --upgrade-package numpy   # one package (and what it needs)
# Other options go to `uv pip compile` as they are. Then commit requirements/ and
# workflow/envs/cganalysis.yaml (whose lock line this rewrites).
# Environment: UV (default .venv/bin/uv, the lock's own; install.sh puts it there),
# PYTHON (reads pyproject.toml: Python >= 3.11, default python3). Needs PyPI.
set -euo pipefail
cd "$(dirname "$0")/.."
uv="${UV:-.venv/bin/uv}"
python="${PYTHON:-python3}"
command -v "$uv" >/dev/null 2>&1 || {
  echo "lock.sh: no uv at $uv: run bash scripts/install.sh, or set UV" >&2
  exit 2
}
deps() { PYTHONPATH=src "$python" -m cganalysis.dependencies "$@"; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
deps build-requires >"$tmp/build-system.in"
mkdir -p requirements
for version in $(deps versions); do
  lock="requirements/python$version.txt"
  # uv keeps the pins of the file it writes to (unless told to upgrade): start from the lock.
  if [[ -f "$lock" ]]; then cp "$lock" "$tmp/out.txt"; else : >"$tmp/out.txt"; fi
  # build-system.requires comes in on standard input (its packages then show no "via").
  "$uv" pip compile --quiet --python-version "$version" --python-platform linux \
    --all-extras --generate-hashes --custom-compile-command "bash scripts/lock.sh" \
    "$@" pyproject.toml - -o "$tmp/out.txt" <"$tmp/build-system.in"
  {
    deps header "$version"
    echo "# The Python packages for Python $version, exact and hash-checked: pyproject.toml's"
    echo "# dependencies, every extra, and build-system.requires (maturin: install.sh builds"
    echo "# the package without build isolation). Install: bash scripts/install.sh."
    cat "$tmp/out.txt"
  } >"$tmp/$version.txt"
  mv "$tmp/$version.txt" "$lock"
  echo "lock.sh: wrote $lock ($(grep -c '^[A-Za-z0-9]' "$lock") packages)"
done

# The rules' Conda environment installs the 3.11 lock; naming its digest there makes
# `snakemake --use-conda` build a new environment when the lock changes.
env_file=workflow/envs/cganalysis.yaml
digest=$(sha256sum requirements/python3.11.txt | awk '{print $1}')
sed -i "s|^# lock: requirements/python3.11.txt sha256=.*|# lock: requirements/python3.11.txt sha256=$digest|" "$env_file"
grep -q "sha256=$digest" "$env_file" || {
  echo "lock.sh: $env_file has no '# lock: requirements/python3.11.txt sha256=' line" >&2
  exit 1
}
