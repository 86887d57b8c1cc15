#!/usr/bin/env bash
# Debian's headless Chromium and its ChromeDriver, for the teleop page's test in a real browser
# (tests/test_teleop_page.py). `make test` runs this; it does nothing once both are there.
set -euo pipefail
say() { printf '\033[1;34m[browser]\033[0m %s\n' "$*"; }

CHROMIUM="${FRANKA_SIM_CHROMIUM:-/usr/bin/chromium}"
DRIVER="${FRANKA_SIM_CHROMEDRIVER:-/usr/bin/chromedriver}"
[ -x "$CHROMIUM" ] && [ -x "$DRIVER" ] && exit 0

if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  say "no $CHROMIUM / $DRIVER and no root apt-get to install them: the teleop page's browser test will fail;" \
      "install Debian's 'chromium' and 'chromium-driver' (or set FRANKA_SIM_CHROMIUM / FRANKA_SIM_CHROMEDRIVER)"
  exit 0
fi
say "installing Debian's chromium and chromium-driver for the teleop page's browser test (first run only)"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends chromium chromium-driver >/dev/null
say "$("$CHROMIUM" --version 2>/dev/null || echo chromium) ready"
