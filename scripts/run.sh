#!/usr/bin/env bash
# Runs a command inside the development environment (bootstrapping it first if needed):
#   scripts/run.sh ros2 topic echo /franka_state_controller/O_T_EE
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$ROOT/scripts/bootstrap.sh"
set +u  # the ROS setup scripts read unset variables
# shellcheck disable=SC1091
source "$ROOT/.venv/ros_env.sh"
# shellcheck disable=SC1091
source "$ROOT/install/local_setup.bash"
export PATH="$ROOT/.venv/bin:$PATH"
export MUJOCO_GL="${MUJOCO_GL:-egl}"
exec "$@"
