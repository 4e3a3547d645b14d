# Sourced by the install scripts: a private apt configuration for another Debian suite
# (its own sources list, lists, cache and an empty dpkg status), so that packages of that
# suite can be downloaded and unpacked (`apt-get download`, `dpkg -x`) without touching the
# host's apt sources or package database.
#
#   private_apt_setup DIR SUITE   # writes DIR/etc/sources.list for SUITE on the host's mirror
#   mapfile -t opts < <(private_apt_opts DIR)
#   apt-get "${opts[@]}" -qq update

# The host's own Debian mirror, read from its apt sources (one-line and deb822 formats).
host_debian_mirror() {
  {
    cat /etc/apt/sources.list 2>/dev/null | awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^https?:/) { print $i; break } }'
    cat /etc/apt/sources.list.d/*.list 2>/dev/null | awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^https?:/) { print $i; break } }'
    cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk 'tolower($1) == "uris:" { for (i = 2; i <= NF; i++) print $i }'
  } | sed 's:/*$::' | grep -E '/debian$' | head -n 1
}

private_apt_opts() { # $1: the private configuration's folder
  printf '%s\n' -o "Dir::Etc::SourceList=$1/etc/sources.list" -o "Dir::Etc::SourceParts=$1/etc/parts" \
    -o "Dir::Etc::Preferences=$1/etc/preferences" -o "Dir::Etc::PreferencesParts=$1/etc/parts" \
    -o "Dir::State=$1/state" -o "Dir::State::status=$1/state/status" -o "Dir::Cache=$1/cache" \
    -o "APT::Architecture=amd64" -o "APT::Sandbox::User=root" \
    -o "Acquire::Check-Valid-Until=false"
  # Check-Valid-Until: a mirror that is a dated snapshot serves Release files past their
  # Valid-Until (sid's expire within a week); their signatures are still checked. A fresh
  # Debian 12 root failed `apt-get update` of sid this way (scripts/check-fresh-install.sh).
}

private_apt_setup() { # $1: folder, $2: suite; returns 1 when the host names no Debian mirror
  local dir="$1" suite="$2" mirror keyring=/usr/share/keyrings/debian-archive-keyring.gpg
  mirror="$(host_debian_mirror)" || true
  [[ -n "$mirror" ]] || return 1
  [[ -f "$keyring" ]] || return 1
  mkdir -p "$dir/etc/parts" "$dir/state/lists/partial" "$dir/cache/archives/partial"
  printf 'deb [signed-by=%s] %s %s main\n' "$keyring" "$mirror" "$suite" >"$dir/etc/sources.list"
  [[ -f "$dir/state/status" ]] || : >"$dir/state/status"
}
