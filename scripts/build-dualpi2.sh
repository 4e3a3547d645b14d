#!/usr/bin/env bash
# Builds what the vm testbed needs for DualPI2 with the kernel's own qdisc (docs/emulator.md,
# "DualPI2 in a kernel"): Debian builds no sch_dualpi2 (CONFIG_NET_SCH_DUALPI2 is not set)
# and Debian 12's tc (6.1) does not know `dualpi2`.
#
#   bash scripts/build-dualpi2.sh      # after scripts/install-vm.sh; ~15 min on 2 cores
#
# - tc: scripts/install-tc.sh (Debian sid's iproute2 >= 6.18 in a private root, as
#   /usr/local/lib/cganalysis-vm/bin/tc, which only the guest puts first on its PATH).
# - sch_dualpi2.ko for the vm guest's kernel: Debian's linux-source of the same version,
#   configured with the kernel's own config (+ CONFIG_NET_SCH_DUALPI2=m), prepared with this
#   host's compiler (Debian's kbuild programs need a newer C library than Debian 12's), the
#   symbol versions (Module.symvers) from Debian's linux-headers package, then only
#   net/sched/sch_dualpi2.c built out of tree, installed in /usr/lib/modules/VERSION/extra,
#   depmod. The module is unsigned: the kernel loads it and marks itself tainted.
# Packages come through a private apt configuration under CGA_VM_CACHE (as install-vm.sh);
# the host's apt sources are not touched. Sources and build trees stay in that cache.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib/private-apt.sh
source scripts/lib/private-apt.sh

say() { printf 'build-dualpi2.sh: %s\n' "$*"; }
die() {
  printf 'build-dualpi2.sh: %s\n' "$*" >&2
  exit 1
}
[[ $(id -u) -eq 0 ]] || die "run as root (installs a module and a tc for the vm guest)"
cache="${CGA_VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cganalysis/vm}"
modroot=/usr/lib/modules
bindir=/usr/local/lib/cganalysis-vm/bin
jobs="$(nproc)"

version=""
for m in "$modroot"/*/.cganalysis-vm; do
  if [[ -f "$m" ]]; then version="$(basename "$(dirname "$m")")"; fi
done
[[ -n "$version" ]] || die "no vm kernel: run bash scripts/install-vm.sh first"
[[ -f "$cache/apt/etc/sources.list" ]] || die "no private apt configuration in $cache: run bash scripts/install-vm.sh first"
mapfile -t bin_opts < <(private_apt_opts "$cache/apt")

say "build tools from the host's sources"
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
  build-essential bc bison flex libelf-dev libssl-dev pkg-config xz-utils dwarves >/dev/null

# --- sch_dualpi2.ko -----------------------------------------------------------------------
ko="$modroot/$version/extra/sch_dualpi2.ko"
if [[ ! -f "$ko" ]]; then
  upstream="${version%%+*}"     # 7.3.4
  series="${upstream%.*}"       # 7.3
  hdr="linux-headers-$version"
  say "downloading linux-source-$series and $hdr (for Module.symvers)"
  mkdir -p "$cache/debs" "$cache/kbuild"
  (cd "$cache/debs" && apt-get "${bin_opts[@]}" -qq download "linux-source-$series" "$hdr") ||
    die "linux-source-$series or $hdr not in the private lists (bash scripts/install-vm.sh --refresh)"
  tree="$cache/kbuild/linux-$upstream"
  if [[ ! -f "$tree/Makefile" ]]; then
    rm -rf "$cache/kbuild/x" && mkdir -p "$cache/kbuild/x"
    dpkg -x "$(ls -t "$cache/debs/linux-source-${series}"_*.deb | head -n 1)" "$cache/kbuild/x"
    say "unpacking the kernel source (~1.5 GB)"
    tar -xf "$cache/kbuild/x/usr/src/linux-source-$series.tar.xz" -C "$cache/kbuild"
    mv "$cache/kbuild/linux-source-$series" "$tree"
    dpkg -x "$(ls -t "$cache/debs/${hdr}"_*.deb | head -n 1)" "$cache/kbuild/x"
    symvers="$(find "$cache/kbuild/x" -name Module.symvers | head -n 1)"
    [[ -n "$symvers" ]] || die "$hdr holds no Module.symvers"
    cp "$symvers" "$tree/Module.symvers"
    rm -rf "$cache/kbuild/x"
  fi
  cp "$modroot/$version/config" "$tree/.config"
  say "preparing the tree for $version (host compiler: $(gcc -dumpfullversion))"
  (
    cd "$tree"
    scripts/config --module NET_SCH_DUALPI2 --set-str SYSTEM_TRUSTED_KEYS "" \
      --set-str SYSTEM_REVOCATION_KEYS "" --disable MODULE_SIG_ALL
    make -s olddefconfig
    # A module must see the kernel's structures as the kernel does (struct module holds
    # BTF fields under CONFIG_DEBUG_INFO_BTF_MODULES, which needs pahole here): any
    # symbol the host's toolchain turned off, other than compiler/Rust probes, is fatal.
    lost="$(diff <(grep '^CONFIG_' "$modroot/$version/config" | sort) <(grep '^CONFIG_' .config | sort) |
      sed -n 's/^< \(CONFIG_[A-Z0-9_]*\)=.*/\1/p' |
      grep -Ev '^CONFIG_(CC_|GCC_|AS_|LD_|RUST|BINDGEN|PAHOLE|TOOLS_SUPPORT|HAVE_RUST|.*_RUST_|.*RUST$|DRM_PANIC_SCREEN_QR|AMCC_QT2025_PHY|AX88796B_RUST_PHY|NOVA|ANDROID_BINDER_IPC_RUST|BLK_DEV_RUST_NULL|OPENSSL_SUPPORTS)' || true)"
    [[ -z "$lost" ]] || say "warning: this toolchain turns off: $(echo $lost)"
    make -s -j"$jobs" KERNELRELEASE="$version" modules_prepare
  )
  ext="$cache/kbuild/dualpi2"
  rm -rf "$ext" && mkdir -p "$ext"
  cp "$tree/net/sched/sch_dualpi2.c" "$ext/"
  echo 'obj-m := sch_dualpi2.o' >"$ext/Kbuild"
  say "building sch_dualpi2.ko"
  make -s -C "$tree" KERNELRELEASE="$version" M="$ext" modules
  mkdir -p "$modroot/$version/extra"
  install -m 0644 "$ext/sch_dualpi2.ko" "$ko"
  depmod -a "$version"
fi
modinfo -k "$version" sch_dualpi2 | grep -E '^(filename|vermagic)'

# --- tc (iproute2 >= 6.18) -------------------------------------------------------------
bash scripts/install-tc.sh

say "done: the vm guest loads sch_dualpi2 and uses $bindir/tc"
