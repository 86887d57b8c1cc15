"""Stopping: Ctrl-C (SIGINT) or SIGTERM to the launch, to its process group, or to `make sim` stops every
node it started and frees the server's port, and the launch exits after them. SIGTERM is what systemd,
`docker stop` and CI runners send. The bundled launcher (scripts/ros2_launch.py) passes a SIGTERM on as
a clean shutdown; each node also stops with its parent (franka_server_ros2/process.py), even when the
launch is killed outright."""

from __future__ import annotations

import os
import signal
import socket
import subprocess

import psutil
import pytest
from harness import STARTUP_TIMEOUT, Process

from conftest import Robot, answering, free_port, launch_sim, other_domain, wait_until

ROOT = os.path.join(os.path.dirname(__file__), "..")
# launch signals each node, escalates to SIGTERM after 5 s and to SIGKILL after 10 s; then some margin
STOP_TIMEOUT = 20.0  # [s]
NODES = ("sim_bridge", "franka_server")  # executables the launch starts


def port_free(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def started_processes(process: Process, port: int) -> dict[psutil.Process, str]:
    """Once the server answers: every process the launch started, with its command line (by PID, so that
    they are found even if they outlive the launch and are adopted by init)."""
    robot = Robot(f"http://127.0.0.1:{port}/")
    assert wait_until(lambda: answering(robot.url) or not process.alive(), STARTUP_TIMEOUT, 0.25), process.output()
    assert process.alive(), process.output()
    started = {p: " ".join(p.cmdline()) for p in process.descendants()}
    for node in NODES:
        assert sum(f"/{node} " in command for command in started.values()) == 1, started
    return started


def assert_everything_stops(process: Process, started: dict[psutil.Process, str], port: int, what: str) -> None:
    try:
        process.popen.wait(STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"still running {STOP_TIMEOUT} s after {what}:\n{process.output()}") from None
    _, alive = psutil.wait_procs(started, timeout=5.0)
    assert not alive, f"left running after {what}: {[(p.pid, p.cmdline()[:2]) for p in alive]}"
    assert wait_until(lambda: port_free(port), 5.0), f"port {port} still taken after {what}"


def assert_nodes_finished_cleanly(process: Process, started: dict[psutil.Process, str]) -> None:
    """Each node the launch started ended by itself with exit code 0: no traceback, no escalation."""
    log = process.output()
    for p, command in started.items():
        if any(f"/{node} " in command for node in NODES):
            assert f"process has finished cleanly [pid {p.pid}]" in log, log
    assert "Traceback" not in log and "escalating" not in log, log


def signal_name(sig: int) -> str:
    return signal.Signals(sig).name


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=signal_name)
def test_a_signal_to_the_launch_alone_stops_every_node_and_frees_the_port(sig):
    port = free_port()
    process = launch_sim(port, env=other_domain())
    try:
        started = started_processes(process, port)
        process.send(sig)
        assert_everything_stops(process, started, port, f"{signal_name(sig)} to the launch")
        assert process.popen.returncode == 0, process.output()
        assert_nodes_finished_cleanly(process, started)
    finally:
        process.stop(signal.SIGKILL)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=signal_name)
def test_a_signal_to_the_whole_process_group_stops_everything_cleanly(sig):
    """systemd's default (SIGTERM to every process of the unit), or a SIGINT to the group without a
    terminal: each node gets the signal twice, from the sender and from the launch."""
    port = free_port()
    process = launch_sim(port, env=other_domain())
    try:
        started = started_processes(process, port)
        os.killpg(process.popen.pid, sig)
        assert_everything_stops(process, started, port, f"{signal_name(sig)} to the process group")
        assert_nodes_finished_cleanly(process, started)
    finally:
        process.stop(signal.SIGKILL)


def test_sigterm_to_make_sim_stops_everything():
    """As the README runs it: `make sim`, then SIGTERM to make's process only (make passes it on)."""
    port = free_port()
    process = Process(
        ["make", "-C", ROOT, "sim", f"ARGS=port:={port} cameras_config:=none"], "make-sim", env=other_domain()
    )
    try:
        started = started_processes(process, port)
        process.send(signal.SIGTERM)
        assert_everything_stops(process, started, port, "SIGTERM to make")
        assert_nodes_finished_cleanly(process, started)
    finally:
        process.stop(signal.SIGKILL)


def test_nothing_is_left_when_the_launch_is_killed_outright():
    """Even SIGKILL (nothing can be handled) leaves no node: the kernel tells them their parent died."""
    port = free_port()
    process = launch_sim(port, env=other_domain())
    try:
        started = started_processes(process, port)
        process.send(signal.SIGKILL)
        assert_everything_stops(process, started, port, "SIGKILL to the launch")
    finally:
        process.stop(signal.SIGKILL)
