#!/usr/bin/env bash
# Installs everything cganalysis needs on a Debian (12, 13) or Ubuntu (24.04) machine, as
# root or as a user with sudo:
#   - Debian packages: the experiment tools (tcpdump, tshark, iperf3, ethtool, iproute2,
#     OpenSSH for the SSH testbed), Python's venv module, a C linker, and a Rust toolchain
#     new enough for native/ (Debian 12's own `cargo` is too old: its newer `cargo-web` is
#     taken, which installs as `cargo`);
#   - the data-plane programs cga-cg and cga-emu (Rust, release build) into /usr/local/bin
#     (the experiments run them inside network namespaces, as root or as the user);
#   - the Python package, with its native extension, into the project's virtual environment
#     `.venv` (never the system Python: Debian's and Ubuntu's are "externally managed"), its
#     dependencies, the development tools among them, from the lock of the venv's Python
#     (requirements/python3.X.txt: exact versions, hash-checked; scripts/lock.sh writes it);
#   - Debian's user-mode-linux (a Linux kernel that runs as a process: the `uml` testbed's
#     router, with the qdiscs this machine's kernel may lack);
#   - mahimahi (`backend: mahimahi`) and its traces, where the distribution packages them
#     (Ubuntu's universe: mahimahi, mahimahi-traces; Debian has no package: a user who wants
#     the backend there installs mahimahi by other means, and its tests skip).
#
#   bash scripts/install.sh          # to run experiments and the workflow
#   bash scripts/install.sh --dev    # also Rust's fmt and clippy, Chromium (a test opens the
#                                    # workflow's report in it), and the uml testbed's own
#                                    # kernel with DualPI2 (scripts/build-uml.sh, ~5-9 min
#                                    # once, then cached); the Python test and lint tools
#                                    # come with the lock either way
#   bash scripts/install.sh --uml    # the uml kernel without the development tools
#   bash scripts/install.sh --vm     # also the vm testbed's kernel and QEMU (install-vm.sh)
# Options combine (--dev --vm).
# Environment: PYTHON (the interpreter the venv is made from, default the distribution's
# /usr/bin/python3, else python3 from PATH),
# CGA_VENV (default .venv), CGA_PREFIX (where the native programs go, default /usr/local),
# CGA_UNLOCKED=1 (the Python packages from pyproject.toml's ranges, the newest of the day,
# instead of the lock: to try what a lock upgrade would bring; runs then record it).
# Running it again is cheap: what is installed already is kept.
set -euo pipefail
cd "$(dirname "$0")/.."

dev=0
uml=0
vm=0
for arg in "$@"; do
  case "$arg" in
    --dev) dev=1 uml=1 ;;
    --uml) uml=1 ;;
    --vm) vm=1 ;;
    *)
      echo "install.sh: unknown option $arg (use --dev, --uml, --vm)" >&2
      exit 2
      ;;
  esac
done
python="${PYTHON:-}"
venv="${CGA_VENV:-.venv}"
prefix="${CGA_PREFIX:-/usr/local}"
rust_min="1.80" # workspace.package.rust-version in Cargo.toml

say() { printf 'install.sh: %s\n' "$*"; }
sudo_cmd=""
if [[ $(id -u) -ne 0 ]]; then sudo_cmd="sudo"; fi

apt_install() {
  # tshark asks whether non-root users may capture; answer for it.
  echo "wireshark-common wireshark-common/install-setuid boolean false" | $sudo_cmd debconf-set-selections
  if [[ -z "${apt_updated:-}" ]]; then
    $sudo_cmd apt-get update -qq
    apt_updated=1
  fi
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "$@"
}

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

# --- Debian packages -------------------------------------------------------------------
packages=(tcpdump tshark iperf3 ethtool iproute2 iputils-ping procps util-linux
  openssh-client openssh-server ca-certificates git gcc libc6-dev python3 python3-venv
  user-mode-linux kmod)
# --dev: the test that opens the Snakemake report in a browser (headless Chromium;
# tests/integration/test_workflow.py). Debian packages it; Ubuntu has it as a snap only.
if ((dev)); then
  if grep -qx 'ID=ubuntu' /etc/os-release 2>/dev/null; then
    command -v chromium >/dev/null || $sudo_cmd snap install chromium ||
      say "could not install chromium (snap install chromium): the report's browser test needs it"
  else
    packages+=(chromium)
  fi
  # --dev: a single-node SLURM cluster for the cluster profile's test, without and with
  # accounting (slurmdbd on a MariaDB server); tests/integration/test_slurm_cluster.py
  # starts its own daemons, key, database and configuration.
  packages+=(slurm-wlm munge slurmdbd mariadb-server)
fi
missing=()
for pkg in "${packages[@]}"; do installed "$pkg" || missing+=("$pkg"); done
if ((${#missing[@]})); then
  say "installing Debian packages: ${missing[*]}"
  apt_install "${missing[@]}"
fi
# Where systemd runs, installing munge or mariadb-server starts and enables its daemon, and
# slurm-wlm and slurmdbd enable theirs (they start once their configuration exists). A
# development machine needs none of them: the test runs its own. Only services this run
# installed are stopped, so a machine that was a cluster node or a database server before
# keeps its own.
if [[ -d /run/systemd/system ]]; then
  services=()
  [[ " ${missing[*]} " == *" munge "* ]] && services+=(munge)
  [[ " ${missing[*]} " == *" slurm-wlm "* ]] && services+=(slurmd slurmctld)
  [[ " ${missing[*]} " == *" slurmdbd "* ]] && services+=(slurmdbd)
  [[ " ${missing[*]} " == *" mariadb-server "* ]] && services+=(mariadb)
  if ((${#services[@]})); then
    say "stopping and disabling the services just installed: ${services[*]}"
    $sudo_cmd systemctl disable --now "${services[@]}" >/dev/null 2>&1 || true
  fi
fi

# --- mahimahi, where the distribution has it --------------------------------------------
distro="$(. /etc/os-release 2>/dev/null && echo "${ID:-}" || true)"
if ! command -v mm-link >/dev/null 2>&1; then
  # Only Ubuntu packages it (universe); a fresh package list before asking about it.
  if [[ "$distro" == ubuntu ]] && { [[ -n "${apt_updated:-}" ]] || $sudo_cmd apt-get update -qq; } &&
    apt_updated=1 && apt-cache show mahimahi >/dev/null 2>&1; then
    say "installing the distribution's mahimahi (backend: mahimahi) and its traces"
    apt_install mahimahi
    if apt-cache show mahimahi-traces >/dev/null 2>&1; then apt_install mahimahi-traces; fi
  else
    say "mahimahi: no package for this distribution (backend: mahimahi unavailable; the" \
      "emulator replays the same traces)"
  fi
fi

# --- Rust -------------------------------------------------------------------------------
[[ -x "$HOME/.cargo/bin/cargo" ]] && export PATH="$HOME/.cargo/bin:$PATH"
version_at_least() { [[ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n 1)" == "$2" ]]; }
cargo_version() { cargo --version 2>/dev/null | awk '{print $2}'; }
if ! command -v cargo >/dev/null 2>&1 || ! version_at_least "$(cargo_version)" "$rust_min"; then
  say "no Rust >= $rust_min (found: $(cargo_version || true)); installing Debian's"
  # Debian 12 ships Rust 1.63 as `cargo`, and a current one as `cargo-web` (same binary
  # names); Debian 13 and Ubuntu 24.04's `cargo` are recent enough.
  if apt-cache show cargo-web >/dev/null 2>&1; then
    apt_install cargo-web rustc-web
  else
    apt_install cargo rustc
  fi
  hash -r
  version_at_least "$(cargo_version)" "$rust_min" || {
    echo "install.sh: cargo $(cargo_version) is older than $rust_min: install a newer Rust" >&2
    exit 1
  }
fi
if ((dev)) && ! { cargo fmt --version && cargo clippy --version; } >/dev/null 2>&1; then
  say "installing rustfmt and clippy"
  if installed cargo-web; then apt_install rustfmt-web rust-web-clippy; else apt_install rustfmt rust-clippy; fi
fi

# --- host settings ----------------------------------------------------------------------
# The sim testbed's kernel maps each page of a guest process into a host process: the end
# of a TMA run needs more mappings than Debian's default 65,530. Set once, persistently,
# here (as root), so that runs need no privilege (docs/testbed.md, "sim testbed").
map_count_file=/etc/sysctl.d/60-cganalysis.conf
if (($(cat /proc/sys/vm/max_map_count) < 1048576)); then
  say "setting vm.max_map_count = 1048576 ($map_count_file)"
  printf '# scripts/install.sh: the sim testbed (docs/testbed.md)\nvm.max_map_count = 1048576\n' |
    $sudo_cmd tee "$map_count_file" >/dev/null
  $sudo_cmd sysctl -q -p "$map_count_file" || say "could not apply $map_count_file now (a container?)"
fi
# An ordinary user's netns run mounts a private tmpfs over /run/netns (in its own mount
# namespace) and cannot make the folder: made now and at every boot (systemd-tmpfiles).
netns_tmpfiles=/etc/tmpfiles.d/cganalysis-netns.conf
if [[ ! -f "$netns_tmpfiles" ]]; then
  say "making /run/netns at boot ($netns_tmpfiles)"
  printf '# scripts/install.sh: netns runs of ordinary users\nd /run/netns 0755 root root -\n' |
    $sudo_cmd tee "$netns_tmpfiles" >/dev/null
fi
$sudo_cmd mkdir -p /run/netns

# --- native programs --------------------------------------------------------------------
say "building the native programs (cga-cg, cga-emu, libcga_simrng; release mode)"
cargo build --quiet --locked --release -p cga-cg -p cga-emu -p cga-simrng
$sudo_cmd install -d "$prefix/bin" "$prefix/lib/cganalysis"
$sudo_cmd install -m 0755 target/release/cga-cg target/release/cga-emu "$prefix/bin/"
# The sim testbed's seeded getrandom for its UML kernel (native/simrng; docs/testbed.md).
$sudo_cmd install -m 0755 target/release/libcga_simrng.so "$prefix/lib/cganalysis/"

# --- Python environment -----------------------------------------------------------------
# The distribution's Python by default (installed above): a venv runs its base interpreter,
# and one found first on PATH may live where other users cannot run it (pyenv under root's
# home), which would leave the environment usable by root alone.
if [[ -z "$python" ]]; then
  python=python3
  [[ -x /usr/bin/python3 ]] && python=/usr/bin/python3
fi
# A venv made before from another interpreter (pyenv's under root's home, say) is made
# again: the sim kernel runs as an ordinary user, who must be able to run it.
base="$("$venv/bin/python" -c 'import sys; print(sys._base_executable)' 2>/dev/null || true)"
if [[ -n "$base" && "$(readlink -f "$base")" != "$(readlink -f "$(command -v "$python")")" ]]; then
  say "$venv runs $base, not $(command -v "$python"): making it again"
  base=""
fi
if [[ -z "$base" ]]; then
  say "creating the virtual environment $venv (from $($python --version 2>&1))"
  "$python" -m venv --clear "$venv"
fi
pip=("$venv/bin/python" -m pip --quiet --disable-pip-version-check)
if [[ -n "${CGA_UNLOCKED:-}" ]]; then
  say "installing from pyproject.toml's ranges, not the lock (CGA_UNLOCKED is set)"
  "${pip[@]}" install --upgrade "pip>=23"
  extras=""
  ((dev)) && extras="[dev]"
  # Editable: maturin compiles the native extension (native/) in release mode.
  "${pip[@]}" install -e ".${extras}"
else
  # The lock of the venv's Python (an unsupported one stops here, saying what to do). Every
  # package with its hash; the development tools are in it too (one lock per Python).
  lock=$(PYTHONPATH=src "$venv/bin/python" -m cganalysis.dependencies path)
  say "installing the Python packages from $lock"
  "${pip[@]}" install --require-hashes -r "$lock"
  # The package itself, editable, built by the lock's maturin: no build isolation (it would
  # fetch an unpinned maturin) and nothing to resolve (the lock installed every dependency).
  # maturin's build backend runs the `maturin` program from PATH: the venv's.
  PATH="$(cd "$venv" && pwd)/bin:$PATH" "${pip[@]}" install --no-deps --no-build-isolation -e .
  # A venv that held other packages before keeps them: say so (runs record it too).
  PYTHONPATH=src "$venv/bin/python" -m cganalysis.dependencies check | sed 's/^/install.sh: /'
fi
# Byte-compiled as a wheel's install is: where bytecode is not written on import
# (PYTHONDONTWRITEBYTECODE, a read-only checkout) each command would compile its modules
# again, milliseconds of a command that takes a few tenths of a second.
"$venv/bin/python" -m compileall -q src/cganalysis >/dev/null
"$venv/bin/python" -c "import cganalysis._native" || {
  echo "install.sh: the native extension did not build; see the pip output above" >&2
  exit 1
}

if ((uml)); then
  $sudo_cmd bash scripts/build-uml.sh
fi
if ((vm)); then
  PYTHON="$venv/bin/python" bash scripts/install-vm.sh
fi

say "cganalysis $("$venv/bin/python" -c 'import cganalysis; print(cganalysis.__version__)') installed in $venv"
say "run the workflow as an ordinary user: $venv/bin/snakemake --cores 4 (docs/testbed.md)"
