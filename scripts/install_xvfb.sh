#!/usr/bin/env bash
# Debian's Xvfb, the X server without a screen that scripts/hil_serl.py gives HIL-SERL's scripts on a host with
# no display: the ram_insertion and usb_pickup_insertion configs set DISPLAY_IMAGE, so FrankaEnv shows its
# cameras with cv2.imshow, which needs an X display. It does nothing once Xvfb is there.
#   scripts/install_xvfb.sh              exit 1 where it cannot be installed (no root, no apt-get, apt-get failed)
#   scripts/install_xvfb.sh --optional   there, one line saying what to install, and exit 0 (make test: the tests
#                                        that need a display then fail, they do not skip)
set -euo pipefail
say() { printf '\033[1;34m[xvfb]\033[0m %s\n' "$*"; }
OPTIONAL=0
[ "${1:-}" = --optional ] && OPTIONAL=1

command -v Xvfb >/dev/null && exit 0
cannot() {
  if [ "$OPTIONAL" = 1 ]; then
    say "no Xvfb ($1): the tests that run HIL-SERL's camera windows will fail; install Debian's or Ubuntu's" \
        "'xvfb' (sudo apt-get install xvfb) and run make test again"
    exit 0
  fi
  say "no Xvfb ($1): install Debian's or Ubuntu's 'xvfb' (sudo apt-get install xvfb), or run where DISPLAY is set"
  exit 1
}
command -v apt-get >/dev/null || cannot "and no apt-get to install it"
[ "$(id -u)" = 0 ] || cannot "and installing it needs root"
say "installing Debian's xvfb (an X server without a screen, for the configs' DISPLAY_IMAGE windows; first run only)"
export DEBIAN_FRONTEND=noninteractive
{ apt-get update -qq && apt-get install -y -qq --no-install-recommends xvfb >/dev/null; } || cannot "apt-get failed"
say "$(command -v Xvfb) ready"
