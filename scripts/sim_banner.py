"""The banner `make sim` prints before the launch: where the world's servers are, from the world itself.

    python scripts/sim_banner.py task:=ram_insertion        # sim.launch.py's arguments; others are ignored

The world is resolved as sim.launch.py resolves it (its argument defaults, task:= or world:=, the task file and the
one-robot overrides host:=, port:=, namespace:=), so every address printed is one a server of that world binds:
ram_insertion's is http://127.0.0.2:5000/, object_handover's two are 127.0.0.1 and 127.0.0.2. Where the world
cannot be resolved (a bad argument), the banner says so in one line and the launch then says why.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
RULE = "-" * 98


def sim_launch() -> ModuleType:
    """launch/sim.launch.py as a module (its ARGUMENTS, task_file, _task and WORLD_OVERRIDES)."""
    spec = importlib.util.spec_from_file_location("sim_launch", ROOT / "launch" / "sim.launch.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def launch_arguments(argv: list[str]) -> dict[str, str]:
    """The `name:=value` words of a command line (the rest, `ros2 launch ...`, is not the banner's)."""
    return dict(word.split(":=", 1) for word in argv if ":=" in word)


def world_of(argv: list[str]):
    """The WorldSpec that sim.launch.py starts for these arguments (ValueError where it would refuse them)."""
    from isaac_franka_bridge.world import load_world

    launch = sim_launch()
    arg = {name: default for name, (default, _) in launch.ARGUMENTS.items()} | launch_arguments(argv)
    overrides = {name: arg.get(name, "") for name in ("namespace", "host", "port", "cameras_config")}
    return load_world(launch.task_file(str(ROOT), launch._task(arg)), **overrides), arg


def banner(argv: list[str]) -> str:
    try:
        world, arg = world_of(argv)
    except (ValueError, OSError, ImportError) as exc:
        return f"{RULE}\n Simulated Franka world: cannot tell its addresses ({exc}); the launch says more below\n{RULE}"
    robots = world.robots
    first = robots[0]
    url = first.url.rstrip("/")
    names = [c.name for c in world.cameras()]
    topic = (
        f"/{first.namespace}/franka_state_controller/O_T_EE" if first.namespace else "/franka_state_controller/O_T_EE"
    )
    servers = [f"{r.url}{'  (' + r.namespace + ')' if r.namespace else ''}" for r in robots]
    lines = [
        RULE,
        f" Simulated Franka world '{world.task.name}' ({arg['backend']}) + one franka_server_ros2 per robot",
        f"   Servers:  {servers[0]}",
        *(f"             {s}" for s in servers[1:]),
        f"   Teleop:   {url}/teleop in a browser: cameras, state, keys as a SpaceMouse",
        f"   HTTP:     curl -X POST {url}/getstate",
        f"   ROS 2:    scripts/run.sh ros2 topic echo {topic}",
        f"   Cameras:  {', '.join(names) if names else 'none'}" + (f"  (curl {url}/cameras)" if names else ""),
        "   Docs:     README.md, docs/routes.md, docs/ros_interfaces.md, docs/troubleshooting.md",
        "   Stop:     Ctrl-C (or SIGTERM): every node stops",
        RULE,
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    print(banner(sys.argv[1:]), flush=True)
