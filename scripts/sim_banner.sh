#!/usr/bin/env bash
# Says where to look (scripts/sim_banner.py: the servers of the world the arguments name), then runs the given
# command (the launch of the simulation):  scripts/sim_banner.sh ros2 launch isaac_franka_bridge sim.launch.py ARGS
python "$(dirname "${BASH_SOURCE[0]}")/sim_banner.py" "$@" || true
exec "$@"
