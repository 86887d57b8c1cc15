#!/usr/bin/env bash
# Debian's headless Chromium and its ChromeDriver, for the teleop page's test in a real browser
# (tests/test_teleop_page.py). It does nothing once both are there.
#   scripts/install_browser.sh              exit 1 where they cannot be installed (no root, no apt-get, apt-get failed)
#   scripts/install_browser.sh --optional   there, one line saying what to install, and exit 0 (make test: the
#                                           teleop page's test then fails, it does not skip)
set -euo pipefail
say() { printf '\033[1;34m[browser]\033[0m %s\n' "$*"; }
OPTIONAL=0
[ "${1:-}" = --optional ] && OPTIONAL=1

CHROMIUM="${FRANKA_SIM_CHROMIUM:-/usr/bin/chromium}"
DRIVER="${FRANKA_SIM_CHROMEDRIVER:-/usr/bin/chromedriver}"
[ -x "$CHROMIUM" ] && [ -x "$DRIVER" ] && exit 0
cannot() {
  local what="install Debian's 'chromium' and 'chromium-driver' (sudo apt-get install chromium chromium-driver), or set"
  what="$what FRANKA_SIM_CHROMIUM and FRANKA_SIM_CHROMEDRIVER to a Chromium and its ChromeDriver"
  if [ "$OPTIONAL" = 1 ]; then
    say "no $CHROMIUM / $DRIVER ($1): the teleop page's browser test will fail; $what"
    exit 0
  fi
  say "no $CHROMIUM / $DRIVER ($1): $what"
  exit 1
}
command -v apt-get >/dev/null || cannot "and no apt-get to install them"
[ "$(id -u)" = 0 ] || cannot "and installing them needs root"
say "installing Debian's chromium and chromium-driver for the teleop page's browser test (first run only)"
export DEBIAN_FRONTEND=noninteractive
{ apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium chromium-driver >/dev/null; } \
  || cannot "apt-get failed"
say "$("$CHROMIUM" --version 2>/dev/null || echo chromium) ready"
