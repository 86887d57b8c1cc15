#!/usr/bin/env bash
# The real check of the Isaac Sim backend, on a host with an NVIDIA RTX-class GPU and its driver:
#   scripts/gpu_check.sh            (from anywhere; it works in the repository root)
# 1. builds (once) .venv-isaac: a Python 3.12 venv with Isaac Sim 6.2 from PyPI (several GB),
# 2. prints nvidia-smi,
# 3. runs scripts/isaac_smoke.py: the backend under the shared controller and loop (exit 0 = passed).
# Needs PyPI (NVIDIA's own index is not used) and, for the Franka asset, Isaac Sim's asset root:
# offline, set ISAACSIM_ASSET_ROOT to a local asset pack or ISAAC_FRANKA_USD to a local franka.usd.
# Running Isaac Sim accepts the NVIDIA Omniverse EULA (https://docs.omniverse.nvidia.com/eula);
# this script sets OMNI_KIT_ACCEPT_EULA=YES unless it is already set.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=python312.sh
source "$ROOT/scripts/python312.sh"
cd "$ROOT"
VENV="$ROOT/.venv-isaac"
ISAACSIM="isaacsim[all,extscache]==6.2.0.0"

say() { printf '\033[1;34m[gpu_check]\033[0m %s\n' "$*"; }
die() { printf '\033[1;31m[gpu_check] error:\033[0m %s\n' "$*" >&2; exit 1; }

# importing isaacsim asks for the EULA unless this is set (see the header)
export OMNI_KIT_ACCEPT_EULA="${OMNI_KIT_ACCEPT_EULA:-YES}"

# ---------------------------------------------------------------- 1. the GPU
command -v nvidia-smi >/dev/null 2>&1 || die "nvidia-smi not found: Isaac Sim needs an NVIDIA GPU and driver (use backend:=mujoco on the CPU)"
say "GPU:"
nvidia-smi || die "nvidia-smi failed: no usable NVIDIA driver"

# ---------------------------------------------------------------- 2. Isaac Sim in .venv-isaac
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'from isaacsim import SimulationApp' >/dev/null 2>&1; then
  PY="$(find_python312)"
  [ -n "$PY" ] || die "no Python 3.12 with venv/ensurepip found (Isaac Sim 6 wheels are cp312 only); install python3.12-venv or 'pyenv install 3.12'"
  say "creating $VENV on $("$PY" --version) ($PY)"
  rm -rf "$VENV"
  "$PY" -m venv "$VENV"
  "$VENV/bin/python" -m pip install --disable-pip-version-check -q --upgrade pip \
    || die "pip could not reach PyPI"
  say "installing $ISAACSIM from PyPI (several GB, first run only)"
  "$VENV/bin/python" -m pip install --disable-pip-version-check "$ISAACSIM" numpy \
    || die "pip failed to install $ISAACSIM (it needs Python 3.12, glibc >= 2.35, x86_64 and PyPI)"
fi
"$VENV/bin/python" -c 'from isaacsim import SimulationApp' || die "isaacsim is installed in $VENV but does not import"

# ---------------------------------------------------------------- 3. the smoke test
export PYTHONUNBUFFERED=1
say "running scripts/isaac_smoke.py"
exec "$VENV/bin/python" "$ROOT/scripts/isaac_smoke.py" "$@"
