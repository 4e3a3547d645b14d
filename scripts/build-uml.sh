#!/usr/bin/env bash
# Builds the user-mode Linux (UML) kernel of the `uml` testbed (docs/testbed.md, "uml
# testbed"): a Linux kernel that runs as an ordinary process at native speed, no KVM.
# Debian's own user-mode-linux package (6.1) lacks DualPI2 (mainline from 6.17) and
# time-travel mode; this builds one with both from Debian's kernel source.
#
#   bash scripts/build-uml.sh           # as root; ~9 min on 2 cores, then cached
#   CGA_UML_TREE=/path/to/linux bash scripts/build-uml.sh [--set-default]
#                                       # a kernel source tree of the user's (Google's
#                                       # BBRv2/v3 tree, say), installed beside the default
#   bash scripts/build-uml.sh --dry-run # what would be built and installed, then stop
#
# - Source: Debian's linux-source-X.Y from trixie-backports (the newest, or
#   CGA_UML_SOURCE=linux-source-7.3), downloaded through a private apt configuration
#   (scripts/lib/private-apt.sh): the host's apt sources are not touched. Or the tree
#   CGA_UML_TREE names (built out of tree: the tree itself is not written to).
# - Configuration: `make ARCH=um defconfig` plus scripts/uml.config, everything built in;
#   from a tree, also every TCP_CONG_BBR* option its net/ipv4/Kconfig defines.
# - Installed: /usr/local/lib/cganalysis/uml/linux-RELEASE (stripped) with RELEASE.info
#   (source package and version, the configuration's hash, the congestion controls it
#   registers and each BBR's version) and the link `linux` to it, which the testbed boots
#   by default. A tree's kernel is linux-VERSION+TREE (TREE: the folder's name) with the
#   tree's path and git commit in its .info; `linux` is moved to it only with
#   --set-default. A testbed file selects it by name (uml.kernel / sim.kernel).
# - Cached: the source and the build tree stay in CGA_UML_CACHE (default
#   ~/.cache/cganalysis/uml); nothing is rebuilt while the installed kernel was built from
#   the same source version (a tree: path and commit) and the same scripts/uml.config.
# Also installs scripts/install-tc.sh's tc (DualPI2's options need iproute2 >= 6.18).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib/private-apt.sh
source scripts/lib/private-apt.sh
# shellcheck source=scripts/lib/uml-tree.sh
source scripts/lib/uml-tree.sh

say() { printf 'build-uml.sh: %s\n' "$*"; }
die() {
  printf 'build-uml.sh: %s\n' "$*" >&2
  exit 1
}
dry_run=0
set_default=0
for arg in "$@"; do
  case "$arg" in
    --dry-run) dry_run=1 ;;
    --set-default) set_default=1 ;;
    *) die "unknown argument $arg (--dry-run, --set-default)" ;;
  esac
done
cache="${CGA_UML_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cganalysis/uml}"
dest="${CGA_UML_DEST:-/usr/local/lib/cganalysis/uml}"
suite="${CGA_UML_SUITE:-trixie-backports}"
fragment="scripts/uml.config"
# Part of every build key: builds before the version string was pinned are made again.
pinned="pinned-version-string-1"
user_tree="${CGA_UML_TREE:-}"
extra=() # options beyond the fragment (a tree's BBR options)

if [[ -n "$user_tree" ]]; then
  [[ "$user_tree" == /* ]] || die "CGA_UML_TREE=$user_tree: not an absolute path"
  [[ -f "$user_tree/Makefile" && -f "$user_tree/net/ipv4/Kconfig" ]] ||
    die "CGA_UML_TREE=$user_tree: not a kernel source tree (no Makefile, net/ipv4/Kconfig)"
  [[ -d "$user_tree/arch/um" ]] || die "CGA_UML_TREE=$user_tree: the tree has no arch/um (UML)"
  [[ ! -f "$user_tree/.config" ]] ||
    die "CGA_UML_TREE=$user_tree: the tree has a .config; it is built out of tree (O=), which needs a clean tree: make -C $user_tree mrproper"
  version="$(uml_tree_version "$user_tree")" || die "CGA_UML_TREE=$user_tree: no VERSION in its Makefile"
  name="$(uml_tree_name "$user_tree" "$version")"
  commit="$(uml_tree_commit "$user_tree")"
  mapfile -t extra < <(uml_tree_bbr_options "$user_tree")
  source_line="tree $user_tree ${commit:-not-a-git-tree}"
  # A tree that is not a git tree has no identity to cache by: it is rebuilt (make only
  # recompiles what changed in the build folder).
  key="$(printf '%s %s %s\n' "$source_line" "${extra[*]}" "$pinned" | cat - "$fragment" | sha256sum | cut -c1-16)"
  tree="$user_tree"
  build="$cache/build-$name"
else
  name=""
fi

if ((dry_run)); then
  if [[ -z "$user_tree" ]]; then
    say "would build Debian's newest linux-source in $suite, configured with defconfig + $fragment, into $dest/linux-RELEASE, and link $dest/linux to it"
    exit 0
  fi
  planned="$(mktemp)"
  trap 'rm -f "$planned"' EXIT
  sed -e 's/#.*//' -e 's/[[:space:]]//g' -e '/^$/d' -e '/^-/d' -e 's/^\(.*\)$/CONFIG_\1=y/' \
    "$fragment" >"$planned"
  printf 'CONFIG_%s=y\n' "${extra[@]}" >>"$planned"
  ccs="$(uml_tree_ccs "$tree" "$planned")"
  printf 'name %s\nsource %s\nkey %s\nextra_options %s\ntcp_available_congestion_control %s\ntcp_bbr %s\ninstall %s\nset_default %s\n' \
    "$name" "$source_line" "$key" "${extra[*]}" "$ccs" "$(uml_tree_bbr_versions "$tree" "$ccs")" \
    "$dest/$name" "$([[ $set_default == 1 ]] && echo yes || echo no)"
  exit 0
fi

[[ $(id -u) -eq 0 ]] || die "run as root (installs into $dest)"
[[ "$(uname -m)" == "x86_64" ]] || die "only x86_64 hosts are supported (this is $(uname -m))"

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
missing=()
for pkg in build-essential bc bison flex libelf-dev xz-utils; do installed "$pkg" || missing+=("$pkg"); done
if ((${#missing[@]})); then
  say "installing build tools: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [[ -z "$user_tree" ]]; then
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
  source_line="$source_pkg $pkg_version $suite"
  key="$(printf '%s %s %s\n' "$source_pkg" "$pkg_version" "$pinned" | cat - "$fragment" | sha256sum | cut -c1-16)"
fi

# The kernel this key built, if installed: `linux` (Debian's) or the tree's own name.
current="${name:-$(basename "$(readlink "$dest/linux" 2>/dev/null || echo none)")}"
if [[ -f "$dest/$current" ]] && grep -qx "key $key" "$dest/$current.info" 2>/dev/null; then
  say "$current already built from $source_line ($dest/$current)"
  if ((set_default)); then ln -sfn "$current" "$dest/linux" && say "$dest/linux -> $current"; fi
  bash scripts/install-tc.sh
  exit 0
fi

if [[ -z "$user_tree" ]]; then
  series="${source_pkg#linux-source-}"
  tree="$cache/linux-$pkg_version"
  build="$tree"
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
fi
mkdir -p "$build"
# make's arguments: out of tree for a user's tree (O=: its folder is not written to).
# The version string a build stamps (user, host, build number, time) is fixed: the kernel
# mixes it into its random pool at boot, so two builds of one source on two machines must
# print the same one for a sim run to make the same packets on both (docs/testbed.md).
mk=(make -s -C "$tree" ARCH=um KBUILD_BUILD_USER=cganalysis KBUILD_BUILD_HOST=cganalysis
  KBUILD_BUILD_VERSION=1 "KBUILD_BUILD_TIMESTAMP=build $key")
[[ "$build" == "$tree" ]] || mk+=(O="$build")

say "configuring (defconfig + $fragment${extra[*]:+ + ${extra[*]}})"
(
  "${mk[@]}" defconfig
  args=()
  while read -r line; do
    line="${line%%#*}"
    line="${line//[[:space:]]/}"
    [[ -n "$line" ]] || continue
    if [[ "$line" == -* ]]; then args+=(--disable "${line#-}"); else args+=(--enable "$line"); fi
  done <"$fragment"
  for opt in "${extra[@]}"; do args+=(--enable "$opt"); done
  "$tree/scripts/config" --file "$build/.config" "${args[@]}"
  "${mk[@]}" olddefconfig
  # Every option asked for must have survived olddefconfig (a dependency it lacks drops it).
  lost=()
  while read -r line; do
    line="${line%%#*}"
    line="${line//[[:space:]]/}"
    [[ -n "$line" && "$line" != -* ]] || continue
    grep -qx "CONFIG_$line=y" "$build/.config" || lost+=("$line")
  done < <(cat "$fragment"; printf '%s\n' "${extra[@]}")
  ((${#lost[@]} == 0)) || die "olddefconfig dropped: ${lost[*]} (a dependency is missing from $fragment)"
)
start=$(date +%s)
say "building (make ARCH=um -j$(nproc) linux, under nice; ~9 min on 2 cores)"
nice -n 19 "${mk[@]}" -j"$(nproc)" linux >"$cache/build.log" 2>&1 ||
  die "the build failed; the last lines of $cache/build.log: $(tail -n 5 "$cache/build.log")"
release="$("${mk[@]}" kernelrelease)"
name="${name:-linux-$release}"
ccs="$(uml_tree_ccs "$tree" "$build/.config")"
mkdir -p "$dest"
strip -o "$dest/$name.partial" "$build/linux"
mv "$dest/$name.partial" "$dest/$name"
{
  printf 'release %s\nsource %s\nkey %s\n' "$release" "$source_line" "$key"
  if [[ -n "$user_tree" ]]; then
    printf 'tree %s\ntree_path %s\ncommit %s\n' "$(basename "$user_tree")" "$user_tree" "${commit:-none}"
  fi
  printf 'tcp_available_congestion_control %s\ntcp_bbr %s\n' "$ccs" "$(uml_tree_bbr_versions "$tree" "$ccs")"
  printf 'built %s in %s s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$(($(date +%s) - start))"
} >"$dest/$name.info"
if [[ -z "$user_tree" ]] || ((set_default)); then ln -sfn "$name" "$dest/linux"; fi
say "built $name in $(($(date +%s) - start)) s: $dest/$name (tcp: $ccs)"
bash scripts/install-tc.sh
