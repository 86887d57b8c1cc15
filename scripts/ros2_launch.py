"""`ros2 launch <package> <file> [name:=value ...]` for the bundled ROS 2, which lacks ros2launch.

A real ROS 2 install has the `ros2 launch` verb and never runs this file; the `ros2` wrapper in
.venv/bin only falls back to it when `import ros2launch` fails.

Stopping. SIGINT (Ctrl-C) and SIGTERM (systemd, `docker stop`, CI runners, `make` passing on its own
SIGTERM) both shut the launch down cleanly: each node gets SIGINT, then SIGTERM after
`sigterm_timeout` (5 s), then SIGKILL after `sigkill_timeout` more (5 s); the launch exits when all
have. Left to itself, this launch version (ROS 2 Jazzy's launch 3.4) dies on SIGTERM at once with its
nodes left running, and on a SIGINT sent to it alone waits 5 s before it signals them (it assumes a
terminal sent the same SIGINT to the whole process group).
"""

import os
import signal
import sys

import launch.launch_service
from ament_index_python.packages import get_package_share_directory
from launch.actions import IncludeLaunchDescription
from launch.events import Shutdown
from launch.launch_description_sources import AnyLaunchDescriptionSource

from franka_server_ros2.process import stop_with_parent
from launch import LaunchDescription, LaunchService


def ctrl_c_reaches_the_nodes() -> bool:
    """Whether this process group is a terminal's foreground group: Ctrl-C there signals the nodes too."""
    try:
        fd = os.open("/dev/tty", os.O_RDONLY | os.O_NOCTTY)
    except OSError:  # no controlling terminal: systemd, docker, CI, a test harness, nohup
        return False
    try:
        return os.tcgetpgrp(fd) == os.getpgrp()
    except OSError:
        return False
    finally:
        os.close(fd)


def stop_cleanly_on_sigterm(service: LaunchService) -> None:
    """Make SIGTERM shut `service` down as a SIGINT sent to the launch alone does (nodes signalled, then
    escalation), instead of launch's own SIGTERM handling (cancel the run, orphan the nodes)."""
    signal_manager = launch.launch_service.AsyncSafeSignalManager
    running = False

    def on_sigterm(signum: int) -> None:  # in the launch's event loop
        if service.context.is_shutdown:
            return  # already stopping; the escalation to SIGTERM and SIGKILL is under way
        service.context.emit_event_sync(Shutdown(reason=f"{signal.Signals(signum).name} received", due_to_sigint=False))

    class SignalManager(signal_manager):
        def __enter__(self):
            nonlocal running
            manager = super().__enter__()
            running = True
            return manager

        def handle(self, signum, handler):
            if signum == signal.SIGTERM and handler is not None:
                handler = on_sigterm
            return super().handle(signum, handler)

    def python_handler(signum, frame):
        # launch's signal manager only hears signals that have a Python handler (this one: CPython then
        # writes the signal to the manager's wakeup fd); before the manager runs, nothing has started
        if not running:
            raise SystemExit(128 + signum)

    launch.launch_service.AsyncSafeSignalManager = SignalManager
    signal.signal(signal.SIGTERM, python_handler)


def main(argv: list[str]) -> int:
    positional = [a for a in argv if ":=" not in a and not a.startswith("-")]
    launch_args = [tuple(a.split(":=", 1)) for a in argv if ":=" in a]
    if len(positional) == 1 and os.path.isfile(positional[0]):
        path = positional[0]
    elif len(positional) == 2:
        package, name = positional
        path = os.path.join(get_package_share_directory(package), "launch", name)
    else:
        print("usage: ros2 launch <package> <launch file> [name:=value ...]", file=sys.stderr)
        return 2
    if not os.path.isfile(path):
        print(f"launch file not found: {path}", file=sys.stderr)
        return 2
    # noninteractive: a SIGINT is passed on to the nodes at once, unless a terminal already sent it to them
    service = LaunchService(argv=argv, noninteractive=not ctrl_c_reaches_the_nodes())
    stop_cleanly_on_sigterm(service)
    stop_with_parent(signal.SIGTERM)  # make, a shell or a test harness that dies stops the launch cleanly
    service.include_launch_description(
        LaunchDescription([IncludeLaunchDescription(AnyLaunchDescriptionSource(path), launch_arguments=launch_args)])
    )
    return service.run()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
