#!/usr/bin/env bash
# Builds (once, then cached) the development environment that `make sim` and `make test` use:
#   .venv/            Python 3.12 venv with ROS 2 Jazzy (bundled in PyPI's isaacsim-ros2), MuJoCo,
#                     the Panda model (gym-hil), Flask, pytest; or, when a ROS 2 is already sourced
#                     (ROS_DISTRO set), a venv on top of that ROS 2's Python.
#   .venv/ros_env.sh  the environment variables that make the ROS 2 runtime usable.
#   install/          the colcon install space of this package (symlink-install).
# Re-running it is cheap: each step is skipped while its inputs are unchanged.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=python312.sh
source "$ROOT/scripts/python312.sh"
VENV="$ROOT/.venv"
ISAACSIM_ROS2="isaacsim-ros2==6.2.0.0"   # carries ROS 2 Jazzy: rclpy, messages, launch, ros2cli
MODEL_PKGS=("gym-hil==0.1.14" "dm-robotics-panda==0.4.8")  # Panda + Robotiq 2F-85; Franka hand (MJCF + meshes)

say() { printf '\033[1;34m[bootstrap]\033[0m %s\n' "$*"; }
die() { printf '\033[1;31m[bootstrap] error:\033[0m %s\n' "$*" >&2; exit 1; }

# one bootstrap at a time (two terminals, or tests starting while `make sim` installs)
exec 9>"$ROOT/.bootstrap.lock"
flock 9

hash_of() { cat "$@" 2>/dev/null | sha256sum | cut -c1-16; }

# a ROS 2 the user sourced; not the bundled one this environment exports (a `make` run from inside
# `make shell` or the tests must not take the bundle for a user's ROS 2 and rebuild .venv)
USER_ROS="${ROS_DISTRO:-}"
[ -n "${FRANKA_SIM_BUNDLED_ROS:-}" ] && USER_ROS=""

# ---------------------------------------------------------------- 1. the Python environment
ENV_HASH="$(hash_of "$ROOT/scripts/bootstrap.sh" "$ROOT/scripts/requirements.txt")-${USER_ROS:-bundled}"
if [ ! -f "$VENV/.env-$ENV_HASH" ]; then
  rm -rf "$VENV"
  if [ -n "$USER_ROS" ]; then
    say "ROS 2 '$USER_ROS' is already sourced: using it (no bundled ROS 2)"
    python3 -c 'import rclpy' 2>/dev/null || die "ROS_DISTRO=$ROS_DISTRO is set but python3 cannot import rclpy; source your ROS 2 setup.bash first"
    PY="$(command -v python3)"
    say "creating $VENV on $("$PY" --version) (with the system site-packages, for rclpy)"
    "$PY" -m venv --system-site-packages "$VENV"
  else
    PY="$(find_python312)"
    [ -n "$PY" ] || die "no Python 3.12 found (needed by the ROS 2 Jazzy bundled in $ISAACSIM_ROS2). Install one (e.g. 'pyenv install 3.12') or source a ROS 2 Humble/Jazzy before running make."
    say "creating $VENV on $("$PY" --version) ($PY)"
    "$PY" -m venv "$VENV"
  fi
  PIP=("$VENV/bin/python" -m pip --disable-pip-version-check)
  pip_install() {  # quiet pip, minus the noise of index locations this machine does not have
    "${PIP[@]}" install -q "$@" 2>&1 | grep -v "is ignored: it is neither a file nor a directory" >&2
    return "${PIPESTATUS[0]}"
  }
  say "installing Python packages (numpy, scipy, mujoco, flask, pytest, colcon, ...)"
  pip_install --upgrade pip setuptools wheel \
    || die "pip could not reach the package index (no network?)"
  pip_install -r "$ROOT/scripts/requirements.txt" \
    || die "pip failed to install scripts/requirements.txt (no network?)"
  say "installing the robot models (${MODEL_PKGS[*]}, assets only)"
  pip_install --no-deps "${MODEL_PKGS[@]}" || die "pip failed to install ${MODEL_PKGS[*]}"
  if [ -z "$USER_ROS" ]; then
    say "installing ROS 2 Jazzy from $ISAACSIM_ROS2 (one 133 MB wheel, first run only)"
    pip_install --no-deps "$ISAACSIM_ROS2" || die "pip failed to install $ISAACSIM_ROS2"
    J="$("$VENV/bin/python" -c 'import site; print(site.getsitepackages()[0])')/isaacsim/exts/isaacsim.ros2.core/jazzy"
    [ -d "$J/rclpy/rclpy" ] || die "the bundled ROS 2 was not found under $J"
    cat > "$VENV/ros_env.sh" <<ENV
# ROS 2 Jazzy bundled in $ISAACSIM_ROS2 (written by scripts/bootstrap.sh)
export ROS_DISTRO=jazzy ROS_VERSION=2 ROS_PYTHON_VERSION=3 FRANKA_SIM_BUNDLED_ROS=1
export RMW_IMPLEMENTATION=\${RMW_IMPLEMENTATION:-rmw_fastrtps_cpp}
export LD_LIBRARY_PATH="$J/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
export PYTHONPATH="$J/rclpy\${PYTHONPATH:+:\$PYTHONPATH}"
export AMENT_PREFIX_PATH="$J\${AMENT_PREFIX_PATH:+:\$AMENT_PREFIX_PATH}"
ENV
    # `ros2` for this environment: ros2cli from the bundle, plus a `launch` verb when the
    # bundle lacks ros2launch (a real ROS 2 install has it).
    cat > "$VENV/bin/ros2" <<'ROS2'
#!/usr/bin/env bash
if [ "${1:-}" = launch ] && ! python -c 'import ros2launch' 2>/dev/null; then
  shift; exec python "$(dirname "$0")/../../scripts/ros2_launch.py" "$@"
fi
exec python -c 'import sys; from ros2cli.cli import main; sys.exit(main())' "$@"
ROS2
    chmod +x "$VENV/bin/ros2"
  else
    echo "# ROS 2 '$USER_ROS' sourced by the user" > "$VENV/ros_env.sh"
  fi
  touch "$VENV/COLCON_IGNORE" "$VENV/.env-$ENV_HASH"
  say "Python environment ready"
fi

# ---------------------------------------------------------------- 2. the colcon build
BUILD_HASH="$(hash_of "$ROOT/package.xml" "$ROOT/setup.py" "$ROOT/setup.cfg" "$VENV/.env-$ENV_HASH"; \
              cd "$ROOT" && ls -R launch config resource 2>/dev/null | sha256sum | cut -c1-16)"
if [ ! -f "$ROOT/install/.build-$BUILD_HASH" ]; then
  say "building the ROS 2 package with colcon (symlink-install)"
  (
    cd "$ROOT"
    # shellcheck disable=SC1091
    source "$VENV/ros_env.sh"
    export PATH="$VENV/bin:$PATH"
    rm -rf build install log
    colcon --log-base log build --symlink-install --base-paths . --event-handlers console_direct- \
      > "$ROOT/.venv/colcon.log" 2>&1 || { tail -n 40 "$ROOT/.venv/colcon.log" >&2; die "colcon build failed (log: .venv/colcon.log)"; }
  )
  touch "$ROOT/install/.build-$BUILD_HASH"
  say "package built into install/"
fi
