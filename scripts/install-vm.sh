#!/usr/bin/env bash
# Installs what the `vm` testbed needs (docs/testbed.md, "vm testbed"): a Debian kernel
# with the queue disciplines this host's kernel may lack (netem, sfq, fq_codel, cake, ...),
# QEMU, and virtme-ng, which boots that kernel on this machine's own file system.
#
#   bash scripts/install-vm.sh            # install (cheap when already done)
#   bash scripts/install-vm.sh --refresh  # look for a newer kernel in the private lists
#   bash scripts/install-vm.sh --check    # also boot the guest once and load sch_netem
#
# As root (or a user with sudo). What it does:
#   - Debian packages from the host's own sources: qemu-system-x86 (the VM), kmod (depmod,
#     modprobe: the guest runs the host's), busybox-static (virtme-ng's initramfs);
#   - virtme-ng into the project's Python environment ("${PYTHON:-python3}" -m pip), where
#     install.sh's lock has put it already (pyproject.toml's `vm` extra);
#   - the kernel: a private apt configuration (own sources list, state and cache under
#     CGA_VM_CACHE, default ~/.cache/cganalysis/vm) pointing at Debian's trixie-backports
#     on the same mirror as the host's /etc/apt sources; the host's apt sources and package
#     database are never touched. `apt-get download` + `dpkg -x` of the kernel image and
#     its modules; the tree goes to /usr/lib/modules/VERSION (where the guest's modprobe,
#     on the shared file system, looks), then `depmod`. A marker file
#     /usr/lib/modules/VERSION/.cganalysis-vm tells the testbed which kernel to boot.
# Environment: PYTHON, CGA_VM_CACHE, CGA_VM_SUITE (default trixie-backports),
# CGA_VM_FLAVOUR (default amd64), CGA_VM_KERNEL_VERSION (a given version instead of the
# suite's newest, e.g. 7.3.4+deb13-amd64).
set -euo pipefail
# shellcheck source=scripts/lib/private-apt.sh
source "$(dirname "$0")/lib/private-apt.sh"

refresh=0
check=0
for arg in "$@"; do
  case "$arg" in
    --refresh) refresh=1 ;;
    --check) check=1 ;;
    *)
      echo "install-vm.sh: unknown option $arg (use --refresh, --check)" >&2
      exit 2
      ;;
  esac
done

say() { printf 'install-vm.sh: %s\n' "$*"; }
die() {
  printf 'install-vm.sh: %s\n' "$*" >&2
  exit 1
}
sudo_cmd=""
if [[ $(id -u) -ne 0 ]]; then sudo_cmd="sudo"; fi
[[ "$(uname -m)" == "x86_64" ]] || die "only x86_64 hosts are supported (this is $(uname -m))"
command -v apt-get >/dev/null || die "needs a Debian or Ubuntu host (apt-get not found)"

python="${PYTHON:-python3}"
cache="${CGA_VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cganalysis/vm}"
suite="${CGA_VM_SUITE:-trixie-backports}"
flavour="${CGA_VM_FLAVOUR:-amd64}"
modroot=/usr/lib/modules

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

# --- host packages (the host's own apt sources) ----------------------------------------
missing=()
for pkg in qemu-system-x86 kmod busybox-static; do installed "$pkg" || missing+=("$pkg"); done
if ((${#missing[@]})); then
  say "installing Debian packages: ${missing[*]}"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# --- virtme-ng ----------------------------------------------------------------------------
# In the lock: only an environment made otherwise (CGA_UNLOCKED, PYTHON=...) lacks it.
if ! "$python" -c 'import virtme_ng' >/dev/null 2>&1; then
  say "installing virtme-ng into $("$python" -c 'import sys; print(sys.prefix)')"
  "$python" -m pip install -q 'virtme-ng>=1.42,<2'
fi

# --- the kernel ---------------------------------------------------------------------------
current_marker() {
  # The newest kernel this script installed before (empty: none).
  local m
  for m in "$modroot"/*/.cganalysis-vm; do
    if [[ -f "$m" ]]; then basename "$(dirname "$m")"; fi
  done | sort -V | tail -n 1
}
have="$(current_marker)"
if [[ -n "$have" && $refresh -eq 0 && -z "${CGA_VM_KERNEL_VERSION:-}" ]] ||
  [[ -n "${CGA_VM_KERNEL_VERSION:-}" && -f "$modroot/${CGA_VM_KERNEL_VERSION}/.cganalysis-vm" ]]; then
  version="${CGA_VM_KERNEL_VERSION:-$have}"
  say "kernel $version already installed ($modroot/$version)"
else
  # A private apt configuration (scripts/lib/private-apt.sh): its own sources on the host's
  # mirror, lists, cache and (empty) dpkg status.
  apt_dir="$cache/apt"
  private_apt_setup "$apt_dir" "$suite" ||
    die "no Debian mirror in /etc/apt/sources.list{,.d} (a URI ending in /debian) or no Debian keyring; the kernel comes from Debian's $suite"
  mirror="$(awk '{print $3}' "$apt_dir/etc/sources.list")"
  mkdir -p "$cache/debs"
  mapfile -t apt_opts < <(private_apt_opts "$apt_dir")
  say "reading $suite's package lists (private apt configuration in $apt_dir)"
  apt-get "${apt_opts[@]}" -qq update || die "apt-get update of $suite failed (mirror $mirror)"
  if [[ -n "${CGA_VM_KERNEL_VERSION:-}" ]]; then
    version="$CGA_VM_KERNEL_VERSION"
  else
    # linux-image-<flavour> depends on the suite's newest linux-image-<version>-<flavour>.
    version="$(apt-cache "${apt_opts[@]}" depends "linux-image-$flavour" 2>/dev/null |
      sed -n "s/^ *Depends: linux-image-\(.*-$flavour\)\$/\1/p" | head -n 1)"
    [[ -n "$version" ]] || die "no linux-image-$flavour in $suite (mirror $mirror)"
  fi
  image="linux-image-$version"
  apt-cache "${apt_opts[@]}" show "$image" >/dev/null 2>&1 || die "$image is not in $suite"
  # Newer Debian kernels split the image into -binary (vmlinuz), -modules and -base
  # (modules.builtin, config); older ones are one package. Take the image and those parts.
  pkgs=("$image")
  while read -r dep; do pkgs+=("$dep"); done < <(
    apt-cache "${apt_opts[@]}" depends "$image" 2>/dev/null |
      sed -n "s/^ *Depends: \(linux-\(binary\|modules\|base\)-$version\)\$/\1/p" | sort -u
  )
  say "downloading ${pkgs[*]}"
  (cd "$cache/debs" && apt-get "${apt_opts[@]}" -qq download "${pkgs[@]}") || die "apt-get download ${pkgs[*]} failed"
  tree="$(mktemp -d "$cache/tree.XXXXXX")"
  trap 'rm -rf "$tree"' EXIT
  for pkg in "${pkgs[@]}"; do
    deb="$(ls -t "$cache/debs/${pkg}"_*.deb | head -n 1)"
    dpkg -x "$deb" "$tree"
  done
  src=""
  for d in "$tree/usr/lib/modules/$version" "$tree/lib/modules/$version"; do
    if [[ -d "$d" ]]; then src="$d" && break; fi
  done
  [[ -n "$src" ]] || die "the packages hold no modules directory for $version"
  if [[ ! -f "$src/vmlinuz" ]]; then
    [[ -f "$tree/boot/vmlinuz-$version" ]] || die "the packages hold no vmlinuz for $version"
    cp "$tree/boot/vmlinuz-$version" "$src/vmlinuz"
  fi
  [[ -f "$src/config" || ! -f "$tree/boot/config-$version" ]] || cp "$tree/boot/config-$version" "$src/config"
  $sudo_cmd mkdir -p "$modroot"
  $sudo_cmd rm -rf "${modroot:?}/$version"
  $sudo_cmd cp -a "$src" "$modroot/$version"
  rm -rf "$tree"
  trap - EXIT
  say "depmod -a $version"
  $sudo_cmd depmod -a "$version"
  pkgver="$(dpkg-deb -f "$(ls -t "$cache/debs/${image}"_*.deb | head -n 1)" Version)"
  printf '%s %s %s\n' "$image" "$pkgver" "$suite" | $sudo_cmd tee "$modroot/$version/.cganalysis-vm" >/dev/null
fi

for mod in sch_netem sch_sfq sch_fq_codel sch_cake sch_htb; do
  modinfo -k "$version" "$mod" >/dev/null 2>&1 || die "kernel $version has no module $mod"
done
say "kernel $version: $modroot/$version/vmlinuz"

if ((check)); then
  say "booting the guest once (TCG: ~10-20 s)"
  out="$("$python" -m cganalysis.testbed.vm.run --probe 2>&1)" || die "the guest failed: $out"
  say "$out"
fi
say "done"
