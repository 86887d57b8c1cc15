"""The harness that starts the real product for tests and benchmarks: processes in their own
process group with their output in a log, free ports, sim.launch.py, and worlds on free ports.
Written once; tests/conftest.py and benchmarks/run.py both use it."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import psutil
import requests

from isaac_franka_bridge.world import WorldSpec, check_world, dump_world, load_world

STARTUP_TIMEOUT = 90.0  # [s] first start on a cold machine loads meshes and DDS
CONFIG = Path(__file__).resolve().parent.parent / "config"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Process:
    """A launched command in its own process group, with its output in a log file."""

    def __init__(self, command: list[str], name: str, env: dict[str, str] | None = None) -> None:
        self.log_path = Path(tempfile.mkdtemp(prefix=f"{name}-")) / "output.log"
        self._log = open(self.log_path, "w")
        self.popen = subprocess.Popen(
            command,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, **(env or {})},
        )

    def output(self) -> str:
        return self.log_path.read_text()

    def alive(self) -> bool:
        return self.popen.poll() is None

    def send(self, sig: int) -> None:
        """`sig` to the command's own process only, as `kill PID`, `docker stop` or make do; not its group."""
        os.kill(self.popen.pid, sig)

    def descendants(self) -> list[psutil.Process]:
        """The processes the command started, and theirs (empty once it has ended)."""
        try:
            return psutil.Process(self.popen.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return []

    def stop(self, sig: int = signal.SIGINT, timeout: float = 15.0) -> None:
        if self.alive():
            os.killpg(self.popen.pid, sig)
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.popen.pid, signal.SIGKILL)
                self.popen.wait()
        self._log.close()


def wait_until(predicate: Callable[[], bool], timeout: float, period: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(period)
    return predicate()


def launch_sim(port: int | None, *extra: str, env: dict[str, str] | None = None) -> Process:
    """sim.launch.py; without cameras unless `extra` names a cameras_config (tests of motion need no frames).
    `port` None: the addresses of the world file (`extra` names it)."""
    if not any(a.startswith("cameras_config:=") for a in extra):
        extra = (*extra, "cameras_config:=none")
    address = (f"port:={port}", "host:=127.0.0.1") if port is not None else ()
    return Process(["ros2", "launch", "isaac_franka_bridge", "sim.launch.py", *address, *extra], "sim-launch", env=env)


def answering(url: str, session: requests.Session | None = None) -> bool:
    """Whether the franka_server at `url` answers /getstate with a state."""
    try:
        return (session or requests).post(url + "getstate", timeout=2.0).status_code == 200
    except requests.ConnectionError:
        return False


def world_on_free_ports(name: str, directory: str, cameras: dict[str, str] | None = None) -> tuple[str, WorldSpec]:
    """config/tasks/<name>.yaml with every server on a free port (hosts kept) and, if given, a camera
    file per robot namespace; written to `directory`. Returns (its path, the world)."""
    spec = load_world(str(CONFIG / "tasks" / f"{name}.yaml"))
    robots = []
    for r in spec.robots:
        camera_file = (cameras or {}).get(r.namespace, "")
        if camera_file and not os.path.isabs(camera_file):
            camera_file = os.path.join(directory, camera_file)
        robot = replace(r, port=free_port())
        robots.append(replace(robot, cameras_config=camera_file, cameras=()) if camera_file else robot)
    path = os.path.join(directory, f"{name}.yaml")
    with open(path, "w") as f:  # checked again: the camera files given are read
        f.write(dump_world(check_world(robots, spec.objects, spec.path, spec.task, dict(spec.sim), spec.places)))
    return path, load_world(path)
