#!/usr/bin/env bash
# Builds hookd and hookctl, installs them, and starts the daemon.
#
#   ./install.sh [--prefix DIR]     install into DIR/bin (default ~/.local)
#   ./install.sh --help
set -euo pipefail

prefix="${HOME}/.local"

usage() {
  sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'
}

while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) prefix="${2:?--prefix needs a directory}"; shift 2 ;;
    --prefix=*) prefix="${1#--prefix=}"; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "install.sh: unknown option $1 (see --help)" >&2; exit 1 ;;
  esac
done

say() { printf 'install.sh: %s\n' "$*"; }
die() { printf 'install.sh: %s\n' "$*" >&2; exit 1; }

command -v cargo >/dev/null 2>&1 ||
  die "cargo not found: install a Rust toolchain first (https://rustup.rs), then run this again"

src="$(cd "$(dirname "$0")" && pwd)"
bindir="${prefix}/bin"
mkdir -p "$bindir" 2>/dev/null || die "cannot create ${bindir}: choose another --prefix"
[ -w "$bindir" ] || die "${bindir} is not writable: choose another --prefix"

say "building release binaries (a few minutes the first time)"
cargo build --release --locked --manifest-path "${src}/Cargo.toml" -p hookd -p hookctl
target="$(cargo metadata --format-version 1 --no-deps --manifest-path "${src}/Cargo.toml" |
  sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')"

# hookctl runs after every tool call. On Linux with glibc it is linked
# statically (static-pie): no dynamic loader at each start, which hookd-bench
# measures at about a third of its start-up. Elsewhere, or if that build
# fails, the ordinary build is installed.
hookctl_built="${target}/release/hookctl"
host="$(rustc -vV 2>/dev/null | sed -n 's/^host: //p')"
case "$host" in
  *-linux-gnu)
    if RUSTFLAGS="${RUSTFLAGS:-} -C target-feature=+crt-static" \
      cargo build --release --locked --manifest-path "${src}/Cargo.toml" -p hookctl --target "$host"; then
      hookctl_built="${target}/${host}/release/hookctl"
    else
      say "note: a statically linked hookctl did not build; installing the ordinary one"
    fi
    ;;
esac

changed=0
for bin in hookd hookctl; do
  built="${target}/release/${bin}"
  [ "$bin" = hookctl ] && built="$hookctl_built"
  if ! cmp -s "$built" "${bindir}/${bin}" 2>/dev/null; then
    install -m 0755 "$built" "${bindir}/${bin}.new"
    mv -f "${bindir}/${bin}.new" "${bindir}/${bin}"
    say "installed ${bindir}/${bin}"
    changed=1
  fi
done

# A daemon left from an older build would keep serving the old code.
if [ "$changed" = 1 ]; then
  "${bindir}/hookctl" daemon restart
else
  "${bindir}/hookctl" daemon start
fi

case ":${PATH}:" in
  *":${bindir}:"*) ;;
  *) say "note: ${bindir} is not on your PATH; add it, e.g.: echo 'export PATH=\"${bindir}:\$PATH\"' >> ~/.profile" ;;
esac
say "done: hookctl status shows what hookd sees"
