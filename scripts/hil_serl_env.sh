#!/usr/bin/env bash
# Builds (once, then cached) .venv-hil-serl/: HIL-SERL's own Python environment, in which the tests (and the
# pipeline runner) run HIL-SERL's code unaltered, from its checkout.
#   HIL_SERL_DIR    HIL-SERL's checkout (default ../shared/hil-serl beside this repository). Tested at the commit
#                   HIL_SERL_TESTED_COMMIT below: a checkout at another commit (git's HEAD, or the commit a copy's
#                   SOURCE.md names) gets a warning naming it; one whose commit cannot be told gets one too.
#   AGENTLACE_DIR   agentlace's checkout. Without it: ../shared/agentlace beside this repository where it exists,
#                   else pip installs it from the git URL serl_launcher's setup.py names (needs git and github.com).
#                   Which one was used is said on every run.
#   HIL_SERL_JAX    JAX's variant: cpu or cuda12 (from PyPI; not yet tried on a GPU); default: cuda12 where
#                   `nvidia-smi -L` lists a GPU, else cpu
#   HIL_SERL_VENV   where to build it (default .venv-hil-serl/ in this repository)
# It holds: Python 3.11 (HIL-SERL's docs use 3.10); scripts/hil_serl_requirements.txt, every version pinned
# (JAX 0.4.24 on the CPU, flax 0.8.1, optax, distrax, tensorflow-cpu, gymnasium 0.29.1, opencv-python (GUI),
# wandb, ...; why each, in that file) and tf-keras; this repository's clients/virtual_realsense, virtual_spacemouse
# and scripted_expert, pip-installed (not editable: their .pth hooks need a real install) and reinstalled when
# they change. HIL-SERL's serl_launcher and serl_robot_infra (franka_env has no __init__.py) and a checkout of
# agentlace are not installed: hil_serl.pth puts them on sys.path and turns bytecode writing off, so that nothing
# is written into them. Re-running it is cheap (0.1 s): each step is skipped while its inputs are unchanged (the
# pinned packages are rebuilt only when the requirements, the JAX variant, the Python or RECIPE below change, not
# when this script's other lines do).
# Measured here (2 CPU cores, the other one busy; 2026-11-25): a fresh build took 56-85 s (four runs, pip's
# cache empty or warm); the venv is 2.1 GB (tensorflow 0.9 GB of it, jaxlib 0.3 GB). In it,
# `python -c "import jax, flax, optax; from serl_launcher.agents.continuous.sac import SACAgent"` works (4.6 s), and
# from HIL-SERL's examples/ the configs of ram_insertion, usb_pickup_insertion, object_handover and egg_flip import
# (`python -c "from experiments.ram_insertion.config import TrainConfig"`), as do record_demos, record_success_fail,
# train_reward_classifier and train_rlpd, with FRANKA_SIM_CAMERAS=1 FRANKA_SIM_SPACEMOUSE=1 FRANKA_SIM_KEYS=1
# (their imports of pyrealsense2, easyhid and pynput need the stand-ins; ram_insertion's RAMEnv imports pynput).
# A SAC pixel agent's update, the reward classifier and a flax checkpoint's save and restore ran too.
# OpenCV is the GUI build: with a config's DISPLAY_IMAGE = True (ram_insertion, usb_pickup_insertion) FrankaEnv's
# image-display thread calls cv2.imshow, which the headless build lacks (the thread died at its first frame and
# its queue then grew by every step's images); it needs an X display (scripts/hil_serl.py starts an Xvfb).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${HIL_SERL_VENV:-$ROOT/.venv-hil-serl}"
# the commits this repository was tested with (README's versions table names the same)
HIL_SERL_TESTED_COMMIT=5d02aed700202c34d120224ae2c8da6795223b0e
AGENTLACE_TESTED_URL="git+https://github.com/youliangtan/agentlace.git@cf2c337c5e3694cdbfc14831b239bd657bc4894d"
RECIPE=2         # bump when the way the pinned packages are installed changes (it rebuilds them)
TF_KERAS=2.15.1
NEEDED_GB=3      # the venv is 2.1 GB; pip's downloads and unpacking need some room beside it
HIL_SERL_DIR="${HIL_SERL_DIR:-$ROOT/../shared/hil-serl}"
if [ -z "${HIL_SERL_JAX:-}" ]; then
  HIL_SERL_JAX=cpu
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then HIL_SERL_JAX=cuda12; fi
fi
CLIENTS=(virtual_realsense virtual_spacemouse scripted_expert)

say() { printf '\033[1;34m[hil-serl-env]\033[0m %s\n' "$*"; }
warn() { printf '\033[1;33m[hil-serl-env] warning:\033[0m %s\n' "$*" >&2; }
die() { printf '\033[1;31m[hil-serl-env] error:\033[0m %s\n' "$*" >&2; exit 1; }

[ -d "$HIL_SERL_DIR/serl_launcher/serl_launcher" ] && [ -d "$HIL_SERL_DIR/serl_robot_infra/franka_env" ] \
  || die "no HIL-SERL checkout at $HIL_SERL_DIR: set HIL_SERL_DIR to your clone of github.com/rail-berkeley/hil-serl" \
         "(tested at ${HIL_SERL_TESTED_COMMIT:0:7}), or put one at ../shared/hil-serl beside this repository"
case "$HIL_SERL_JAX" in
  cpu) JAX_PKGS=("jax[cpu]") ;;
  cuda12) JAX_PKGS=("jax[cuda12]" "nvidia-cudnn-cu12>=8.9,<9") ;;  # JAX 0.4.24's CUDA plugin wants cuDNN 8.9
  *) die "HIL_SERL_JAX=$HIL_SERL_JAX: expected cpu or cuda12" ;;
esac
HIL_SERL_DIR="$(cd "$HIL_SERL_DIR" && pwd -P)"
unset PYTHONPATH PYTHONHOME  # scripts/run.sh's (ROS 2's, Python 3.12's) would leak into pip and the venv

# HIL-SERL's commit: git's HEAD where HIL_SERL_DIR is the top of a git checkout, else the commit that a copy of
# the sources names in its SOURCE.md, else '' (unknown)
hil_serl_commit() {
  local top
  if top="$(git -C "$HIL_SERL_DIR" rev-parse --show-toplevel 2>/dev/null)" \
     && [ "$(cd "$top" && pwd -P)" = "$HIL_SERL_DIR" ]; then
    git -C "$HIL_SERL_DIR" rev-parse HEAD
  else
    grep -ohE '\b[0-9a-f]{40}\b' "$HIL_SERL_DIR/SOURCE.md" 2>/dev/null | head -n 1 || true
  fi
}
COMMIT="$(hil_serl_commit)"
if [ -z "$COMMIT" ]; then
  warn "cannot tell which commit of HIL-SERL is at $HIL_SERL_DIR (not a git checkout);" \
       "this repository was tested with commit $HIL_SERL_TESTED_COMMIT"
elif [ "$COMMIT" != "$HIL_SERL_TESTED_COMMIT" ]; then
  warn "HIL-SERL at $HIL_SERL_DIR is at commit ${COMMIT:0:12}, not $HIL_SERL_TESTED_COMMIT, the commit this" \
       "repository was tested with: its scripts and configs may differ (git -C $HIL_SERL_DIR checkout" \
       "${HIL_SERL_TESTED_COMMIT:0:7}; docs/troubleshooting.md)"
fi

# agentlace: AGENTLACE_DIR, else ../shared/agentlace, else pip from the git URL serl_launcher's setup.py pins
AGENTLACE_URL="$(grep -ohE 'git\+https://github\.com/youliangtan/agentlace(\.git)?@[0-9a-f]+' \
                 "$HIL_SERL_DIR/serl_launcher/setup.py" 2>/dev/null | head -n 1 || true)"
AGENTLACE_URL="${AGENTLACE_URL:-$AGENTLACE_TESTED_URL}"
if [ -n "${AGENTLACE_DIR:-}" ]; then
  [ -d "$AGENTLACE_DIR/agentlace" ] \
    || die "AGENTLACE_DIR=$AGENTLACE_DIR has no agentlace/ package in it (a clone of github.com/youliangtan/agentlace)"
  AGENTLACE_DIR="$(cd "$AGENTLACE_DIR" && pwd -P)"
  AGENTLACE_FROM="$AGENTLACE_DIR (AGENTLACE_DIR)"
elif [ -d "$ROOT/../shared/agentlace/agentlace" ]; then
  AGENTLACE_DIR="$(cd "$ROOT/../shared/agentlace" && pwd -P)"
  AGENTLACE_FROM="$AGENTLACE_DIR (../shared/agentlace beside this repository; AGENTLACE_DIR unset)"
else
  AGENTLACE_DIR=""
  AGENTLACE_FROM="pip install agentlace@$AGENTLACE_URL (serl_launcher's setup.py; no AGENTLACE_DIR, no ../shared/agentlace)"
fi

# Python 3.11 (HIL-SERL's docs use 3.10; 3.11 runs it): pyenv's newest 3.11, else python3.11 on PATH
find_python311() {
  local candidate pyenv_py
  pyenv_py="$(command -v pyenv >/dev/null 2>&1 && ls -d "$(pyenv root)"/versions/3.11*/bin/python3.11 2>/dev/null \
              | sort -V | tail -n 1)" || true
  for candidate in "$pyenv_py" python3.11; do
    if [ -n "$candidate" ] \
       && "$candidate" -c 'import sys, venv, ensurepip; assert sys.version_info[:2] == (3, 11)' >/dev/null 2>&1; then
      command -v "$candidate"
      return 0
    fi
  done
}

# one build at a time (make test, and tests that call this script)
if [ -n "${HIL_SERL_VENV:-}" ]; then exec 9>"$VENV.lock"; else exec 9>"$ROOT/.hil_serl_env.lock"; fi
flock 9

# pip without -q: each package as it comes ("12/98 collecting flax==0.8.1"; downloads with their size), the
# install and its time; errors and warnings as pip says them. Minus the noise of this machine's absent index
# locations and of the egg-info in HIL-SERL's serl_robot_infra (on sys.path through hil_serl.pth).
pip_install() {
  local total="$1" started="$SECONDS"
  shift
  "$VENV/bin/python" -m pip --disable-pip-version-check install --progress-bar off "$@" 2>&1 \
    | awk -v total="$total" '
        /is ignored: it is neither a file nor a directory|serl-robot-infra|serl_robot_infra\.egg-info/ { next }
        /^Collecting / { n++; printf "  %3d/%s collecting %s\n", n, total, $2; fflush(); next }
        /^ *Downloading / { sub(/^ *Downloading /, ""); printf "          downloading %s\n", $0; fflush(); next }
        /^Installing collected packages/ {
          if (n) printf "  installing %d packages into the venv ...\n", n; fflush(); next }
        /^Successfully installed/ { next }
        /^ *(Using cached|Obtaining|Requirement already|Preparing|Building|Created wheel|Stored in|Processing|Getting|Installing build|Attempting|Found existing|Uninstalling|Successfully uninstalled|Not uninstalling|Can.t uninstall|Running command|Resolved|Looking in|Successfully built)/ { next }
        { print; fflush() }'
  local status="${PIPESTATUS[0]}"
  [ "$status" != 0 ] || say "  done in $((SECONDS - started)) s"
  return "$status"
}

# whether a venv without this script's stamp (.inputs) holds the pinned packages already: one that an earlier
# version of this script built (its stamp was .env-<hash of the whole script>, so that any edit of the script
# rebuilt 2 GB), or one whose packages come from another such venv (tests/test_hil_serl_env.py)
built_as_pinned() {
  [ -x "$VENV/bin/python" ] || return 1
  "$VENV/bin/python" - "$ROOT/scripts/hil_serl_requirements.txt" "$HIL_SERL_JAX" "$("$PY" -c 'import sys; print(sys.version)')" \
    "$TF_KERAS" >/dev/null 2>&1 <<'CHECK'
import re
import sys
from importlib import metadata

requirements, jax, version, tf_keras = sys.argv[1:]
norm = lambda name: re.sub(r"[-_.]+", "-", name).lower()  # noqa: E731
installed = {}
for dist in metadata.distributions():
    if dist.metadata["Name"]:
        installed.setdefault(norm(dist.metadata["Name"]), dist.version)
pins = [line.split("#")[0].strip().partition("==") for line in open(requirements)]
assert all(installed.get(norm(name.split("[")[0])) == pin for name, _, pin in pins if name)
assert installed.get("tf-keras") == tf_keras and sys.version == version
assert any(name.startswith("jax-cuda") for name in installed) == (jax == "cuda12")
CHECK
}

# ---------------------------------------------------------------- 1. the venv and the pinned packages
PY="$(find_python311)"
[ -n "$PY" ] || die "no Python 3.11 found (HIL-SERL's environment needs it): 'pyenv install 3.11', or your" \
                    "distribution's python3.11 and python3.11-venv on PATH (docs/troubleshooting.md)"
INPUTS="recipe $RECIPE; requirements $(sha256sum < "$ROOT/scripts/hil_serl_requirements.txt" | cut -c1-16);"
INPUTS="$INPUTS jax $HIL_SERL_JAX; tf-keras $TF_KERAS; python $PY ($("$PY" --version 2>&1))"
if [ "$(cat "$VENV/.inputs" 2>/dev/null)" != "$INPUTS" ]; then
  if [ ! -f "$VENV/.inputs" ] && built_as_pinned; then
    say "keeping $VENV: its packages are the pinned ones"
  else
    rm -rf "$VENV"
    mkdir -p "$(dirname "$VENV")"
    FREE_GB="$(df -Pk "$(dirname "$VENV")" | awk 'NR == 2 { print int($4 / 1048576) }')"
    [ "$FREE_GB" -ge "$NEEDED_GB" ] \
      || die "$(dirname "$VENV") has $FREE_GB GB free; HIL-SERL's environment needs about $NEEDED_GB (2.1 GB once built)"
    say "creating $VENV on $("$PY" --version) ($PY)"
    "$PY" -m venv "$VENV"
    say "installing HIL-SERL's dependencies: about 2 GB (JAX $HIL_SERL_JAX, flax, tensorflow-cpu, ...);" \
        "first run only, about a minute from pip's cache, longer while it downloads"
    pip_install "$(grep -cE '^[A-Za-z]' "$ROOT/scripts/hil_serl_requirements.txt")" \
      -r "$ROOT/scripts/hil_serl_requirements.txt" "${JAX_PKGS[@]}" \
      || die "pip failed to install scripts/hil_serl_requirements.txt (no network?)"
    # tensorflow_probability wants tf-keras beside TF; tf-keras asks for `tensorflow`, here is tensorflow-cpu
    pip_install 1 --no-deps "tf-keras==$TF_KERAS" || die "pip failed to install tf-keras"
  fi
  rm -f "$VENV"/.env-*
  printf '%s\n' "$INPUTS" > "$VENV/.inputs"
fi

# ---------------------------------------------------------------- 2. HIL-SERL's code and agentlace
SHOWN="${COMMIT:0:7}"
say "HIL-SERL from $HIL_SERL_DIR (commit ${SHOWN:-unknown}); agentlace from $AGENTLACE_FROM"
if [ -z "$AGENTLACE_DIR" ]; then
  if [ "$(cat "$VENV/.agentlace-pip" 2>/dev/null)" != "$AGENTLACE_URL" ]; then
    command -v git >/dev/null || die "pip needs git to install agentlace from $AGENTLACE_URL: install git, or clone" \
                                     "agentlace where you can and set AGENTLACE_DIR"
    pip_install 1 --no-deps "agentlace@$AGENTLACE_URL" \
      || die "pip could not install agentlace from $AGENTLACE_URL (no access to github.com?): clone it where you can" \
             "and set AGENTLACE_DIR"
    printf '%s\n' "$AGENTLACE_URL" > "$VENV/.agentlace-pip"
  fi
elif [ -f "$VENV/.agentlace-pip" ]; then  # a pip-installed agentlace would shadow the checkout
  "$VENV/bin/python" -m pip --disable-pip-version-check uninstall -y -q agentlace || die "pip could not uninstall agentlace"
  rm -f "$VENV/.agentlace-pip"
fi
SITE="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
PTH="# HIL-SERL's code, unaltered, from its checkouts (scripts/hil_serl_env.sh); no bytecode written into them
$HIL_SERL_DIR/serl_launcher
$HIL_SERL_DIR/serl_robot_infra${AGENTLACE_DIR:+
$AGENTLACE_DIR}
import sys; sys.dont_write_bytecode = True"
if [ "$(cat "$SITE/hil_serl.pth" 2>/dev/null)" != "$PTH" ]; then
  printf '%s\n' "$PTH" > "$SITE/hil_serl.pth.new"
  mv -f "$SITE/hil_serl.pth.new" "$SITE/hil_serl.pth"
fi

# ---------------------------------------------------------------- 3. this repository's stand-ins and experts
CLIENTS_HASH="$(cd "$ROOT/clients" && find "${CLIENTS[@]}" -type f ! -path '*/build/*' ! -path '*.egg-info/*' \
                ! -path '*/__pycache__/*' | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-16)"
if [ ! -f "$VENV/.clients-$CLIENTS_HASH" ]; then
  say "installing ${CLIENTS[*]} (from clients/)"
  TMP="$(mktemp -d)"
  trap 'rm -rf "$TMP"' EXIT
  # from a clean copy: pip builds in the source tree, where a stale build/ would be shipped
  (cd "$ROOT/clients" && tar --exclude=build --exclude='*.egg-info' --exclude=__pycache__ -cf - "${CLIENTS[@]}") \
    | tar -xf - -C "$TMP"
  pip_install "${#CLIENTS[@]}" --no-deps --force-reinstall "${CLIENTS[@]/#/$TMP/}" || die "pip failed to install clients/"
  rm -f "$VENV"/.clients-*
  touch "$VENV/.clients-$CLIENTS_HASH"
fi

# ---------------------------------------------------------------- 4. whether it all imports (after any change)
OK_HASH="$(echo "$INPUTS $CLIENTS_HASH $PTH $(cat "$VENV/.agentlace-pip" 2>/dev/null)" | sha256sum | cut -c1-16)"
if [ ! -f "$VENV/.ok-$OK_HASH" ]; then
  say "checking that HIL-SERL's train_rlpd.py, its agents and the four example configs import"
  (cd "$HIL_SERL_DIR/examples" && FRANKA_SIM_CAMERAS=1 FRANKA_SIM_SPACEMOUSE=1 FRANKA_SIM_KEYS=1 "$VENV/bin/python" \
     -c "import jax, flax, optax; from serl_launcher.agents.continuous.sac import SACAgent; import train_rlpd" \
     >"$VENV/import-check.log" 2>&1) \
    || { tail -n 20 "$VENV/import-check.log" >&2; die "HIL-SERL's code does not import (log: $VENV/import-check.log)"; }
  rm -f "$VENV"/.ok-*
  touch "$VENV/.ok-$OK_HASH"
fi
