#!/usr/bin/env bash
# Builds the user-mode Linux (UML) kernel of the `uml` testbed (docs/testbed.md, "uml
# testbed"): a Linux kernel that runs as an ordinary process at native speed, no KVM.
# Debian's own user-mode-linux package (6.1) lacks DualPI2 (mainline from 6.17) and
# time-travel mode; this builds one with both from Debian's kernel source.
#
#   bash scripts/build-uml.sh           # as root; ~9 min on 2 cores, then cached
#
# - Source: Debian's linux-source-X.Y from trixie-backports (the newest, or
#   CGA_UML_SOURCE=linux-source-7.3), downloaded through a private apt configuration
#   (scripts/lib/private-apt.sh): the host's apt sources are not touched.
# - Configuration: `make ARCH=um defconfig` plus scripts/uml.config, everything built in.
# - Installed: /usr/local/lib/cganalysis/uml/linux-RELEASE (stripped) with RELEASE.info
#   (source package and version, the configuration's hash) and the link `linux` to it,
#   which the testbed boots by default.
# - Cached: the source and the build tree stay in CGA_UML_CACHE (default
#   ~/.cache/cganalysis/uml); nothing is rebuilt while the installed kernel was built from
#   the same source version and the same scripts/uml.config.
# Also installs scripts/install-tc.sh's tc (DualPI2's options need iproute2 >= 6.18).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib/private-apt.sh
source scripts/lib/private-apt.sh

say() { printf 'build-uml.sh: %s\n' "$*"; }
die() {
  printf 'build-uml.sh: %s\n' "$*" >&2
  exit 1
}
[[ $(id -u) -eq 0 ]] || die "run as root (installs into /usr/local/lib/cganalysis/uml)"
[[ "$(uname -m)" == "x86_64" ]] || die "only x86_64 hosts are supported (this is $(uname -m))"
cache="${CGA_UML_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cganalysis/uml}"
dest=/usr/local/lib/cganalysis/uml
suite="${CGA_UML_SUITE:-trixie-backports}"
fragment="scripts/uml.config"

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
missing=()
for pkg in build-essential bc bison flex libelf-dev xz-utils; do installed "$pkg" || missing+=("$pkg"); done
if ((${#missing[@]})); then
  say "installing build tools: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

apt_dir="$cache/apt"
private_apt_setup "$apt_dir" "$suite" || die "no Debian mirror in /etc/apt/sources.list{,.d} (a URI ending in /debian)"
mapfile -t opts < <(private_apt_opts "$apt_dir")
apt-get "${opts[@]}" -qq update || die "apt-get update of $suite failed"
source_pkg="${CGA_UML_SOURCE:-}"
if [[ -z "$source_pkg" ]]; then
  source_pkg="$(apt-cache "${opts[@]}" depends linux-source 2>/dev/null |
    sed -n 's/^ *Depends: \(linux-source-[0-9.]*\)$/\1/p' | sort -V | tail -n 1)"
  [[ -n "$source_pkg" ]] || die "no linux-source in $suite"
fi
pkg_version="$(apt-cache "${opts[@]}" show "$source_pkg" 2>/dev/null | sed -n 's/^Version: //p' | head -n 1)"
[[ -n "$pkg_version" ]] || die "$source_pkg is not in $suite"
key="$(printf '%s %s\n' "$source_pkg" "$pkg_version" | cat - "$fragment" | sha256sum | cut -c1-16)"
if [[ -f "$dest/linux" ]] && grep -qx "key $key" "$dest/$(basename "$(readlink "$dest/linux")").info" 2>/dev/null; then
  say "$(readlink "$dest/linux") already built from $source_pkg $pkg_version ($dest/linux)"
  bash scripts/install-tc.sh
  exit 0
fi

series="${source_pkg#linux-source-}"
tree="$cache/linux-$pkg_version"
if [[ ! -f "$tree/Makefile" ]]; then
  mkdir -p "$cache/debs"
  say "downloading $source_pkg $pkg_version"
  (cd "$cache/debs" && apt-get "${opts[@]}" -qq download "$source_pkg=$pkg_version") || die "apt-get download $source_pkg failed"
  x="$cache/x"
  rm -rf "$x" && mkdir -p "$x"
  dpkg -x "$(ls -t "$cache/debs/${source_pkg}_"*.deb | head -n 1)" "$x"
  say "unpacking the kernel source (~1.5 GB)"
  rm -rf "$tree.partial" && mkdir -p "$tree.partial"
  tar -xf "$x/usr/src/linux-source-$series.tar.xz" -C "$tree.partial" --strip-components=1
  rm -rf "$x"
  mv "$tree.partial" "$tree"
fi

say "configuring (defconfig + $fragment)"
(
  cd "$tree"
  make -s ARCH=um defconfig
  args=()
  while read -r line; do
    line="${line%%#*}"
    line="${line//[[:space:]]/}"
    [[ -n "$line" ]] || continue
    if [[ "$line" == -* ]]; then args+=(--disable "${line#-}"); else args+=(--enable "$line"); fi
  done <"$OLDPWD/$fragment"
  scripts/config "${args[@]}"
  make -s ARCH=um olddefconfig
  # Every option asked for must have survived olddefconfig (a dependency it lacks drops it).
  lost=()
  while read -r line; do
    line="${line%%#*}"
    line="${line//[[:space:]]/}"
    [[ -n "$line" && "$line" != -* ]] || continue
    grep -qx "CONFIG_$line=y" .config || lost+=("$line")
  done <"$OLDPWD/$fragment"
  ((${#lost[@]} == 0)) || die "olddefconfig dropped: ${lost[*]} (a dependency is missing from $fragment)"
)
start=$(date +%s)
say "building (make ARCH=um -j$(nproc) linux, under nice; ~9 min on 2 cores)"
nice -n 19 make -s -C "$tree" ARCH=um -j"$(nproc)" linux >"$cache/build.log" 2>&1 ||
  die "the build failed; the last lines of $cache/build.log: $(tail -n 5 "$cache/build.log")"
release="$(make -s -C "$tree" ARCH=um kernelrelease)"
mkdir -p "$dest"
strip -o "$dest/linux-$release.partial" "$tree/linux"
mv "$dest/linux-$release.partial" "$dest/linux-$release"
printf 'release %s\nsource %s %s %s\nkey %s\nbuilt %s in %s s\n' "$release" "$source_pkg" "$pkg_version" \
  "$suite" "$key" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$(($(date +%s) - start))" >"$dest/linux-$release.info"
ln -sfn "linux-$release" "$dest/linux"
say "built linux-$release in $(($(date +%s) - start)) s: $dest/linux"
bash scripts/install-tc.sh
