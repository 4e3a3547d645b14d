#!/usr/bin/env bash
# Builds what the vm testbed needs for DualPI2 with the kernel's own qdisc (docs/emulator.md,
# "DualPI2 in a kernel"): Debian builds no sch_dualpi2 (CONFIG_NET_SCH_DUALPI2 is not set)
# and Debian 12's tc (6.1) does not know `dualpi2`.
#
#   bash scripts/build-dualpi2.sh      # after scripts/install-vm.sh; ~15 min on 2 cores
#
# - tc: Debian sid's iproute2 (>= 6.18) binary with its libraries in a private root, run
#   through that root's dynamic loader by /usr/local/lib/cganalysis-vm/bin/tc. Only the vm
#   guest puts that folder first on its PATH (vm.py): the host keeps its own tc.
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
mirror="$(awk '{print $3}' "$cache/apt/etc/sources.list" | head -n 1)"
keyring=/usr/share/keyrings/debian-archive-keyring.gpg

apt_opts() { # $1: the private configuration's folder
  printf '%s\n' -o "Dir::Etc::SourceList=$1/etc/sources.list" -o "Dir::Etc::SourceParts=$1/etc/parts" \
    -o "Dir::Etc::Preferences=$1/etc/preferences" -o "Dir::Etc::PreferencesParts=$1/etc/parts" \
    -o "Dir::State=$1/state" -o "Dir::State::status=$1/state/status" -o "Dir::Cache=$1/cache" \
    -o "APT::Architecture=amd64" -o "APT::Sandbox::User=root"
}
mapfile -t bin_opts < <(apt_opts "$cache/apt")

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
# Debian's package mirror here serves binary packages only (no source packages), and sid's
# iproute2 binary needs a newer C library than Debian 12's: the binary and its libraries
# (sid's libc6 included) are unpacked into a private root and tc runs through that root's
# own dynamic loader (a two-line wrapper), touching nothing of the host's.
if ! "$bindir/tc" qdisc add dev lo root dualpi2 help 2>&1 | grep -q step_thresh; then
  sid_apt="$cache/sid-apt"
  mkdir -p "$sid_apt/etc/parts" "$sid_apt/state/lists/partial" "$sid_apt/cache/archives/partial"
  : >"$sid_apt/state/status"
  printf 'deb [signed-by=%s] %s sid main\n' "$keyring" "$mirror" >"$sid_apt/etc/sources.list"
  mapfile -t sid_opts < <(apt_opts "$sid_apt")
  apt-get "${sid_opts[@]}" -qq update
  say "downloading sid's iproute2 and the libraries it needs"
  apt-get "${sid_opts[@]}" -qq -y --download-only -o Debug::NoLocking=1 \
    install iproute2 >/dev/null || die "apt-get install --download-only iproute2 (sid) failed"
  root="$cache/iproute2-root"
  rm -rf "$root" && mkdir -p "$root"
  for deb in "$sid_apt"/cache/archives/*.deb; do
    case "$(basename "$deb")" in
      iproute2_* | lib*) dpkg -x "$deb" "$root" ;;
    esac
  done
  [[ -x "$root/usr/sbin/tc" || -x "$root/sbin/tc" ]] || die "sid's iproute2 holds no tc"
  tcbin="$root/usr/sbin/tc"
  [[ -x "$tcbin" ]] || tcbin="$root/sbin/tc"
  libs="$root/usr/lib/x86_64-linux-gnu:$root/lib/x86_64-linux-gnu"
  mkdir -p "$bindir"
  printf '#!/bin/sh\nexec %s --library-path %s %s "$@"\n' \
    "$root/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" "$libs" "$tcbin" >"$bindir/tc"
  chmod 0755 "$bindir/tc"
fi
"$bindir/tc" -V

say "done: the vm guest loads sch_dualpi2 and uses $bindir/tc"
