#!/usr/bin/env bash
# Installs a `tc` that knows DualPI2's options (iproute2 >= 6.18) for the kernels the
# project boots itself (the user-mode Linux router, the vm guest). Debian 12's tc (6.1)
# adds `dualpi2` with defaults only and prints it as "Unknown qdisc".
#
#   bash scripts/install-tc.sh     # as root; cheap when already done
#
# Debian's mirror serves binary packages only, and sid's iproute2 needs a newer C library
# than Debian 12's: the binary and its libraries (sid's libc6 included) are unpacked into
# a private root (/usr/local/lib/cganalysis-vm/iproute2-root, readable by every user: the
# sim kernel runs as an unprivileged user) and /usr/local/lib/cganalysis-vm/bin/tc runs
# it through that root's own dynamic loader. Only the UML router and the vm guest put that
# folder first on their PATH: the host keeps its own tc. The host's apt sources and
# package database are never touched (scripts/lib/private-apt.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib/private-apt.sh
source scripts/lib/private-apt.sh

say() { printf 'install-tc.sh: %s\n' "$*"; }
die() {
  printf 'install-tc.sh: %s\n' "$*" >&2
  exit 1
}
[[ $(id -u) -eq 0 ]] || die "run as root (installs into /usr/local/lib/cganalysis-vm)"
cache="${CGA_VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cganalysis/vm}"
bindir=/usr/local/lib/cganalysis-vm/bin
root=/usr/local/lib/cganalysis-vm/iproute2-root

# Captured first: grep -q would close the pipe early, and pipefail then blames tc.
knows_dualpi2() { [[ "$("$bindir/tc" qdisc add dev lo root dualpi2 help 2>&1)" == *step_thresh* ]]; }
# An older install unpacked it under root's cache, which other users cannot read.
if knows_dualpi2 && grep -q "$root/" "$bindir/tc"; then
  say "$("$bindir/tc" -V) already installed ($bindir/tc)"
  exit 0
fi
sid_apt="$cache/sid-apt"
private_apt_setup "$sid_apt" sid || die "no Debian mirror in /etc/apt/sources.list{,.d} (a URI ending in /debian)"
mapfile -t sid_opts < <(private_apt_opts "$sid_apt")
apt-get "${sid_opts[@]}" -qq update || die "apt-get update of sid failed"
say "downloading sid's iproute2 and the libraries it needs"
apt-get "${sid_opts[@]}" -qq -y --download-only -o Debug::NoLocking=1 \
  install iproute2 >/dev/null || die "apt-get install --download-only iproute2 (sid) failed"
rm -rf "$root" && mkdir -p "$root" && chmod 0755 "$root"
for deb in "$sid_apt"/cache/archives/*.deb; do
  case "$(basename "$deb")" in
    iproute2_* | lib*) dpkg -x "$deb" "$root" ;;
  esac
done
tcbin="$root/usr/sbin/tc"
[[ -x "$tcbin" ]] || tcbin="$root/sbin/tc"
[[ -x "$tcbin" ]] || die "sid's iproute2 holds no tc"
libs="$root/usr/lib/x86_64-linux-gnu:$root/lib/x86_64-linux-gnu"
mkdir -p "$bindir"
printf '#!/bin/sh\nexec %s --library-path %s %s "$@"\n' \
  "$root/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" "$libs" "$tcbin" >"$bindir/tc"
chmod 0755 "$bindir/tc"
knows_dualpi2 || die "$bindir/tc does not know dualpi2"
say "$("$bindir/tc" -V): $bindir/tc"
