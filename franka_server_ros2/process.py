"""Process hygiene shared by the server and the simulation: a node never outlives its launch.

`ros2 launch` answers SIGTERM by exiting at once and leaves its nodes running (launch's own log says
"using SIGTERM can result in orphaned processes"); systemd, `docker stop` and CI runners send SIGTERM.
(The bundled launcher, scripts/ros2_launch.py, stops its nodes on SIGTERM; a real ROS 2's does not.)
With the parent-death signal set, the kernel sends each node SIGINT when the launch process ends for
any reason, even SIGKILL, and the node shuts down as on Ctrl-C: ports freed, shared memory released.
"""

from __future__ import annotations

import ctypes
import os
import signal

from rclpy.executors import Executor, SingleThreadedExecutor

PR_SET_PDEATHSIG = 1  # prctl option, linux/prctl.h


def stop_with_parent(sig: int = signal.SIGINT) -> None:
    """Ask the kernel for `sig` when the parent process dies (Linux; elsewhere nothing happens)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() == 1:  # the parent died before the call: nobody would send the signal
        os.kill(os.getpid(), sig)


def ignore_stop_signals() -> None:
    """From here on SIGINT and SIGTERM do nothing: a node already stopping finishes its clean-up although a
    second signal comes (Ctrl-C in a terminal and then the launch's SIGINT; systemd's SIGTERM to every
    process and then the launch's SIGINT). A clean-up that hangs still ends with the launch's SIGKILL."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


def make_executor() -> Executor:
    """rclpy's C++ EventsExecutor where this ROS 2 has it (far less CPU per message), else the plain one.

    For nodes whose callbacks never block (the server's: Flask threads wait on futures; the simulated
    controllers' commands), so that one thread is enough.
    """
    try:
        from rclpy.experimental import EventsExecutor
    except ImportError:
        return SingleThreadedExecutor()
    return EventsExecutor()
