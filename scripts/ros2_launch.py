"""`ros2 launch <package> <file> [name:=value ...]` for the bundled ROS 2, which lacks ros2launch.

A real ROS 2 install has the `ros2 launch` verb and never runs this file; the `ros2` wrapper in
.venv/bin only falls back to it when `import ros2launch` fails.
"""

import os
import signal
import sys

from ament_index_python.packages import get_package_share_directory
from launch.actions import IncludeLaunchDescription
from launch.launch_description_sources import AnyLaunchDescriptionSource

from franka_server_ros2.process import stop_with_parent
from launch import LaunchDescription, LaunchService


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
    stop_with_parent(signal.SIGINT)  # make, a shell or a test harness that dies stops the launch cleanly
    service = LaunchService(argv=argv)
    service.include_launch_description(
        LaunchDescription([IncludeLaunchDescription(AnyLaunchDescriptionSource(path), launch_arguments=launch_args)])
    )
    return service.run()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
