#!/usr/bin/env bash
# Builds (once, then cached) .venv-hil-serl/: HIL-SERL's own Python environment, in which the tests (and the
# pipeline runner) run HIL-SERL's code unaltered, from its checkout.
#   HIL_SERL_DIR    HIL-SERL's checkout (default ../shared/hil-serl beside this repository)
#   AGENTLACE_DIR   agentlace at the commit serl_launcher pins (default ../shared/agentlace)
#   HIL_SERL_JAX    JAX's variant: cpu or cuda12 (from PyPI; not yet tried on a GPU); default: cuda12 where
#                   `nvidia-smi -L` lists a GPU, else cpu
# It holds: Python 3.11 (HIL-SERL's docs use 3.10); scripts/hil_serl_requirements.txt, every version pinned
# (JAX 0.4.24 on the CPU, flax 0.8.1, optax, distrax, tensorflow-cpu, gymnasium 0.29.1, opencv-python (GUI),
# wandb, ...; why each, in that file) and tf-keras; this repository's clients/virtual_realsense, virtual_spacemouse
# and scripted_expert, pip-installed (not editable: their .pth hooks need a real install) and reinstalled when
# they change. HIL-SERL's serl_launcher and serl_robot_infra (franka_env has no __init__.py) and agentlace are
# not installed: hil_serl.pth puts the checkouts on sys.path and turns bytecode writing off, so that nothing is
# written into them. Re-running it is cheap (0.1 s): each step is skipped while its inputs are unchanged.
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
VENV="$ROOT/.venv-hil-serl"
HIL_SERL_DIR="${HIL_SERL_DIR:-$ROOT/../shared/hil-serl}"
AGENTLACE_DIR="${AGENTLACE_DIR:-$ROOT/../shared/agentlace}"
if [ -z "${HIL_SERL_JAX:-}" ]; then
  HIL_SERL_JAX=cpu
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then HIL_SERL_JAX=cuda12; fi
fi
CLIENTS=(virtual_realsense virtual_spacemouse scripted_expert)

say() { printf '\033[1;34m[hil-serl-env]\033[0m %s\n' "$*"; }
die() { printf '\033[1;31m[hil-serl-env] error:\033[0m %s\n' "$*" >&2; exit 1; }

[ -d "$HIL_SERL_DIR/serl_launcher/serl_launcher" ] && [ -d "$HIL_SERL_DIR/serl_robot_infra/franka_env" ] \
  || die "no HIL-SERL checkout at $HIL_SERL_DIR (../shared/hil-serl beside this repository, or set HIL_SERL_DIR)"
[ -d "$AGENTLACE_DIR/agentlace" ] \
  || die "no agentlace checkout at $AGENTLACE_DIR (../shared/agentlace beside this repository, or set AGENTLACE_DIR)"
case "$HIL_SERL_JAX" in
  cpu) JAX_PKGS=("jax[cpu]") ;;
  cuda12) JAX_PKGS=("jax[cuda12]" "nvidia-cudnn-cu12>=8.9,<9") ;;  # JAX 0.4.24's CUDA plugin wants cuDNN 8.9
  *) die "HIL_SERL_JAX=$HIL_SERL_JAX: expected cpu or cuda12" ;;
esac
HIL_SERL_DIR="$(cd "$HIL_SERL_DIR" && pwd -P)"
AGENTLACE_DIR="$(cd "$AGENTLACE_DIR" && pwd -P)"
unset PYTHONPATH PYTHONHOME  # scripts/run.sh's (ROS 2's, Python 3.12's) would leak into pip and the venv

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
exec 9>"$ROOT/.hil_serl_env.lock"
flock 9

# quiet pip, minus the noise of this machine's absent index locations and of the egg-info in HIL-SERL's
# serl_robot_infra (on sys.path through hil_serl.pth)
NOISE=(-e "is ignored: it is neither a file nor a directory" -e "serl-robot-infra" -e "serl_robot_infra.egg-info")
pip_install() {
  "$VENV/bin/python" -m pip --disable-pip-version-check install -q "$@" 2>&1 | { grep -v "${NOISE[@]}" || true; } >&2
  return "${PIPESTATUS[0]}"
}

# ---------------------------------------------------------------- 1. the venv and the pinned packages
PY="$(find_python311)"
[ -n "$PY" ] || die "no Python 3.11 found (HIL-SERL's environment needs it): 'pyenv install 3.11' or python3.11 on PATH"
ENV_HASH="$( (cat "$ROOT/scripts/hil_serl_env.sh" "$ROOT/scripts/hil_serl_requirements.txt"
              echo "$HIL_SERL_JAX $PY"; "$PY" --version) | sha256sum | cut -c1-16)"
if [ ! -f "$VENV/.env-$ENV_HASH" ]; then
  rm -rf "$VENV"
  say "creating $VENV on $("$PY" --version) ($PY)"
  "$PY" -m venv "$VENV"
  say "installing HIL-SERL's dependencies (JAX $HIL_SERL_JAX, flax, tensorflow-cpu, ...; about 2 GB, first run only)"
  pip_install -r "$ROOT/scripts/hil_serl_requirements.txt" "${JAX_PKGS[@]}" \
    || die "pip failed to install scripts/hil_serl_requirements.txt (no network?)"
  # tensorflow_probability wants tf-keras beside TF; tf-keras asks for `tensorflow`, here is tensorflow-cpu
  pip_install --no-deps tf-keras==2.15.1 || die "pip failed to install tf-keras"
  touch "$VENV/.env-$ENV_HASH"
fi

# ---------------------------------------------------------------- 2. HIL-SERL's code and agentlace, from the checkouts
SITE="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
PTH="# HIL-SERL's code, unaltered, from its checkouts (scripts/hil_serl_env.sh); no bytecode written into them
$HIL_SERL_DIR/serl_launcher
$HIL_SERL_DIR/serl_robot_infra
$AGENTLACE_DIR
import sys; sys.dont_write_bytecode = True"
[ "$(cat "$SITE/hil_serl.pth" 2>/dev/null)" = "$PTH" ] || printf '%s\n' "$PTH" > "$SITE/hil_serl.pth"

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
  pip_install --no-deps --force-reinstall "${CLIENTS[@]/#/$TMP/}" || die "pip failed to install clients/"
  rm -f "$VENV"/.clients-*
  touch "$VENV/.clients-$CLIENTS_HASH"
fi

# ---------------------------------------------------------------- 4. whether it all imports (after any change)
OK_HASH="$(echo "$ENV_HASH $CLIENTS_HASH $PTH" | sha256sum | cut -c1-16)"
if [ ! -f "$VENV/.ok-$OK_HASH" ]; then
  say "checking that HIL-SERL's train_rlpd.py, its agents and the four example configs import"
  (cd "$HIL_SERL_DIR/examples" && FRANKA_SIM_CAMERAS=1 FRANKA_SIM_SPACEMOUSE=1 FRANKA_SIM_KEYS=1 "$VENV/bin/python" \
     -c "import jax, flax, optax; from serl_launcher.agents.continuous.sac import SACAgent; import train_rlpd" \
     >"$VENV/import-check.log" 2>&1) \
    || { tail -n 20 "$VENV/import-check.log" >&2; die "HIL-SERL's code does not import (log: $VENV/import-check.log)"; }
  rm -f "$VENV"/.ok-*
  touch "$VENV/.ok-$OK_HASH"
fi
