#!/usr/bin/env bash
# Debian's Xvfb, the X server without a screen that scripts/hil_serl.py gives HIL-SERL's scripts on a host with
# no display: the ram_insertion and usb_pickup_insertion configs set DISPLAY_IMAGE, so FrankaEnv shows its
# cameras with cv2.imshow, which needs an X display. It does nothing once Xvfb is there.
set -euo pipefail
say() { printf '\033[1;34m[xvfb]\033[0m %s\n' "$*"; }

command -v Xvfb >/dev/null && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  say "no Xvfb and no root apt-get to install it: install Debian's 'xvfb' (or run where DISPLAY is set)"
  exit 1
fi
say "installing Debian's xvfb (an X server without a screen, for the configs' DISPLAY_IMAGE windows; first run only)"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends xvfb >/dev/null
say "$(command -v Xvfb) ready"
