#!/usr/bin/env bash
# Sets hookd up in one command: builds hookd and hookctl, installs them,
# writes the default config (never over yours) and takes away template copies
# an older install left unchanged, wires Claude
# Code, starts the daemon and ends with `hookctl doctor`. Running it again
# changes nothing; --uninstall undoes it.
#
#   ./install.sh [--prefix DIR]     install into DIR/bin (default ~/.local)
#   ./install.sh --no-wire          leave Claude Code's settings alone
#   ./install.sh --from-build DIR   use the hookd and hookctl in DIR instead of building
#   ./install.sh --uninstall        undo it all (give the same --prefix)
#   ./install.sh --help
#
# Building needs Rust (cargo), git and a C compiler (libgit2 and tree-sitter
# are compiled from C); it honours CARGO_TARGET_DIR and CC. Exit status: 0
# when doctor passes; a prefix not on PATH is the last line's advice, not a
# failure (the hooks run hookctl by its full path).
set -euo pipefail

prefix="${HOME:?HOME is not set}/.local"
wire=1
uninstall=0
from_build=""

usage() {
  # The comment block at the top, whole.
  awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0"
}

while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) prefix="${2:?--prefix needs a directory}"; shift 2 ;;
    --prefix=*) prefix="${1#--prefix=}"; shift ;;
    --from-build) from_build="${2:?--from-build needs a directory}"; shift 2 ;;
    --from-build=*) from_build="${1#--from-build=}"; shift ;;
    --no-wire) wire=0; shift ;;
    --uninstall) uninstall=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "install.sh: unknown option $1 (see --help)" >&2; exit 1 ;;
  esac
done

say() { printf 'install.sh: %s\n' "$*"; }
die() { printf 'install.sh: error: %s\n' "$*" >&2; exit 1; }

src="$(cd "$(dirname "$0")" && pwd)"
case "$prefix" in /*) ;; *) prefix="$(pwd)/${prefix}" ;; esac
bindir="${prefix}/bin"
hookctl="${bindir}/hookctl"

# The starting config: every line a comment, so the defaults (and any later
# ones) apply until the person changes something. Uninstall removes it only
# while it is still exactly this.
default_config() {
  cat <<'YAML'
# hookd configuration (YAML). Every key has a default; uncomment and change
# what you need. `hookctl config` shows each value in force and where it came
# from; docs/configuration.md, in hookd's sources, lists every key.
#
# client:
#   hook_timeout_ms: 1000       # how long a hook waits for hookd, then carries on silently
#   autostart: true             # start hookd when a hook finds none running
# daemon:
#   idle_timeout_secs: 0        # exit after this long without requests (0: never)
# monitor:
#   reset_drop: 0.30            # a drop this large in context usage re-arms the warnings
# window:
#   tokens_max: 150000          # force the compaction point instead of working it out
YAML
}

# The starting config as earlier installs wrote it, when its pointer to the
# key reference named the README: still theirs to remove.
earlier_default_config() {
  default_config | sed "s|^# from; docs/configuration.md, in hookd's sources, lists every key\.\$|# from; the README's configuration reference lists every key.|"
}

on_path() {
  case ":${PATH}:" in *":${bindir}:"*) return 0 ;; esac
  return 1
}

# The profile the person's shell reads (printed, so ~ stays as it is).
# shellcheck disable=SC2088
shell_profile() {
  case "${SHELL:-}" in
    */zsh) printf '~/.zshrc' ;;
    */bash) printf '~/.bashrc' ;;
    *) printf '~/.profile' ;;
  esac
}

# The one line to add, as a command that adds it.
path_line() {
  # shellcheck disable=SC2016 # $PATH is for the profile, not for now
  printf 'echo '\''export PATH="%s:$PATH"'\'' >> %s' "$bindir" "$(shell_profile)"
}

# A C compiler as the cc crate looks for one: $CC, else cc.
have_c_compiler() {
  command -v "${CC:-cc}" >/dev/null 2>&1
}

if [ "$uninstall" = 1 ]; then
  if [ ! -x "$hookctl" ]; then
    die "no hookctl in ${bindir}: give the --prefix you installed with"
  fi
  config_dir="$("$hookctl" paths config-dir)"
  config_file="$("$hookctl" paths config-file)"
  templates_dir="$("$hookctl" paths templates-dir)"
  state_dir="$("$hookctl" paths state-dir)"
  memory_dir="$("$hookctl" paths data-dir)/memory"
  "$hookctl" uninstall claude-code ||
    say "could not take hookd out of Claude Code's settings (see above); fix that file, then run: hookctl uninstall claude-code"
  # A service would keep starting a hookd that is about to be deleted.
  service_files=("${XDG_CONFIG_HOME:-${HOME}/.config}/systemd/user/hookd.service"
    "${HOME}/Library/LaunchAgents/dev.hookd.hookd.plist")
  for f in "${service_files[@]}"; do
    if [ -e "$f" ]; then "$hookctl" daemon uninstall-service; break; fi
  done
  socket="$("$hookctl" paths socket)"
  if [ -x "${bindir}/hookd" ]; then "${bindir}/hookd" stop; fi
  # The lock hookctl takes to start hookd: ours, and useless without hookd.
  if [ -e "${socket}.start" ]; then rm -f "${socket}.start"; say "removed ${socket}.start"; fi
  # Copies an older install made, unchanged; the person's own stay. An older
  # hookctl has no `templates`: its copies are those equal to this source's.
  if ! "$hookctl" templates tidy 2>/dev/null | while IFS= read -r line; do say "$line"; done; then
    for t in "${src}"/templates/*.hbs; do
      dest="${templates_dir}/$(basename "$t")"
      if [ -e "$dest" ] && cmp -s "$t" "$dest"; then rm -f "$dest"; say "removed ${dest}"; fi
    done
  fi
  for t in "${src}"/templates/*.hbs; do
    dest="${templates_dir}/$(basename "$t")"
    if [ -e "$dest" ]; then say "kept ${dest} (yours)"; fi
  done
  if [ -e "$config_file" ] && { cmp -s <(default_config) "$config_file" || cmp -s <(earlier_default_config) "$config_file"; }; then
    rm -f "$config_file"; say "removed ${config_file}"
  elif [ -e "$config_file" ]; then
    say "kept ${config_file} (you changed it)"
  fi
  rmdir "$config_dir" 2>/dev/null || true
  for bin in hookd hookctl; do
    if [ -e "${bindir}/${bin}" ]; then rm -f "${bindir}/${bin}"; say "removed ${bindir}/${bin}"; fi
  done
  say "done. What stays behind, yours to keep or delete:"
  say "  session state and logs: ${state_dir}"
  say "  the cross-task memory: ${memory_dir}"
  say "  each project's .workflow/ directory"
  say "  the checkpoints in each repository (refs under refs/hookd/); in a repository, this deletes them:"
  # shellcheck disable=SC2016 # printed for the person to run
  say '    git for-each-ref --format='\''%(refname)'\'' refs/hookd/ | xargs -n1 git update-ref -d'
  exit 0
fi

# 1. The binaries: built here, or taken from --from-build.
hookctl_built=""
if [ -n "$from_build" ]; then
  built="$from_build"
  for bin in hookd hookctl; do
    [ -x "${built}/${bin}" ] || die "${built}/${bin} is missing: build first (cargo build -p hookd -p hookctl)"
  done
else
  command -v cargo >/dev/null 2>&1 ||
    die "cargo not found: install a Rust toolchain first (https://rustup.rs), open a new shell, and run ./install.sh again"
  have_c_compiler ||
    die "no C compiler (${CC:-cc}) found: the build compiles C (libgit2, tree-sitter). Install one (Debian/Ubuntu: sudo apt-get install build-essential; Fedora: sudo dnf install gcc; macOS: xcode-select --install), then run ./install.sh again"
  command -v git >/dev/null 2>&1 ||
    die "git not found: install git, then run ./install.sh again"
  say "building release binaries (a few minutes the first time)"
  cargo build --release --locked --manifest-path "${src}/Cargo.toml" -p hookd -p hookctl
  target="$(cargo metadata --format-version 1 --no-deps --manifest-path "${src}/Cargo.toml" |
    sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')"
  built="${target}/release"
  # hookctl runs after every tool call. On Linux with glibc it is linked
  # statically (static-pie): no dynamic loader at each start, which hookd-bench
  # measures at about a third of its start-up. Elsewhere, or if that build
  # fails, the ordinary build is installed.
  host="$(rustc -vV 2>/dev/null | sed -n 's/^host: //p')"
  case "$host" in
    *-linux-gnu)
      say "building hookctl again, statically linked (it starts faster after every tool call)"
      if RUSTFLAGS="${RUSTFLAGS:-} -C target-feature=+crt-static" \
        cargo build --release --locked --manifest-path "${src}/Cargo.toml" -p hookctl --target "$host"; then
        hookctl_built="${target}/${host}/release/hookctl"
      else
        say "note: a statically linked hookctl did not build; installing the ordinary one"
      fi
      ;;
  esac
fi

mkdir -p "$bindir" 2>/dev/null ||
  die "cannot create ${bindir}: choose a --prefix you can write to (the default is ~/.local)"
[ -w "$bindir" ] || die "${bindir} is not writable: choose a --prefix you can write to (the default is ~/.local)"

changed=0
for bin in hookd hookctl; do
  from="${built}/${bin}"
  [ "$bin" = hookctl ] && [ -n "$hookctl_built" ] && from="$hookctl_built"
  if ! cmp -s "$from" "${bindir}/${bin}"; then
    install -m 0755 "$from" "${bindir}/.${bin}.new"
    mv -f "${bindir}/.${bin}.new" "${bindir}/${bin}"
    say "installed ${bindir}/${bin}"
    changed=1
  fi
done

# 2. The default config, only where the person has none. The templates are
# built into hookd: copies an older install left, never changed, would hide
# this version's, so they go (`hookctl templates edit NAME` makes one of yours).
config_file="$("$hookctl" paths config-file)"
"$hookctl" templates tidy | while IFS= read -r line; do say "$line"; done
if [ ! -e "$config_file" ]; then
  mkdir -p "$(dirname "$config_file")"
  default_config >"$config_file"
  say "wrote ${config_file}"
fi

# 3. Claude Code's hooks (hookctl keeps everything else in the file).
if [ "$wire" = 1 ]; then
  "$hookctl" install claude-code
fi

# 4. The daemon; a new build replaces a running one (`hookd stop` needs no
# protocol, so it also stops an older, incompatible hookd).
if [ "$changed" = 1 ]; then
  # Only a daemon that was running is worth a line.
  stopped="$("${bindir}/hookd" stop)"
  case "$stopped" in
    *"not running"*) ;;
    *) say "$stopped (replaced by the new build)" ;;
  esac
fi
"$hookctl" daemon start

# 5. Check it all, as this shell sees it: a bindir not on PATH is a warning
# there (the hooks run hookctl by its path) and the last line's advice.
status=0
"$hookctl" doctor || status=$?
if [ "$status" != 0 ]; then
  say "some checks failed (see above); fix them, then run ./install.sh again"
elif ! on_path; then
  say "done, one step left: ${bindir} is not on your PATH (hooks work without it; typing hookctl, /hookd-resume and /hookd-save need it): $(path_line), then open a new shell"
else
  if [ "$wire" = 1 ]; then
    say "done: hookd is running and Claude Code is wired; restart running Claude Code sessions, then try: hookctl status"
  else
    say "done: hookd is running; wire an agent with hookctl install claude-code (or codex, gemini-cli, qwen-code, copilot-cli, opencode, cursor)"
  fi
fi
exit "$status"
