"""The franka_server_ros2 process: the rclpy node spins in a background executor, Flask serves in front.

ros2 run isaac_franka_bridge franka_server --ros-args -p host:=127.0.0.2 -p port:=5000
"""

from __future__ import annotations

import logging
import signal
import sys
import threading

import rclpy
from rclpy.exceptions import ParameterException
from rclpy.executors import ExternalShutdownException
from rclpy.signals import SignalHandlerOptions
from werkzeug.serving import WSGIRequestHandler, make_server

from . import access
from .app import create_app
from .process import ignore_stop_signals, make_executor, stop_with_parent
from .robot_client import FrankaRosClient

GIL_SWITCH_INTERVAL = 0.0005  # [s]


class KeepAliveHandler(WSGIRequestHandler):
    """HTTP/1.1 keep-alive: a client's requests.Session reuses one connection (no handshake per call)."""

    protocol_version = "HTTP/1.1"


def main(args: list[str] | None = None) -> None:
    # Ctrl-C and SIGTERM (launch, systemd) both end the HTTP loop; ROS shuts down after it
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    # hand the GIL between threads every 0.5 ms, not 5 ms: requests and commands wait on it
    sys.setswitchinterval(GIL_SWITCH_INTERVAL)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # even where the parent left SIGINT ignored
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    stop_with_parent()  # a launch killed by SIGTERM takes this server with it
    try:
        robot = FrankaRosClient()
        access_rule = access.declare_and_read(robot)  # who may use the server (access.py)
    except (ValueError, OSError, ParameterException) as exc:  # a bad parameter or camera file: say which
        rclpy.logging.get_logger("franka_server").fatal(f"cannot start: {exc}")
        rclpy.try_shutdown()
        raise SystemExit(1) from None
    except KeyboardInterrupt:  # stopped while starting (a launch shutting down): no traceback
        rclpy.try_shutdown()
        return
    host, port = robot.get_parameter("host").value, robot.get_parameter("port").value
    log = robot.get_logger()
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no access line per request at 10 Hz
    app = create_app(robot, robot.cameras, robot.settings)
    app.wsgi_app = access.AccessGuard(app.wsgi_app, access_rule, log.warn)  # checked before any route
    try:
        server = make_server(host, port, app, threaded=True, request_handler=KeepAliveHandler)
    except (OSError, SystemExit) as exc:  # the port is taken (werkzeug exits): say so, before any thread runs
        reason = exc if isinstance(exc, OSError) else "the address is taken or not available (see above)"
        log.fatal(f"cannot serve on http://{host}:{port}/: {reason}")
        robot.destroy_node()
        rclpy.try_shutdown()
        raise SystemExit(1) from exc
    executor = make_executor()
    executor.add_node(robot)
    spinner = threading.Thread(target=executor.spin, name="ros-executor", daemon=True)
    spinner.start()
    log.info(f"franka_server_ros2 serving the franka_server routes on http://{host}:{port}/")
    notice = access.binding_notice(host, port, access_rule)  # beyond loopback: an explicit choice, said here
    if notice is not None:
        getattr(log, notice[0])(notice[1])
    try:
        server.serve_forever()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        ignore_stop_signals()  # stopping: a second Ctrl-C or SIGTERM must not cut the clean-up short
        server.server_close()
        executor.shutdown()
        robot.destroy_node()
        rclpy.try_shutdown()


if __name__ == "__main__":
    main()
