"""Stopping: Ctrl-C (SIGINT) or SIGTERM to the launch, or to `make sim`, stops every node it started
and frees the server's port. SIGTERM is what systemd, `docker stop` and CI runners send; `ros2 launch`
itself exits on it without stopping its nodes, so each node stops with its parent (process.py)."""

from __future__ import annotations

import os
import signal
import socket

import psutil
import pytest
from harness import STARTUP_TIMEOUT, Process

from conftest import Robot, answering, free_port, launch_sim, other_domain, wait_until

ROOT = os.path.join(os.path.dirname(__file__), "..")


def port_free(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def stop_and_check(process: Process, target_pid: int, sig: int, port: int) -> None:
    """Send `sig` to `target_pid` only (not its process group) and check nothing of the launch is left."""
    robot = Robot(f"http://127.0.0.1:{port}/")
    try:
        assert wait_until(lambda: answering(robot.url) or not process.alive(), STARTUP_TIMEOUT, 0.25), process.output()
        started = psutil.Process(process.popen.pid).children(recursive=True)
        commands = " ".join(" ".join(p.cmdline()) for p in started)
        assert "sim_bridge" in commands and "franka_server" in commands, commands
        os.kill(target_pid, sig)
        gone, alive = psutil.wait_procs(started, timeout=20)
        assert not alive, f"left running after {signal.Signals(sig).name}: {[p.cmdline()[:2] for p in alive]}"
        assert wait_until(lambda: port_free(port), 5.0), f"port {port} still taken"
    finally:
        process.stop(signal.SIGKILL)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_the_launch_stops_every_node_and_frees_the_port(sig):
    port = free_port()
    process = launch_sim(port, env=other_domain())
    stop_and_check(process, process.popen.pid, sig, port)


def test_sigterm_to_make_sim_stops_everything():
    """As the README runs it: `make sim`, then SIGTERM to make's process only."""
    port = free_port()
    process = Process(
        ["make", "-C", ROOT, "sim", f"ARGS=port:={port} cameras_config:=none"], "make-sim", env=other_domain()
    )
    stop_and_check(process, process.popen.pid, signal.SIGTERM, port)


def test_nothing_is_left_when_the_launch_is_killed_outright():
    """Even SIGKILL (nothing can be handled) leaves no node: the kernel tells them their parent died."""
    port = free_port()
    process = launch_sim(port, env=other_domain())
    stop_and_check(process, process.popen.pid, signal.SIGKILL, port)
