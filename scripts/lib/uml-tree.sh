# Facts about a kernel source tree a user points scripts/build-uml.sh at (CGA_UML_TREE):
# its version, the name its kernel is installed under, its git commit, the BBR options its
# Kconfig offers, and which TCP congestion controls (and BBR versions) a configuration of
# it registers. Read from the tree's files only: nothing is built or changed.
# shellcheck shell=bash

# VERSION.PATCHLEVEL.SUBLEVEL[EXTRAVERSION] from the tree's top Makefile (what
# `make kernelversion` prints, without needing make or a configuration).
uml_tree_version() {
  sed -n -e 's/^VERSION = *\([0-9]*\)$/v \1/p' -e 's/^PATCHLEVEL = *\([0-9]*\)$/p \1/p' \
    -e 's/^SUBLEVEL = *\([0-9]*\)$/s \1/p' -e 's/^EXTRAVERSION = *\([^ ]*\)$/e \1/p' \
    "$1/Makefile" | head -n 4 | awk '{a[$1]=$2} END {
      if (a["v"] == "") exit 1; printf "%s.%s.%s%s\n", a["v"], a["p"], a["s"], a["e"] }'
}

# The installed kernel's file name: linux-VERSION+TREE, TREE the tree folder's name with
# anything but letters, digits, dot, dash and underscore turned into dashes (a testbed
# file names it as uml.kernel / sim.kernel; the default `linux-VERSION` stays Debian's).
uml_tree_name() {
  local base
  base="$(basename "$1" | tr -c 'A-Za-z0-9._\n-' '-')"
  printf 'linux-%s+%s\n' "$2" "$base"
}

# The tree's git commit (with -dirty if tracked files changed), or nothing if not a git tree.
uml_tree_commit() {
  git -C "$1" rev-parse --is-inside-work-tree >/dev/null 2>&1 || return 0
  local commit
  commit="$(git -C "$1" rev-parse HEAD 2>/dev/null)" || return 0
  git -C "$1" diff --quiet HEAD -- 2>/dev/null || commit="$commit-dirty"
  printf '%s\n' "$commit"
}

# Every BBR option the tree's net/ipv4/Kconfig defines (TCP_CONG_BBR, and TCP_CONG_BBR2 in
# Google's v2alpha branch), one a line: build-uml.sh builds them all in.
uml_tree_bbr_options() {
  sed -n 's/^config \(TCP_CONG_BBR[0-9]*\)$/\1/p' "$1/net/ipv4/Kconfig" | sort -u
}

# The congestion controls a kernel of TREE registers with the options enabled in CONFIG (a
# .config, or a list of NAME=y lines): reno (always), then for each net/ipv4/Makefile line
# `obj-$(CONFIG_X) += F.o` whose X is =y, the `.name = "..."` of F.c's
# tcp_congestion_ops. Space-separated, sorted.
uml_tree_ccs() {
  local tree="$1" config="$2" opt obj
  {
    echo reno
    sed -n 's/^obj-\$(CONFIG_\(TCP_CONG_[A-Z0-9_]*\)) *+= *\([a-z0-9_]*\)\.o$/\1 \2/p' \
      "$tree/net/ipv4/Makefile" | while read -r opt obj; do
      grep -qx "CONFIG_$opt=y" "$config" || continue
      sed -n 's/^[[:space:]]*\.name[[:space:]]*=[[:space:]]*"\([a-z0-9_]*\)",*$/\1/p' \
        "$tree/net/ipv4/$obj.c"
    done
  } | sort -u | tr '\n' ' ' | sed 's/ $//'
}

# The BBR version of each BBR the congestion controls CCS hold, as NAME=VERSION: `bbr2`
# is 2 (Google's v2alpha branch); `bbr` is tcp_bbr.c's BBR_VERSION where it defines one
# (3 in Google's v3 branch, which replaces v1 under the name bbr), else 1 (mainline).
uml_tree_bbr_versions() {
  local tree="$1" cc version out=()
  for cc in $2; do
    case "$cc" in
      bbr2) out+=("bbr2=2") ;;
      bbr)
        version="$(sed -n 's/^#define[[:space:]]*BBR_VERSION[[:space:]]*\([0-9]*\).*$/\1/p' \
          "$tree/net/ipv4/tcp_bbr.c" | head -n 1)"
        out+=("bbr=${version:-1}")
        ;;
    esac
  done
  printf '%s\n' "${out[*]}"
}
