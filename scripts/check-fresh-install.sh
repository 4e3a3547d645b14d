#!/usr/bin/env bash
# Proves the README's two commands on a pristine system: builds a minimal Debian root file
# system with debootstrap, copies a clean clone of this repository's HEAD into it (nothing
# else: no virtual environment, no build, nothing from next to the repository), and runs,
# as root inside it,
#   1. the main job:  bash scripts/install.sh && .venv/bin/snakemake --cores 4 [PROFILE]
#   2. the tests:     bash scripts/install.sh --dev && bash scripts/test.sh   (CI=true)
# then prints pass/fail and the time of each step.
#
# The system gets a network namespace of its own (a veth pair to this host, NAT out), so the
# namespaces, interfaces and locks its experiments make never meet this host's, and its
# mounts vanish with it. Needs root, debootstrap and nftables (installed if missing).
#
#   sudo bash scripts/check-fresh-install.sh [--suite bookworm|trixie] [--profile quick|full]
#                                            [--only main|tests] [--keep] [--dir DIR]
# --profile quick (default) runs the main job with `--profile profiles/quick` (every
# schedule scaled to 30 s, under 10 minutes); full runs `snakemake --cores 4` itself (about
# an hour). The mirror is the one this host's apt uses (MIRROR overrides it).
# Slow (30-60 minutes): not part of the test suite.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"

suite=bookworm
profile=quick
only=""
keep=0
dir=""
while (($#)); do
  case "$1" in
    --suite) suite="$2"; shift 2 ;;
    --profile) profile="$2"; shift 2 ;;
    --only) only="$2"; shift 2 ;;
    --keep) keep=1; shift ;;
    --dir) dir="$2"; shift 2 ;;
    *) echo "check-fresh-install.sh: unknown option $1 (see the header of this script)" >&2; exit 2 ;;
  esac
done
case "$profile" in quick) profile_args=(--profile profiles/quick) ;; full) profile_args=() ;;
  *) echo "check-fresh-install.sh: --profile is quick or full, not $profile" >&2; exit 2 ;;
esac
[[ $(id -u) -eq 0 ]] || { echo "check-fresh-install.sh: run as root (debootstrap, chroot, namespaces)" >&2; exit 2; }

say() { printf '\n== check-fresh-install [%s]: %s\n' "$(date -u +%H:%M:%S)" "$*"; }

for tool in debootstrap nft; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    pkg=$tool; [[ $tool == nft ]] && pkg=nftables
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$pkg"
  fi
done

# The Debian mirror this host already uses (its sources list names it; nothing is assumed).
sources=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
urls=$(grep -oE '(URIs:|^deb)[[:space:]]+[a-z]+://[^[:space:]]+' <<<"$sources" | awk '{print $2}')
mirror="${MIRROR:-$(grep -v security <<<"$urls" | head -n 1)}"
security="${SECURITY_MIRROR:-$(grep security <<<"$urls" | head -n 1)}"
[[ -n "$mirror" ]] || { echo "check-fresh-install.sh: no Debian mirror in this host's apt sources; set MIRROR" >&2; exit 2; }

dir="${dir:-$(mktemp -d "${TMPDIR:-/var/tmp}/cga-fresh-$suite.XXXXXX")}"
mkdir -p "$dir"
root="$dir/rootfs"
ns="cgafresh$$"
host_if="cgafh$$"
subnet_host=10.231.$((RANDOM % 250)).1
subnet_guest="${subnet_host%.1}.2"

cleanup() {
  set +e
  ip netns pids "$ns" 2>/dev/null | xargs -r kill -9
  nft delete table ip "$ns" 2>/dev/null
  ip link del "$host_if" 2>/dev/null
  ip netns del "$ns" 2>/dev/null
  if ((keep)); then echo "kept: $root"; else rm -rf --one-file-system "$dir"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

declare -A seconds=() verdict=()
timed() { # name, command...
  local name=$1 start status
  shift
  start=$(date +%s)
  say "$name: $*"
  if "$@"; then status=pass; else status=FAIL; fi
  seconds[$name]=$(($(date +%s) - start))
  verdict[$name]=$status
  say "$name: $status in ${seconds[$name]} s"
  [[ $status == pass ]]
}

bootstrap() {
  debootstrap --variant=minbase --include=ca-certificates,git "$suite" "$root" "$mirror" >"$dir/debootstrap.log" 2>&1 ||
    { tail -n 20 "$dir/debootstrap.log"; return 1; }
  # A stock installation's sources: the release, its updates and its security archive.
  {
    echo "deb $mirror $suite main"
    echo "deb $mirror $suite-updates main"
    [[ -n "$security" ]] && echo "deb $security $suite-security main"
  } >"$root/etc/apt/sources.list"
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  # This host's local certificate authorities and pip settings (a network that inspects TLS
  # puts its authority there): part of the machine, not of the project, so the new system
  # gets them as a machine of this network would have them.
  if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
    cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
    chroot "$root" update-ca-certificates >/dev/null 2>&1
  fi
  [[ -f /etc/pip.conf ]] && cp /etc/pip.conf "$root/etc/pip.conf"
  # A clean clone of what is committed: what a researcher gets from the forge.
  git clone --quiet --no-local "$repo" "$root/root/cganalysis"
}

network() {
  ip netns add "$ns"
  ip link add "$host_if" type veth peer name eth0 netns "$ns"
  ip addr add "$subnet_host/30" dev "$host_if"
  ip link set "$host_if" up
  ip -n "$ns" addr add "$subnet_guest/30" dev eth0
  ip -n "$ns" link set eth0 up
  ip -n "$ns" link set lo up
  ip -n "$ns" route add default via "$subnet_host"
  sysctl -qw net.ipv4.ip_forward=1
  nft -f - <<EOF
table ip $ns {
  chain post { type nat hook postrouting priority 100; ip saddr $subnet_guest masquerade; }
}
EOF
}

# The host's certificate-bundle variables (they name the system bundle, which the new system
# has too); nothing else of this environment goes in.
TRUST=""
for var in SSL_CERT_FILE SSL_CERT_DIR CURL_CA_BUNDLE REQUESTS_CA_BUNDLE PIP_CERT GIT_SSL_CAINFO; do
  [[ -n "${!var:-}" ]] && TRUST+=" $var=${!var}"
done
export TRUST

# Runs a command as root inside the system: its own network namespace (ip netns exec also
# remounts /sys for it) and mount namespace, so every mount goes away with it.
inside() {
  ip netns exec "$ns" unshare --mount --propagation private bash -c '
    set -e
    r=$1; shift
    # ip netns needs / to be a mount point (it makes it a slave mount); a chroot dir is not.
    mount --bind "$r" "$r"
    mount -t proc proc "$r/proc"
    mount -t sysfs sysfs "$r/sys"
    mount --rbind /dev "$r/dev"
    mount -t tmpfs tmpfs "$r/run"
    mount -t tmpfs tmpfs "$r/tmp"
    exec chroot "$r" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 CI=true $TRUST \
      PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      bash -c "cd /root/cganalysis && $*"
  ' inside "$root" "$@"
}

main_job() { inside "bash scripts/install.sh && .venv/bin/snakemake --cores 4 ${profile_args[*]}"; }
tests() { inside "bash scripts/install.sh --dev && bash scripts/test.sh"; }

status=0
timed debootstrap bootstrap || exit 1
network
# The commit checked: the clone's (this repository may get new commits while the check runs).
commit=$(git -C "$root/root/cganalysis" rev-parse --short HEAD)
say "system: Debian $suite ($(cat "$root/etc/debian_version")), clone at $commit"
if [[ "$only" != tests ]]; then timed main-job main_job 2>&1 | tee "$dir/main-job.log" || status=1; fi
if [[ "$only" != main ]]; then timed tests tests 2>&1 | tee "$dir/tests.log" || status=1; fi

say "summary (Debian $suite, commit $commit)"
grep -hE '^== check-fresh-install .*: (pass|FAIL) in' "$dir"/*.log 2>/dev/null || true
# Which lock install.sh installed, and whether the venv is exactly it.
grep -hE '^install.sh: (installing the Python packages from|the environment )' "$dir"/*.log 2>/dev/null | sort -u || true
grep -hE '(passed|failed).* in [0-9.]+s' "$dir/tests.log" 2>/dev/null | tail -n 1 || true
exit $status
