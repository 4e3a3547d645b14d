#!/usr/bin/env bash
# Installs everything cganalysis needs on a Debian machine, as root (or with sudo):
# Debian tools (tcpdump, tshark, iperf3, ethtool, iproute2), the Rust toolchain check,
# and the Python package with its native extension built in release mode.
#   bash scripts/install.sh          # to run experiments and the workflow
#   bash scripts/install.sh --dev    # also the test, lint and benchmark tools
set -euo pipefail
cd "$(dirname "$0")/.."

extras=""
[[ "${1:-}" == "--dev" ]] && extras="[dev]"

sudo_cmd=""
if [[ $(id -u) -ne 0 ]]; then sudo_cmd="sudo"; fi

debian_packages=(tcpdump tshark iperf3 ethtool iproute2 iputils-ping procps openssh-client openssh-server)
missing=()
for pkg in "${debian_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
  echo "install.sh: installing Debian packages: ${missing[*]}"
  # tshark asks whether non-root users may capture; answer for it.
  echo "wireshark-common wireshark-common/install-setuid boolean false" | $sudo_cmd debconf-set-selections
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if ! command -v cargo >/dev/null 2>&1; then
  [[ -x "$HOME/.cargo/bin/cargo" ]] && export PATH="$HOME/.cargo/bin:$PATH"
fi
if ! command -v cargo >/dev/null 2>&1; then
  echo "install.sh: no Rust toolchain; installing Debian's cargo and rustc"
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq cargo rustc
fi

# The data-plane programs (traffic generator, link emulator) go on the PATH.
echo "install.sh: building the native programs (cga-cg, cga-emu)"
for crate in cg emulator; do
  cargo install --quiet --locked --force --path "native/$crate" --root "${CGA_PREFIX:-/usr/local}"
done

python3 -m pip install --quiet --upgrade "pip>=23" "maturin>=1.7,<2"
# Editable install: the native extension (native/) is compiled in release mode by maturin.
python3 -m pip install --quiet -e ".${extras}"
python3 -c "import cganalysis._native" || {
  echo "install.sh: the native extension did not build; see the pip output above" >&2
  exit 1
}
echo "install.sh: cganalysis $(python3 -c 'import cganalysis; print(cganalysis.__version__)') installed"
