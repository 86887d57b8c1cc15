"""Benchmarks: latency and real-time-factor figures, medians and p99, with the machine noted.

    make bench                      # prints a table and rewrites benchmarks/results.md (its table; the
                                    # sections after it are kept; a partial run rewrites nothing)

1. physics + controller, in process, as fast as possible: tick time and real-time capacity;
2. the product as users run it (sim.launch.py: sim bridge + franka_server_ros2, real ROS 2 and HTTP):
   real-time factor at wall-clock pace, /getstate round trip, age of the state a request sees,
   POST /pose -> equilibrium_pose delivery, and the CPU each process uses; then the ram_insertion world
   without cameras idle and under HIL-SERL's 10 Hz client (FrankaEnv's step, GET /task, the SpaceMouse's and
   keyboard's long polls): the sim bridge's and the server's CPU against the world's physics + controller
   ticks (also alone, `make bench ARGS=--cpu-only`, into a section of its own of results.md);
3. two robots in one world (dual_arm, a server each, cameras off): tick time, real-time factor and
   each server's /getstate round trip with both clients asking at once;
4. the product with both wrist cameras read by a client;
5. each HIL-SERL experiment's world (task:=...) with all its cameras read by a client through the
   pyrealsense2 stand-in: real-time factor, frames per second and frame age per camera;
6. the stock env's observation (make sim, both wrist cameras): a client process that runs FrankaEnv's
   step at 10 Hz (clearerr, pose, sleep to the period, getstate, one frame per camera through the
   stand-in's pipelines, read by VideoCapture-like threads), with a bare Flask route (same HTTP stack, no
   ROS) asked in the same loop as the floor; observation p50/p99, step period, POST /pose until the
   simulated controller has the target, real-time factor and CPU per process, all in one run.
7. (only with --pipeline-only, `make bench-pipeline`: about 15 minutes) HIL-SERL's ram_insertion pipeline with the
   scripted expert through scripts/hil_serl.py, from nothing running and an empty experiment directory: each
   step's wall time, the time to the first demo, env steps/s of record_demos and of the actor beside its
   learner; written to its own section of results.md.
8. (only with --learning-only, `make bench-learning`: about 100 minutes a run, 3 runs) HIL-SERL learning the
   state-based ram_insertion (hil_serl_experiments/) with its own train_rlpd.py through `scripts/hil_serl.py
   ram_insertion_state loop --seed N`, once per --seeds, each from nothing: 20 demos by the scripted expert, learner
   and actor with the expert after its patience, evaluations while training, the named checkpoint confirmed on 50
   fresh episodes; each run's record in benchmarks/learning/<experiment>-<seed>.json, one curve of all runs
   (benchmarks/learning/<experiment>.png), their figures in their own section of results.md
   (`--learning-table`: that section again from the committed records).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import platform
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
from scipy.spatial.transform import Rotation

os.environ["ROS_DOMAIN_ID"] = str(random.randint(20, 99))
os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"

import mujoco  # noqa: E402
import psutil  # noqa: E402
import rclpy  # noqa: E402
import requests  # noqa: E402
from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from geometry_msgs.msg import PoseStamped  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.node import Node  # noqa: E402
from rclpy.qos import qos_profile_sensor_data  # noqa: E402
from rclpy.serialization import deserialize_message  # noqa: E402
from sensor_msgs.msg import Image  # noqa: E402

from isaac_franka_bridge.backends import create_world  # noqa: E402
from isaac_franka_bridge.ros.robot_nodes import POSE_TRACE_ENV  # noqa: E402  (the sim's trace of each target taken)

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from harness import (  # noqa: E402
    CONFIG,
    STARTUP_TIMEOUT,
    Process,
    answering,
    free_port,
    launch_sim,
    wait_until,
    world_on_free_ports,
)

from isaac_franka_bridge.controller import CartesianImpedanceController  # noqa: E402
from isaac_franka_bridge.sim.loop import SimulationLoop  # noqa: E402
from isaac_franka_bridge.world import load_world, one_robot_world  # noqa: E402

RESULTS = Path(__file__).with_name("results.md")


def stats(values) -> tuple[float, float]:
    a = np.asarray(values, dtype=float)
    return float(np.median(a)), float(np.percentile(a, 99))


def physics_capacity(
    ticks: int, world_file: str | None = None, state_rate: float = 250.0
) -> dict[str, tuple[float, float] | float]:
    """Ticks of the loop (every robot's control + one physics step, a snapshot at `state_rate`) run as fast as
    they go, through the loop's public API; each robot's target moves 2 cm back and forth so that the arms move.
    `cpu_percent`: the CPU time of those ticks, as % of one core at real time."""
    spec = load_world(world_file, cameras_config="none") if world_file else one_robot_world()
    world = create_world("mujoco", spec)
    for body, robot in zip(world.robots, spec.robots, strict=True):
        body.set_arm_configuration(np.array(robot.reset_joint_target))
    world.start()
    controllers = [CartesianImpedanceController() for _ in spec.robots]
    loop = SimulationLoop(world, controllers, lambda t, s: None, state_rate, 0)
    for control in loop.robots:
        loop.submit(control.start_controller)
    durations = []
    cpu0 = time.thread_time()
    for i in range(ticks):
        if i % 500 == 0:  # keep the arms moving
            sign = 1 if i % 1000 else -1
            for control in loop.robots:

                def move(c=control, sign=sign):
                    s = c.body.measure()
                    c.controller.set_target(s.position + np.array([0.02, 0.0, 0.0]) * sign, s.quat)

                loop.submit(move)
        t0 = time.perf_counter()
        loop.run_ticks(1)
        durations.append(time.perf_counter() - t0)
    cpu = time.thread_time() - cpu0
    mean = float(np.mean(durations))
    return {
        "tick_us": stats(np.array(durations) * 1e6),
        "rtf_capacity": world.timestep / mean,
        "cpu_percent": 100.0 * cpu / (ticks * world.timestep),  # of one core, were it paced at real time
    }


class Probe(Node):
    def __init__(self, states: bool) -> None:
        super().__init__("benchmark_probe")
        self.raw_states: list[tuple[float, bytes]] = []  # (wall, serialized O_T_EE): decoded afterwards
        self.pose_arrivals: list[float] = []
        self.diagnostic_rtf: list[float] = []  # the simulation's own 1 s measurements
        self.sim_times: list[tuple[float, float]] = []  # (wall, sim_time of /diagnostics)
        self.image_arrivals: dict[str, list[float]] = {}
        self.create_subscription(DiagnosticArray, "/diagnostics", self._on_diagnostics, 10)
        self._state_subscription = None
        if states:
            self._state_subscription = self.create_subscription(
                PoseStamped, "/franka_state_controller/O_T_EE", self._on_state, 100, raw=True
            )
            self.create_subscription(PoseStamped, "/cartesian_impedance_controller/equilibrium_pose", self._on_pose, 10)

    def count_frames(self, cameras: tuple[str, ...]) -> None:
        """Count the frames of each camera's image_raw topic from now on, as `ros2 topic hz` does."""
        for name in cameras:
            arrivals = self.image_arrivals[name] = []
            self.create_subscription(
                Image,
                f"/{name}/image_raw",
                lambda _, a=arrivals: a.append(time.monotonic()),
                qos_profile_sensor_data,
                raw=True,
            )

    def stop_states(self) -> None:
        """Stop listening to the 500 Hz state: the HTTP figures are a plain client's, not one busy with ROS."""
        if self._state_subscription is not None:
            self.destroy_subscription(self._state_subscription)
            self._state_subscription = None

    def _on_state(self, data: bytes) -> None:
        self.raw_states.append((time.monotonic(), data))

    def stamps(self) -> list[tuple[float, float]]:
        out = []
        for wall, data in self.raw_states:
            stamp = deserialize_message(data, PoseStamped).header.stamp
            out.append((wall, stamp.sec + stamp.nanosec * 1e-9))
        return out

    def _on_diagnostics(self, msg: DiagnosticArray) -> None:
        for status in msg.status:
            for kv in status.values:
                if kv.key == "real_time_factor":
                    self.diagnostic_rtf.append(float(kv.value))
                elif kv.key == "sim_time":
                    self.sim_times.append((time.monotonic(), float(kv.value)))

    def _on_pose(self, msg) -> None:
        self.pose_arrivals.append(time.monotonic())


def camera_client(url: str, seconds: float) -> dict[str, dict]:
    """Read every camera as the stock env does (pyrealsense2 API via virtual_realsense) for `seconds`.

    Runs in a process of its own (`--camera-client`), as HIL-SERL's env does, so its CPU is counted apart.
    """
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "clients" / "virtual_realsense"))
    os.environ["FRANKA_SIM_URL"] = url.rstrip("/")
    import virtual_realsense as rs

    results: dict[str, dict] = {}

    def reader(serial: str) -> None:
        pipe, cfg = rs.pipeline(), rs.config()
        cfg.enable_device(serial)
        cfg.enable_stream(rs.stream.color, 1280, 720, rs.format.bgr8, 15)
        pipe.start(cfg)
        arrivals, ages = [], []
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            frame = pipe.wait_for_frames().get_color_frame()
            arrivals.append(time.monotonic())
            ages.append(time.time() - frame.get_timestamp() / 1000.0)
        path = getattr(pipe._source, "path", "http")  # shared memory or HTTP (the stand-in chose)
        pipe.stop()
        results[serial] = {
            "fps": (len(arrivals) - 1) / (arrivals[-1] - arrivals[0]),
            "age_ms": stats(np.array(ages) * 1e3),
            "path": path,
        }

    serials = [d.get_info(rs.camera_info.serial_number) for d in rs.context().devices]
    threads = [threading.Thread(target=reader, args=(s,)) for s in serials]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def launch(launch_args: tuple[str, ...], urls: list[str] | None = None) -> tuple[Process, str, requests.Session]:
    """sim.launch.py (on a free port unless `urls` names the world's servers), once every server answers."""
    port = None if urls else free_port()
    process = launch_sim(port, *launch_args)
    urls = urls or [f"http://127.0.0.1:{port}/"]
    session = requests.Session()
    if not wait_until(lambda: all(answering(u, session) for u in urls) or not process.alive(), STARTUP_TIMEOUT, 0.25):
        process.stop()
        raise RuntimeError(f"the simulation did not come up; see {process.log_path}")
    if not process.alive():
        raise RuntimeError(f"the simulation stopped at start; see {process.log_path}")
    return process, urls[0], session


def cpu_of(processes: dict[str, psutil.Process], seconds: float) -> dict[str, float]:
    """% of one core each process used over the next `seconds` (measured, not sampled)."""
    for p in processes.values():
        p.cpu_percent(None)
    time.sleep(seconds)
    return {name: p.cpu_percent(None) for name, p in processes.items()}


@contextlib.contextmanager
def running_product(launch_args: tuple[str, ...], states: bool, urls: list[str] | None = None):
    """sim.launch.py with a Probe listening beside it: yields (launch process, url, session, probe)."""
    process, url, session = launch(launch_args, urls)
    proc = process.popen
    rclpy.init()
    probe = Probe(states=states)
    executor = SingleThreadedExecutor()
    executor.add_node(probe)
    threading.Thread(target=executor.spin, daemon=True).start()
    try:
        yield proc, url, session, probe
    finally:
        process.stop()
        executor.shutdown()
        rclpy.try_shutdown()


def product(seconds: float, requests_n: int, launch_args: tuple[str, ...] = ()) -> dict:
    trace = os.path.join(tempfile.mkdtemp(prefix="bench-pose-"), "taken.txt")
    os.environ[POSE_TRACE_ENV] = trace  # launch_sim passes the environment on to the simulation
    try:
        return _product(seconds, requests_n, launch_args, trace)
    finally:
        del os.environ[POSE_TRACE_ENV]


def _product(seconds: float, requests_n: int, launch_args: tuple[str, ...], trace: str) -> dict:
    with running_product(("cameras_config:=none", *launch_args), states=True) as (proc, url, session, probe):
        time.sleep(2.0)
        children = {p.name(): p for p in psutil.Process(proc.pid).children(recursive=True)}
        # real-time factor at pace, from the state stamps against the wall clock
        probe.raw_states.clear()
        probe.diagnostic_rtf.clear()
        cpu = cpu_of(children, seconds)
        stamps = probe.stamps()
        (w0, s0), (w1, s1) = stamps[0], stamps[-1]
        rtf = (s1 - s0) / (w1 - w0)
        state_rate = len(stamps) / (w1 - w0)
        probe.stop_states()
        # /getstate round trip and the age of the state it returns
        latencies, ages = [], []
        for _ in range(requests_n):
            t0 = time.perf_counter()
            response = session.post(url + "getstate", timeout=5)
            latencies.append(time.perf_counter() - t0)
            assert response.status_code == 200
            ages.append(session.get(url + "health", timeout=5).json()["state_age_s"])
        # POST /pose -> equilibrium_pose delivered on the ROS graph
        pose = session.post(url + "getpos", timeout=5).json()["pose"]
        delays, sent = [], []
        for i in range(100):
            probe.pose_arrivals.clear()
            x = pose[0] + 0.002 * (i % 2) + 1e-6 * i  # each target its own x: the trace tells them apart
            sent.append((x, time.time()))
            t0 = time.monotonic()
            session.post(url + "pose", json={"arr": [x, *pose[1:]]}, timeout=5)
            while not probe.pose_arrivals and time.monotonic() - t0 < 1.0:
                time.sleep(0.0002)
            if probe.pose_arrivals:
                delays.append(probe.pose_arrivals[0] - t0)
            time.sleep(0.05)
        taken = [d[0] for d in controller_delays(sent, read_pose_trace(trace))]
        return {
            "rtf": rtf,
            "rtf_diagnostics": (float(np.mean(probe.diagnostic_rtf)), float(np.min(probe.diagnostic_rtf))),
            "state_rate": state_rate,
            "getstate_ms": stats(np.array(latencies) * 1e3),
            "state_age_ms": stats(np.array(ages) * 1e3),
            "pose_delivery_ms": stats(np.array(delays) * 1e3),
            "pose_to_controller_ms": stats(np.array(taken) * 1e3) if taken else (float("nan"), float("nan")),
            "cpu": cpu,
        }


def product_two_robots(seconds: float, requests_n: int) -> dict:
    """The dual-arm world (config/tasks/dual_arm.yaml on free ports, cameras off): the real-time factor
    from /diagnostics, and each server's /getstate round trip, both clients asking at once."""
    path, spec = world_on_free_ports("dual_arm", tempfile.mkdtemp(prefix="bench-world-"))
    urls = [f"http://{r.host}:{r.port}/" for r in spec.robots]
    with running_product((f"world:={path}", "cameras_config:=none"), states=False, urls=urls) as run:
        proc, _, _, probe = run
        time.sleep(2.0)
        processes = psutil.Process(proc.pid).children(recursive=True)
        named = {f"{p.name()} {i}": p for i, p in enumerate(processes) if p.name() != "python"}
        probe.diagnostic_rtf.clear()
        probe.sim_times.clear()
        cpu = cpu_of(named, seconds)
        (wall0, sim0), (wall1, sim1) = probe.sim_times[0], probe.sim_times[-1]
        latencies: dict[str, list[float]] = {}

        def client(robot, url: str) -> None:
            session, times = requests.Session(), latencies.setdefault(robot.namespace, [])
            for _ in range(requests_n):
                t0 = time.perf_counter()
                assert session.post(url + "getstate", timeout=5).status_code == 200
                times.append(time.perf_counter() - t0)
                time.sleep(0.01)

        threads = [threading.Thread(target=client, args=(r, u)) for r, u in zip(spec.robots, urls, strict=True)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return {
            "rtf": (sim1 - sim0) / (wall1 - wall0),
            "rtf_diagnostics": (float(np.mean(probe.diagnostic_rtf)), float(np.min(probe.diagnostic_rtf))),
            "getstate_ms": {name: stats(np.array(t) * 1e3) for name, t in latencies.items()},
            "cpu": cpu,
        }


def product_with_cameras(seconds: float, launch_args: tuple[str, ...] = ()) -> dict:
    """make sim with the wrist cameras on, read by a stock-env-like client in its own process.

    While the client reads, only /diagnostics is listened to (the load is that of a
    user's session); then the image_raw topics are counted without the client, as `ros2 topic hz`.
    """
    # the wrist cameras of config/cameras.yaml, as make sim runs
    with running_product(("cameras_config:=", *launch_args), states=False) as (proc, url, _, probe):
        time.sleep(6.0)  # the camera process has started rendering, the physics has caught up with its start
        # sim_bridge, franka_server, sim_cameras (multiprocessing's resource tracker, `python`, idles)
        processes = {p.name(): p for p in psutil.Process(proc.pid).children(recursive=True) if p.name() != "python"}
        client = subprocess.Popen(
            [sys.executable, __file__, "--camera-client", url, str(seconds)], stdout=subprocess.PIPE, text=True
        )
        processes["client"] = psutil.Process(client.pid)
        time.sleep(1.0)  # the client is connected
        probe.diagnostic_rtf.clear()
        probe.sim_times.clear()
        cpu = cpu_of(processes, seconds - 2.0)
        (wall0, sim0), (wall1, sim1) = probe.sim_times[0], probe.sim_times[-1]
        rtf = (sim1 - sim0) / (wall1 - wall0)
        rtf_diagnostics = (float(np.mean(probe.diagnostic_rtf)), float(np.min(probe.diagnostic_rtf)))
        output, _ = client.communicate(timeout=60)
        probe.count_frames(("wrist_1", "wrist_2"))
        time.sleep(1.0)
        start = time.monotonic()
        time.sleep(5.0)
        rates = {name: sum(t >= start for t in times) / 5.0 for name, times in probe.image_arrivals.items()}
        return {
            "rtf": rtf,
            "rtf_diagnostics": rtf_diagnostics,
            "topic_rates": rates,
            "cameras": json.loads(output.strip().splitlines()[-1]),
            "cpu": cpu,
        }


WORLD_CPU_TASK = "ram_insertion"  # the world HIL-SERL's learner trains beside (README, docs/learning.md)


def paced_loop_cpu(world_file: str, seconds: float, state_rate: float = 250.0) -> float:
    """% of one core that the loop of `physics_capacity` takes paced at real time, in process, no ROS: what any
    real-time world costs on this machine before it publishes anything (sleeping and waking has its price)."""
    spec = load_world(world_file, cameras_config="none")
    world = create_world("mujoco", spec)
    for body, robot in zip(world.robots, spec.robots, strict=True):
        body.set_arm_configuration(np.array(robot.reset_joint_target))
    world.start()
    loop = SimulationLoop(world, [CartesianImpedanceController() for _ in spec.robots], lambda t, s: None, state_rate)
    for control in loop.robots:
        loop.submit(control.start_controller)
    loop.start()
    try:
        time.sleep(1.0)
        cpu0, wall0 = time.process_time(), time.monotonic()  # (this thread sleeps meanwhile)
        time.sleep(seconds)
        return 100.0 * (time.process_time() - cpu0) / (time.monotonic() - wall0)
    finally:
        loop.stop()


def world_client(url: str, seconds: float) -> dict:
    """HIL-SERL's actor stepping FrankaEnv at 10 Hz against `url` with its ground truth and its human devices,
    in a process of its own: per step clearerr, pose and getstate (requests.post without a session, as the env),
    GET /task (the ground truth's reward, hil_serl_experiments/ground_truth.py); beside it the virtual
    SpaceMouse's long poll of GET /spacemouse (0.25 s) and the keyboard's of GET /keys (1 s)."""
    stop = threading.Event()

    def long_poll(route: str, timeout: str) -> None:
        session, seq = requests.Session(), 0
        while not stop.is_set():
            seq = session.get(url + route, params={"after": seq, "timeout": timeout}, timeout=5).json()["seq"]

    pollers = [threading.Thread(target=long_poll, args=a, daemon=True) for a in (("spacemouse", "0.25"), ("keys", "1"))]
    for t in pollers:
        t.start()
    session = requests.Session()
    pose = np.array(requests.post(url + "getpos", timeout=5).json()["pose"])
    steps, start = 0, time.monotonic()
    while time.monotonic() - start < seconds:
        t0 = time.monotonic()
        target = pose.copy()
        target[0] += 0.002 * (steps % 2)
        requests.post(url + "clearerr", timeout=5)
        requests.post(url + "pose", json={"arr": target.astype(np.float32).tolist()}, timeout=5)
        requests.post(url + "getstate", timeout=5).json()
        session.get(url + "task", timeout=5).json()
        steps += 1
        time.sleep(max(0.0, 0.1 - (time.monotonic() - t0)))
    stop.set()
    return {"steps_per_s": steps / (time.monotonic() - start)}


def world_cpu(seconds: float, ticks: int) -> dict:
    """The goal of issue 26: a world without cameras at real time (ram_insertion, its task file on free ports)
    costs at most twice its physics. CPU of the sim bridge and the server, idle (no client at all) and under the
    10 Hz load of world_client, against the physics + controller ticks of the same world in process."""
    path, spec = world_on_free_ports(WORLD_CPU_TASK, tempfile.mkdtemp(prefix="bench-cpu-"))
    physics = physics_capacity(ticks, path)
    paced = paced_loop_cpu(path, seconds)
    url = spec.robots[0].url
    with running_product((f"task:={path}", "cameras_config:=none"), states=False, urls=[url]) as run:
        proc, _, _, probe = run
        time.sleep(3.0)  # started, discovered, at pace
        processes = {p.name(): p for p in psutil.Process(proc.pid).children(recursive=True) if p.name() != "python"}
        probe.diagnostic_rtf.clear()
        idle = cpu_of(processes, seconds)
        client = subprocess.Popen(
            [sys.executable, __file__, "--world-client", url, str(seconds + 3.0)], stdout=subprocess.PIPE, text=True
        )
        time.sleep(2.0)  # stepping
        loaded = cpu_of({**processes, "client": psutil.Process(client.pid)}, seconds)
        output, _ = client.communicate(timeout=seconds + 60)
        rtf = (float(np.mean(probe.diagnostic_rtf)), float(np.min(probe.diagnostic_rtf)))
    return {
        "physics": physics,
        "paced": paced,
        "idle": idle,
        "loaded": loaded,
        "client": json.loads(output.strip().splitlines()[-1]),
        "rtf_diagnostics": rtf,
    }


def world_cpu_rows(run: dict, f) -> list[tuple[str, str]]:
    physics = run["physics"]["cpu_percent"]
    rows = [
        (
            f"{WORLD_CPU_TASK}, no cameras: physics + controller tick (median / p99); its CPU at real time",
            f(run["physics"]["tick_us"], "us") + f"; {physics:.1f}% of one core",
        ),
        (f"{WORLD_CPU_TASK}: the same loop paced at real time, no ROS (% of one core)", f"{run['paced']:.1f}%"),
    ]
    for name, label in (("idle", "idle (no client)"), ("loaded", "stock client at 10 Hz")):
        cpu = run[name]
        world = cpu["sim_bridge"] + cpu["franka_server"]
        rows.append(
            (
                f"{WORLD_CPU_TASK} world, {label}: CPU sim bridge / server / both (% of one core); both / physics",
                f"{cpu['sim_bridge']:.1f}% / {cpu['franka_server']:.1f}% / {world:.1f}%; {world / physics:.2f}x",
            )
        )
    rows.append(
        (
            f"{WORLD_CPU_TASK} world, stock client: its steps/s; its CPU; real-time factor, /diagnostics (mean / min)",
            f"{run['client']['steps_per_s']:.1f}; {run['loaded']['client']:.1f}%; "
            + "{:.3f} / {:.3f}".format(*run["rtf_diagnostics"]),
        )
    )
    return rows


def read_pose_trace(path: str) -> dict[float, tuple[float, float]]:
    """x of each equilibrium pose the simulated controller took -> (when it took it, when the controller's node
    received it), Unix times."""
    taken: dict[float, tuple[float, float]] = {}
    with contextlib.suppress(FileNotFoundError), open(path) as f:
        for line in f:
            x, applied, received = (float(v) for v in line.split())
            taken.setdefault(x, (applied, received))
    return taken


def controller_delays(sent: list[tuple[float, float]], taken: dict) -> list[tuple[float, float, float]]:
    """Per POST /pose (x, Unix time before the request) that the controller took: [s] (until it took it, until
    the sim's controller node received it, from there until the controller took it between two ticks)."""
    out = []
    for x, t in sent:
        if x in taken:
            applied, received = taken[x]
            out.append((applied - t, received - t, applied - received))
    return out


def bare_flask(port: int) -> None:
    """The floor: a Flask route with the server's HTTP stack (werkzeug threaded, HTTP/1.1 keep-alive, the same
    GIL switch interval) and a /getstate-sized JSON answer, but no ROS and no state behind it."""
    from flask import Flask, jsonify
    from werkzeug.serving import make_server

    from franka_server_ros2.main import GIL_SWITCH_INTERVAL, KeepAliveHandler

    rng = np.random.default_rng(0)
    sizes = {"pose": 7, "vel": 6, "force": 3, "torque": 3, "q": 7, "dq": 7}
    state = {k: rng.normal(size=n) for k, n in sizes.items()} | {"jacobian": rng.normal(size=(6, 7))}
    app = Flask("bare")

    @app.post("/getstate")
    def getstate():
        return jsonify({**{k: v.tolist() for k, v in state.items()}, "gripper_pos": 0.5})

    sys.setswitchinterval(GIL_SWITCH_INTERVAL)
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    make_server("127.0.0.1", port, app, threaded=True, request_handler=KeepAliveHandler).serve_forever()


def floor_alone(url: str, n: int = 150) -> tuple[float, float]:
    """The bare Flask route asked as the stock env asks (requests.post, a new connection, 10 Hz) before the
    product starts, with nothing else running: this machine's floor for one HTTP request (p50, p99 [ms])."""
    times = []
    for _ in range(n):
        time.sleep(0.1)
        t0 = time.perf_counter()
        requests.post(url, timeout=5).json()
        times.append((time.perf_counter() - t0) * 1e3)
    return stats(times)


def stock_client(url: str, bare_url: str, steps: int) -> dict:
    """HIL-SERL's FrankaEnv as it observes, in a process of its own: a VideoCapture thread per camera (RSCapture
    over the pyrealsense2 stand-in: wait_for_frames, keep only the newest frame in a queue), then `steps` steps
    at 10 Hz: clearerr and pose (float32, as the env posts them), sleep to the period, getstate, one frame per
    camera (queue.get, crop, resize to 128x128, BGR -> RGB). requests.post without a session, as the env does.
    The bare Flask route is asked once per step inside the sleep (so it does not lengthen the period)."""
    import queue

    import cv2

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "clients" / "virtual_realsense"))
    os.environ["FRANKA_SIM_URL"] = url.rstrip("/")
    import virtual_realsense as rs

    class Capture:  # RSCapture + VideoCapture
        def __init__(self, serial: str) -> None:
            self.pipe, cfg = rs.pipeline(), rs.config()
            cfg.enable_device(serial)
            cfg.enable_stream(rs.stream.color, 1280, 720, rs.format.bgr8, 15)
            self.pipe.start(cfg)
            self.align = rs.align(rs.stream.color)
            self.q: queue.Queue = queue.Queue()
            self.enable = True
            self.thread = threading.Thread(target=self._reader, daemon=True)
            self.thread.start()

        def _reader(self) -> None:
            while self.enable:
                try:
                    frames = self.align.process(self.pipe.wait_for_frames())
                except RuntimeError:
                    return
                color = frames.get_color_frame()
                if not color.is_video_frame():
                    continue
                image = np.asarray(color.get_data())
                if not self.q.empty():
                    with contextlib.suppress(queue.Empty):
                        self.q.get_nowait()
                self.q.put(image)

        def read(self) -> np.ndarray:
            return self.q.get(timeout=5)

        def close(self) -> None:
            self.enable = False
            self.pipe.stop()

    serials = [d.get_info(rs.camera_info.serial_number) for d in rs.context().devices]
    caps = {serial: Capture(serial) for serial in serials}
    for cap in caps.values():  # the env's constructor waits for the cameras
        cap.q.put(cap.read())

    def get_im() -> dict[str, np.ndarray]:
        images = {}
        for serial, cap in caps.items():
            rgb = cap.read()
            cropped = rgb[150:450, 350:1100]  # an experiment's IMAGE_CROP on the full 1280x720 frame
            images[serial] = cv2.resize(cropped, (128, 128))[..., ::-1]
        return images

    post = requests.post
    state = post(url + "getstate", timeout=5).json()
    base = np.array(state["pose"], dtype=float)
    starts, getstate, get_im_s, observation, bare, sent = [], [], [], [], [], []
    for i in range(steps):
        start = time.monotonic()
        starts.append(start)
        pose = base.copy()
        pose[0] += 0.001 * (i % 2) + 2e-6 * i  # each target its own x: the trace tells them apart
        arr = pose.astype(np.float32).tolist()
        post(url + "clearerr", timeout=5)
        sent.append((arr[0], time.time()))
        post(url + "pose", json={"arr": arr}, timeout=5)
        t0 = time.perf_counter()
        post(bare_url + "getstate", timeout=5).json()
        bare.append(time.perf_counter() - t0)
        time.sleep(max(0.0, 0.1 - (time.monotonic() - start)))
        t0 = time.perf_counter()
        state = post(url + "getstate", timeout=5).json()
        t1 = time.perf_counter()
        get_im()
        t2 = time.perf_counter()
        getstate.append(t1 - t0)
        get_im_s.append(t2 - t1)
        observation.append(t2 - t0)
    starts.append(time.monotonic())
    paths = {serial: getattr(cap.pipe._source, "path", "http") for serial, cap in caps.items()}
    for cap in caps.values():
        cap.close()
    periods = np.diff(starts)
    return {
        "cameras": [f"{serial} ({paths[serial]})" for serial in serials],
        "observation_ms": (np.array(observation) * 1e3).tolist(),
        "getstate_ms": (np.array(getstate) * 1e3).tolist(),
        "get_im_ms": (np.array(get_im_s) * 1e3).tolist(),
        "bare_ms": (np.array(bare) * 1e3).tolist(),
        "period_ms": (periods * 1e3).tolist(),
        "sent": sent,
    }


def product_observation(steps: int, launch_args: tuple[str, ...] = ()) -> dict:
    """make sim (both wrist cameras), the stock env's observation in a client process, the bare Flask floor in
    another, the simulated controller tracing when it takes each pose: all figures from one run."""
    trace = os.path.join(tempfile.mkdtemp(prefix="bench-pose-"), "taken.txt")
    os.environ[POSE_TRACE_ENV] = trace  # launch_sim passes the environment on to the simulation
    port = free_port()
    floor = subprocess.Popen([sys.executable, __file__, "--bare-flask", str(port)])
    bare_url = f"http://127.0.0.1:{port}/"
    try:
        if not wait_until(lambda: answering(bare_url), 30.0, 0.1):
            raise RuntimeError("the bare Flask server did not start")
        idle_floor = floor_alone(bare_url + "getstate")
        context = running_product(("cameras_config:=", *launch_args), states=False)
        with context as (proc, url, _, probe):
            time.sleep(6.0)  # the camera process renders, the physics has caught up with its start
            processes = {p.name(): p for p in psutil.Process(proc.pid).children(recursive=True) if p.name() != "python"}
            processes["bare_flask"] = psutil.Process(floor.pid)
            client = subprocess.Popen(
                [sys.executable, __file__, "--stock-client", url, bare_url, str(steps)],
                stdout=subprocess.PIPE,
                text=True,
            )
            processes["client"] = psutil.Process(client.pid)
            time.sleep(3.0)  # the client has opened its cameras and steps
            probe.diagnostic_rtf.clear()
            probe.sim_times.clear()
            psutil.cpu_percent(None)
            cpu = cpu_of(processes, max(5.0, steps / 10.0 - 6.0))
            busy = psutil.cpu_percent(None) * psutil.cpu_count() / 100.0  # [cores] all processes of the machine
            (wall0, sim0), (wall1, sim1) = probe.sim_times[0], probe.sim_times[-1]
            rtf_diagnostics = (float(np.mean(probe.diagnostic_rtf)), float(np.min(probe.diagnostic_rtf)))
            output, _ = client.communicate(timeout=steps / 10.0 + 120)
            run = json.loads(output.strip().splitlines()[-1])
            delays = controller_delays([tuple(s) for s in run.pop("sent")], read_pose_trace(trace))
    finally:
        del os.environ[POSE_TRACE_ENV]
        floor.kill()
        floor.wait()
    figures = {k: stats(v) for k, v in run.items() if k.endswith("_ms")}
    figures["idle_floor_ms"] = idle_floor
    figures["period_mean_ms"] = float(np.mean(run["period_ms"]))
    parts = np.array(delays).reshape(-1, 3) * 1e3
    for i, key in enumerate(("pose_to_controller_ms", "pose_to_node_ms", "pose_tick_ms")):
        figures[key] = stats(parts[:, i]) if len(parts) else (float("nan"), float("nan"))
    figures["pose_traced"] = f"{len(delays)} of {steps}"
    return {
        **figures,
        "cameras": run["cameras"],
        "rtf": (sim1 - sim0) / (wall1 - wall0),
        "rtf_diagnostics": rtf_diagnostics,
        "cpu": cpu,
        "busy": (busy, busy - sum(cpu.values()) / 100.0),
        "steps": steps,
    }


def observation_rows(obs: dict, f) -> list[tuple[str, str]]:
    floor = obs["bare_ms"][1]
    rows = [
        (
            f"stock env, {obs['steps']} steps at 10 Hz, cameras {', '.join(obs['cameras'])}: observation "
            "(getstate + one frame per camera) (median / p99)",
            f(obs["observation_ms"], "ms"),
        ),
        ("stock env: getstate (median / p99)", f(obs["getstate_ms"], "ms")),
        ("stock env: get_im, both cameras (median / p99)", f(obs["get_im_ms"], "ms")),
        (
            "stock env: step period for 100 ms (mean / median / p99)",
            f"{obs['period_mean_ms']:.2f} ms / " + f(obs["period_ms"], "ms"),
        ),
        (
            "bare Flask route at 10 Hz before the product starts, nothing else running (median / p99)",
            f(obs["idle_floor_ms"], "ms"),
        ),
        ("stock env: bare Flask route, same load, the floor (median / p99)", f(obs["bare_ms"], "ms")),
        ("stock env: getstate p99 / bare Flask p99", f"{obs['getstate_ms'][1] / floor:.2f}x"),
        (
            f"stock env: POST /pose until the simulated controller has the target ({obs['pose_traced']}) "
            "(median / p99)",
            f(obs["pose_to_controller_ms"], "ms"),
        ),
        (
            "stock env: POST /pose until the controller has it p99 / bare Flask p99",
            f"{obs['pose_to_controller_ms'][1] / floor:.2f}x",
        ),
        (
            "stock env: of which POST -> the sim's controller node / node -> controller tick (median / p99)",
            " ; ".join(f(obs[k], "ms") for k in ("pose_to_node_ms", "pose_tick_ms")),
        ),
        ("stock env: real-time factor, sim vs wall clock", f"{obs['rtf']:.3f}"),
        ("stock env: real-time factor, /diagnostics (mean / min)", "{:.3f} / {:.3f}".format(*obs["rtf_diagnostics"])),
        ("stock env: CPU, " + " / ".join(obs["cpu"]), " / ".join(f"{v:.0f}%" for v in obs["cpu"].values())),
        (
            "stock env: the machine busy meanwhile, all / other processes (cores)",
            "{:.2f} / {:.2f}".format(*obs["busy"]),
        ),
    ]
    return rows


TASKS = ("ram_insertion", "usb_pickup_insertion", "object_handover", "egg_flip")


def product_task(name: str, seconds: float, divisor: int, launch_args: tuple[str, ...] = ()) -> dict:
    """config/tasks/<name>.yaml on free ports with all its cameras (rendered at 1/`divisor` of their size),
    every camera of the world read by a stock-env-like client in its own process (pointed at the first
    server, it finds the others' cameras too): the real-time factor, and fps and frame age per camera."""
    path, spec = world_on_free_ports(name, tempfile.mkdtemp(prefix=f"bench-{name}-"))
    urls = [r.url for r in spec.robots]
    arguments = (f"task:={path}", "cameras_config:=", f"camera_render_divisor:={divisor}", *launch_args)
    with running_product(arguments, states=False, urls=urls) as (proc, url, _, probe):
        time.sleep(6.0)  # the camera process renders, the physics has caught up with its start
        children = [p for p in psutil.Process(proc.pid).children(recursive=True) if p.name() != "python"]
        processes = {
            f"{p.name()}{' ' + str(i) if p.name() == 'franka_server' else ''}": p for i, p in enumerate(children)
        }
        client = subprocess.Popen(
            [sys.executable, __file__, "--camera-client", url, str(seconds)], stdout=subprocess.PIPE, text=True
        )
        processes["client"] = psutil.Process(client.pid)
        time.sleep(1.0)
        probe.diagnostic_rtf.clear()
        probe.sim_times.clear()
        cpu = cpu_of(processes, seconds - 2.0)
        (wall0, sim0), (wall1, sim1) = probe.sim_times[0], probe.sim_times[-1]
        output, _ = client.communicate(timeout=60)
        return {
            "rtf": (sim1 - sim0) / (wall1 - wall0),
            "rtf_diagnostics": (float(np.mean(probe.diagnostic_rtf)), float(np.min(probe.diagnostic_rtf))),
            "cameras": json.loads(output.strip().splitlines()[-1]),
            "names": {c.serial_number: f"{r.prefix}{c.name}" for r in spec.robots for c in r.cameras},
            "cpu": cpu,
        }


def task_rows(name: str, run: dict, divisor: int, f) -> list[tuple[str, str]]:
    size = "1280x720" if divisor == 1 else f"rendered at 1/{divisor} size, scaled to 1280x720"
    rows = [
        (f"{name} ({len(run['cameras'])} cameras, {size}): real-time factor, sim vs wall clock", f"{run['rtf']:.3f}")
    ]
    rows.append(
        (f"{name}: real-time factor, /diagnostics (mean / min)", "{:.3f} / {:.3f}".format(*run["rtf_diagnostics"]))
    )
    for serial, figures in sorted(run["cameras"].items()):
        camera = f"{run['names'].get(serial, '?')} ({serial}{', ' + figures['path'] if 'path' in figures else ''})"
        rows.append(
            (
                f"{name}: {camera} frames per second / frame age at the client",
                f"{figures['fps']:.1f} fps; " + f(figures["age_ms"], "ms"),
            )
        )
    rows.append((f"{name}: CPU, " + " / ".join(run["cpu"]), " / ".join(f"{v:.0f}%" for v in run["cpu"].values())))
    return rows


def utc_stamp() -> str:
    """When a record or a section of results.md was written, as they are all stamped."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def machine() -> str:
    cpu = platform.processor() or "unknown CPU"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (
        f"{cpu}, {os.cpu_count()} cores, {psutil.virtual_memory().total / 2**30:.0f} GiB; "
        f"Python {platform.python_version()}, MuJoCo {mujoco.__version__}, ROS 2 {os.environ.get('ROS_DISTRO', '?')}"
    )


def product_rows(args, f) -> list[tuple[str, str]]:
    print("physics + controller, in process ...", flush=True)
    cap = physics_capacity(args.ticks)
    print("the product: sim.launch.py (MuJoCo, state topics at the default rate) ...", flush=True)
    prod = product(args.seconds, args.requests, tuple(args.launch_args))
    return [
        ("physics + controller tick (median / p99)", f(cap["tick_us"], "us")),
        ("real-time capacity of one core (1 ms / mean tick)", f"{cap['rtf_capacity']:.1f}x"),
        ("real-time factor at pace, state stamps vs wall clock", f"{prod['rtf']:.3f}"),
        (
            "real-time factor at pace, /diagnostics 1 s windows (mean / min)",
            "{:.3f} / {:.3f}".format(*prod["rtf_diagnostics"]),
        ),
        ("state topic rate seen by a subscriber", f"{prod['state_rate']:.0f} Hz"),
        ("POST /getstate round trip (median / p99)", f(prod["getstate_ms"], "ms")),
        ("age of the state a request sees (median / p99)", f(prod["state_age_ms"], "ms")),
        ("POST /pose -> equilibrium_pose delivered (median / p99)", f(prod["pose_delivery_ms"], "ms")),
        (
            "POST /pose until the simulated controller has the target (median / p99)",
            f(prod["pose_to_controller_ms"], "ms"),
        ),
        ("CPU, sim bridge / server (% of one core)", " / ".join(f"{v:.0f}%" for v in prod["cpu"].values())),
    ]


def two_robot_rows(two: dict, f) -> list[tuple[str, str]]:
    rows = [
        ("two robots (dual_arm, cameras off): real-time factor, sim vs wall clock", f"{two['rtf']:.3f}"),
        ("two robots: real-time factor, /diagnostics (mean / min)", "{:.3f} / {:.3f}".format(*two["rtf_diagnostics"])),
    ]
    for name, figures in two["getstate_ms"].items():
        rows.append((f"two robots: {name} server POST /getstate, both at once (median / p99)", f(figures, "ms")))
    rows.append(("two robots: CPU, " + " / ".join(two["cpu"]), " / ".join(f"{v:.0f}%" for v in two["cpu"].values())))
    return rows


def camera_rows(cam: dict, f) -> list[tuple[str, str]]:
    rows = [
        ("with cameras: real-time factor, simulated vs wall-clock time", f"{cam['rtf']:.3f}"),
        (
            "with cameras: real-time factor, /diagnostics (mean / min)",
            "{:.3f} / {:.3f}".format(*cam["rtf_diagnostics"]),
        ),
    ]
    for name, rate in cam["topic_rates"].items():
        rows.append((f"cameras on, no client: /{name}/image_raw rate on ROS 2", f"{rate:.1f} Hz"))
    for serial, figures in sorted(cam["cameras"].items()):
        via = f" ({figures['path']})" if "path" in figures else ""
        rows.append((f"with cameras: camera {serial}{via} frames per second at the client", f"{figures['fps']:.1f}"))
        rows.append((f"with cameras: camera {serial}{via} frame age at the client", f(figures["age_ms"], "ms")))
    rows.append(
        (
            "with cameras: CPU, " + " / ".join(cam["cpu"]),
            " / ".join(f"{v:.0f}%" for v in cam["cpu"].values()),
        )
    )
    return rows


ROOT = Path(__file__).resolve().parent.parent
PIPELINE_SECTION = "## The HIL-SERL pipeline"


def pipeline_step(directory: Path, step: str, *flags: str, task: str = "ram_insertion") -> dict:
    """One step of scripts/hil_serl.py for `task`, its lines shown; its summary.json."""
    argv = [sys.executable, str(ROOT / "scripts" / "hil_serl.py"), task, step, "--dir", str(directory)]
    print(f"scripts/hil_serl.py {task} {step} {' '.join(flags)}", flush=True)
    if subprocess.run([*argv, *flags], cwd=ROOT).returncode != 0:
        raise RuntimeError(f"scripts/hil_serl.py {task} {step} failed (its lines above)")
    logs = sorted((directory / "logs").glob(f"{step}-*"))[-1]
    return json.loads((logs / "summary.json").read_text())


def pipeline(args) -> list[tuple[str, str]]:
    """ram_insertion from nothing running (HIL-SERL's environment built, no world, an empty experiment
    directory) through demos to the actor beside its learner, with the scripted expert."""
    weights = ["--random-encoder-weights"]  # labelled in the results where SERL's ResNet-10 is not at ~/.serl
    with tempfile.TemporaryDirectory(prefix="pipeline-") as tmp:
        directory = Path(tmp)
        successes = pipeline_step(directory, "successes", "--successes", str(args.pipeline_successes))
        epochs, batch = args.pipeline_classifier
        flags = ("--epochs", str(epochs), "--batch-size", str(batch))
        classifier = pipeline_step(directory, "classifier", *weights, *flags)
        demos = pipeline_step(directory, "demos", *weights, "--demos", str(args.pipeline_demos))
        train = pipeline_step(directory, "train", *weights, "--steps", str(args.pipeline_steps))
    first = successes["wall_s"] + classifier["wall_s"] + demos["first_demo_s"]
    label = " (random encoder weights)" if train["random_encoder_weights"] else ""
    return [
        (f"successes: {successes['successes']} success transitions, step wall time (world start to stop)",
         f"{successes['wall_s']:.0f} s"),
        ("successes: record_success_fail env steps/s (resets included)", f"{successes['env_steps_per_s']:.1f}"),
        (f"classifier: train_reward_classifier {epochs} epochs, batch {batch}, step wall time{label}",
         f"{classifier['wall_s']:.0f} s"),
        ("demos: from the step's start to the first demo", f"{demos['first_demo_s']:.0f} s"),
        (f"time from nothing to the first demo (successes + classifier + demos' first){label}", f"{first:.0f} s"),
        (f"demos: record_demos env steps/s ({demos['demos']} demos, {demos['env_steps']} steps, resets included)",
         f"{demos['env_steps_per_s']:.1f}"),
        (f"demos: step wall time ({demos['demos']} demos)", f"{demos['wall_s']:.0f} s"),
        (f"train: actor env steps/s beside its learner ({train['actor_steps']} steps; learner "
         f"{train['learner_updates']} updates meanwhile){label}", f"{train['env_steps_per_s']:.2f}"),
        (f"train: step wall time (world, learner until it listens, actor, {train['actor_steps']} steps)",
         f"{train['wall_s']:.0f} s"),
    ]  # fmt: skip


def markdown_table(rows: list[tuple[str, str]]) -> str:
    """The figures as results.md's table: a header, then one row per (figure, value)."""
    width = max(len(r[0]) for r in rows)
    table = "\n".join(f"| {name:<{width}} | {value} |" for name, value in rows)
    return f"| {'figure':<{width}} | value |\n|{'-' * (width + 2)}|-------|\n{table}"


def write_section(
    title: str, command: str, intro: str, rows: list[tuple[str, str]], after: str = "", stamp: str = "", on: str = ""
) -> None:
    """A table of figures as its own section of results.md, replacing the previous one of that title; stamped with
    the time and machine it is written on, or with those of the records it shows (`stamp`, `on`)."""
    stamp = stamp or utc_stamp()
    head = f"{title} (`{command}`, {stamp})\n\nMachine: {on or machine()}"
    section = f"{head}\n\n{intro}\n\n{markdown_table(rows)}\n{after}"
    old = RESULTS.read_text() if RESULTS.exists() else ""
    start = old.find("\n" + title)
    if start < 0:
        RESULTS.write_text(old.rstrip("\n") + "\n\n" + section)
    else:
        end = old.find("\n## ", start + 1)
        RESULTS.write_text(old[: start + 1] + section + (old[end:] if end >= 0 else ""))
    print(f"written to {RESULTS} ({title})")


def write_pipeline(rows: list[tuple[str, str]]) -> None:
    intro = (
        "HIL-SERL's own scripts, unaltered, through `scripts/hil_serl.py` for ram_insertion with the scripted expert, "
        "from nothing running (HIL-SERL's environment built, no world, an empty experiment directory); each step "
        "starts and stops its world."
    )
    write_section(PIPELINE_SECTION, "make bench-pipeline", intro, rows)


CPU_SECTION = "## A world without cameras: its CPU against its physics"
CPU_INTRO = (
    f"The {WORLD_CPU_TASK} world (its task file on free ports, no cameras) as `make sim` runs it, idle (no client at "
    "all) and under HIL-SERL's actor's load (a client process: per 10 Hz step clearerr, pose, getstate, GET /task, "
    "beside the long polls of the virtual SpaceMouse and keyboard), against the same world's physics + controller "
    "ticks in process (unpaced; their CPU as % of one core at real time). CPU from /proc over the run (% of one core)."
)
LEARNING = Path(__file__).with_name("learning")  # one record per run, <experiment>-<seed>.json, and its curve
LEARNING_EXPERIMENTS = ("ram_insertion_state", "usb_pickup_insertion_state", "object_handover_state")


def learning_section(experiment: str) -> str:
    return f"## HIL-SERL learning {experiment.removesuffix('_state')} from the state"


def learning_records(experiment: str) -> list[Path]:
    """benchmarks/learning/<experiment>-<seed>.json, by seed (run 10 after run 9)."""
    return sorted(LEARNING.glob(f"{experiment}-[0-9]*.json"), key=lambda p: int(p.stem.rsplit("-", 1)[1]))


def learning(args) -> tuple[list[tuple[str, str]], str]:
    """scripts/hil_serl.py EXPERIMENT loop once per seed, each from nothing (an empty experiment directory, its own
    world): each run's record into benchmarks/learning/, one curve of all runs, a table of their figures."""
    LEARNING.mkdir(exist_ok=True)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    for seed in range(1, args.runs + 1) if args.runs else args.seeds:
        directory = ROOT / "runs" / f"{args.experiment}-bench-{stamp}-seed{seed}"
        flags = ("--minutes", f"{args.learning_minutes:g}", "--seed", str(seed), *args.loop_args)
        pipeline_step(directory, "loop", *flags, task=args.experiment)
        logs = sorted((directory / "logs").glob("loop-*"))[-1]
        shutil.copyfile(logs / "loop.json", LEARNING / f"{args.experiment}-{seed}.json")
    return learning_table(args.experiment)


def named_fresh(record: dict) -> list[dict]:
    """The named checkpoint's fresh episodes (its last confirmation of sampled actions)."""
    step = record["named"]["step"]
    runs = [c for c in record["confirmations"] if c["step"] == step and not c.get("argmax")]
    return [e for c in runs[-1:] for e in c["episodes"]]


def fresh_failures(record: dict, shown: int = 3) -> str:
    """The ground truth's detail at the end of the named checkpoint's fresh episodes that did not succeed."""
    details = [e["detail"] for e in named_fresh(record) if not e["success"]]
    more = f"; and {len(details) - shown} more" if len(details) > shown else ""
    return "; ".join(details[:shown]) + more if details else "none"


def training_minutes(record: dict) -> str:
    """The minutes a loop trained, of those it was given, and its wall minutes (evaluations included): all of them,
    or where the runner stopped it (the record's `ended`), or where fresh episodes confirmed --until, which stops
    training as the confirming evaluation begins (the record's last pause)."""
    given, wall = f"{record['minutes']:g}", f"{record.get('wall_minutes', 0):.0f}"
    if "stopped_at_minute" in record:
        return f"{record['stopped_at_minute']:g} of {given}, stopped ({wall}): the record's `ended`"
    if record.get("until") and record["fresh"]["rate"] >= record["until"]:
        return f"{record['pauses'][-1]['minutes']:g} of {given}, --until met ({wall})"
    return f"{given} ({wall})"


def training_episodes(record: dict) -> list[tuple[str, str]]:
    """The row of the expert's training episodes (records from 2026-12-04 on keep them): how many ended in success,
    how many the policy finished alone, and with --stalled how often a stall ended the policy's turn."""
    train = record.get("train") or {}
    if "expert_successes" not in train:
        return []
    text = (f"{train['expert_successes']}/{train['expert_episodes']} to success, {train['policy_alone_successes']} "
            "by the policy alone")  # fmt: skip
    if record.get("stalled_s"):
        text += f"; a stall ended the policy's turn {train['stalled_turns']} times, in {train['stalled_episodes']}"
    return [(f"seed {record['seed']}: training episodes (the expert's)", text)]


def placed_offsets(record: dict) -> str:
    """Where the named checkpoint's fresh episodes left the task's object (a `placed` success: GET /task's
    judgement of its frame against the task file's position), failures and successes apart: the offset of its
    frame, world axes, in mm (min..max and the median size per axis), and for an object the task file places in
    the world, how far it ended turned from that placement. '-' where the task is not placed or the episodes kept
    no end poses (records before objects_at_end)."""
    world = record.get("world") or record["experiment"].removesuffix("_state")  # records before `world`: the same
    spec = load_world(str(CONFIG / "tasks" / f"{world}.yaml"), cameras_config="none")
    success = spec.task.success
    if success.kind != "placed":
        return "-"
    placed = next((o for o in spec.objects if o.name == success.object and o.mount == "world"), None)
    ended = [(e["success"], e["objects_at_end"][success.object]) for e in named_fresh(record)
             if e.get("objects_at_end")]  # fmt: skip
    if not ended:
        return "-"
    parts = []
    for succeeded, label in ((False, "failures"), (True, "successes")):
        poses = np.array([pose for ok, pose in ended if ok == succeeded])
        if not len(poses):
            continue
        offset = 1e3 * (poses[:, :3] - np.array(success.position))
        axes = ", ".join(f"{axis} {lo:+.1f}..{hi:+.1f} (median {mid:.1f} off)" for axis, lo, hi, mid in
                         zip("xyz", offset.min(0), offset.max(0), np.median(abs(offset), 0), strict=True))  # fmt: skip
        turned = ""
        if placed is not None:
            rotation = Rotation.from_quat(poses[:, 3:7]) * Rotation.from_euler("xyz", placed.rpy).inv()
            turned = f", turned {np.degrees(rotation.magnitude()).max():.1f} deg at most"
        parts.append(f"{label} ({len(poses)}): {axes} mm{turned}")
    return "; ".join(parts)


def learning_table(experiment: str) -> tuple[list[tuple[str, str]], str]:
    """The figures of the experiment's committed records, and the curve of all of them
    (hil_serl_experiments/curve.py)."""
    paths = learning_records(experiment)
    if not paths:
        raise SystemExit(f"no record of {experiment} in {LEARNING}")
    records = [json.loads(p.read_text()) for p in paths]
    curve = LEARNING / f"{experiment}.png"
    python = ROOT / ".venv-hil-serl" / "bin" / "python"
    draw = [str(python), str(ROOT / "hil_serl_experiments" / "curve.py"), "--out", str(curve), *map(str, paths)]
    subprocess.run(draw, check=True)

    def share(entry: dict) -> str:
        low, high = entry["interval"]
        return f"{entry['successes']}/{entry['episodes']} ({100 * low:.0f}-{100 * high:.0f} %)"

    rows = []
    for r in records:
        named, actor = r["named"], r.get("actor") or {}
        bins = [b for b in r["training"] if b.get("intervention_rate") is not None]
        interventions = (
            " -> ".join(f"{100 * b['intervention_rate']:.0f} %" for b in (bins[0], bins[-1])) if bins else "-"
        )
        goal, to_goal = r.get("goal", 0.9), r.get("minutes_to_goal")
        agent, config = r.get("agent") or {}, r.get("train_config") or {}
        rows += [
            (f"seed {r['seed']}: the agent's values beyond HIL-SERL's factory's / TrainConfig values set for the run / "
             "the expert's patience (s)", " / ".join(", ".join(f"{k} {v}" for k, v in d.items()) or "none" for d in
             (agent, config)) + f" / {r.get('patience_s', '-')}"
             + "".join(f", {c['patience_s']:g} from minute {c['minutes']:.0f} (checkpoint {c['step']} alone in "
                       f"{100 * c['rate']:.0f} %)" for c in r.get("patience_changes", []))
             + (f" (--patience-grows {' '.join(f'{a:g}:{b:g}' for a, b in r['patience_grows'])}"
                f"{'' if r.get('patience_changes') else ': not reached while training'})"
                if r.get("patience_grows") else "")
             + (f", handing back after {r['hand_back_s']:g}" if r.get("hand_back_s") else "")
             + (f", stepping in once the arms were still {r['stalled_s']:g}" if r.get("stalled_s") else "")
             + (f", waiting up to {r['holding_s']:g} more while the policy held the object" if r.get("holding_s")
                else "")),
            (f"seed {r['seed']}: training minutes (wall minutes, evaluations included)",
             training_minutes(r)),
            (f"seed {r['seed']}: named checkpoint (minute; chosen on {len(r['checkpoints'][0]['episodes'])} selection "
             "episodes per checkpoint)", f"{named['step']} ({named['minutes']:.1f} min)"),
            (f"seed {r['seed']}: the named one on fresh episodes (95 % interval)", share(r["fresh"])),
            (f"seed {r['seed']}: the last checkpoint on fresh episodes", share(r["last_fresh"])),
            (f"seed {r['seed']}: the named one's mode (argmax) on fresh episodes",
             share(r["mode"]) if r.get("mode") else "-"),
            (f"seed {r['seed']}: training minutes to the first checkpoint >= {100 * goal:.0f} % confirmed on fresh "
             "episodes", f"{to_goal:.1f}" if to_goal is not None else "none"),
            (f"seed {r['seed']}: learner steps/s; actor env steps/s within episodes (period p50/p99 ms)",
             f"{r.get('learner_steps_per_s')}; {actor.get('env_steps_per_s', '-')} ({actor.get('period_p50_ms', '-')}"
             f"/{actor.get('period_p99_ms', '-')})"),
            (f"seed {r['seed']}: intervention rate, first -> last 5 training minutes", interventions),
            *training_episodes(r),
            (f"seed {r['seed']}: where the named one's fresh episodes without success ended (ground truth)",
             fresh_failures(r)),
            (f"seed {r['seed']}: where they left the object, its frame from where it belongs (world axes, mm)",
             placed_offsets(r)),
        ]  # fmt: skip
    goals = {r.get("goal", 0.9) for r in records}
    goal = f"{100 * min(goals):.0f} %" if len(goals) == 1 else "the goal"
    reached = sorted(r["minutes_to_goal"] for r in records if r.get("minutes_to_goal") is not None)
    median = (
        f"{np.median(reached):.1f}" if len(reached) == len(records) else f"{len(reached)} of {len(records)} reached"
    )
    rows.append((f"median training minutes to a confirmed >= {goal} checkpoint", median))
    after = f"\n![learning curves](learning/{curve.name})\n\nRecords (every evaluation episode): " + ", ".join(
        f"[{p.name}](learning/{p.name})" for p in paths
    )
    return rows, after + "\n"


def write_learning(experiment: str, rows: list[tuple[str, str]], after: str) -> None:
    intro = (
        "HIL-SERL's own train_rlpd.py (its learner, actor, agent, RLPD's 50/50 demo sampling, agentlace), "
        f"unaltered, on the state-based {experiment.removesuffix('_state')} (`hil_serl_experiments/`, "
        "docs/learning.md), each run from an empty experiment directory and its own world: "
        f"`scripts/hil_serl.py {experiment} loop --seed N`. Success is the simulator's ground truth. Minutes are "
        "training minutes from the first demo; the loop's evaluations pause the training and are not counted. "
        "Selection episodes choose the named checkpoint; fresh episodes (other seeds) confirm it."
    )
    command = "make bench-learning"
    command += "" if experiment == LEARNING_EXPERIMENTS[0] else f" ARGS='--experiment {experiment}'"
    write_section(learning_section(experiment), command, intro, rows, after)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ticks", type=int, default=20000, help="physics ticks for the capacity figure")
    parser.add_argument("--seconds", type=float, default=10.0, help="wall time for the real-time factor")
    parser.add_argument("--requests", type=int, default=500, help="/getstate requests")
    parser.add_argument("--no-write", action="store_true", help=f"do not rewrite {RESULTS.name}")
    parser.add_argument("--no-cameras", action="store_true", help="skip the run with cameras")
    parser.add_argument("--cameras-only", action="store_true", help="only the run with cameras")
    parser.add_argument("--tasks", nargs="*", default=list(TASKS), help="experiment worlds to run (default: all)")
    parser.add_argument("--task-divisor", type=int, default=1, help="camera_render_divisor of the task runs")
    parser.add_argument("launch_args", nargs="*", help="sim.launch.py arguments (name:=value) for every run")
    parser.add_argument("--steps", type=int, default=300, help="steps of the stock env's observation run")
    parser.add_argument("--observation-only", action="store_true", help="only the stock env's observation run")
    parser.add_argument("--camera-client", nargs=2, metavar=("URL", "SECONDS"), help=argparse.SUPPRESS)
    parser.add_argument("--stock-client", nargs=3, metavar=("URL", "BARE_URL", "STEPS"), help=argparse.SUPPRESS)
    parser.add_argument("--bare-flask", type=int, metavar="PORT", help=argparse.SUPPRESS)
    parser.add_argument("--world-client", nargs=2, metavar=("URL", "SECONDS"), help=argparse.SUPPRESS)
    parser.add_argument(
        "--cpu-only", action="store_true", help=f"only the CPU of the {WORLD_CPU_TASK} world against its physics"
    )
    parser.add_argument("--cpu-seconds", type=float, default=20.0, help="CPU measurements: seconds each")
    parser.add_argument("--pipeline-only", action="store_true", help="only HIL-SERL's ram_insertion pipeline (7.)")
    parser.add_argument("--pipeline-successes", type=int, default=60, help="pipeline: success transitions")
    parser.add_argument("--pipeline-classifier", type=int, nargs=2, default=(100, 128), metavar=("EPOCHS", "BATCH"),
                        help="pipeline: the classifier's epochs and batch size")  # fmt: skip
    parser.add_argument("--pipeline-demos", type=int, default=5, help="pipeline: demos to record")
    parser.add_argument("--pipeline-steps", type=int, default=300, help="pipeline: actor steps beside the learner")
    parser.add_argument("--learning-only", action="store_true", help="only HIL-SERL learning from the state (8.)")
    parser.add_argument("--experiment", choices=LEARNING_EXPERIMENTS, default=LEARNING_EXPERIMENTS[0],
                        help="learning: the state experiment (default ram_insertion_state)")  # fmt: skip
    parser.add_argument("--learning-minutes", type=float, default=60.0, help="learning: training minutes per run")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3], help="learning: one run per seed")
    parser.add_argument("--runs", type=int, help="learning: N runs, seeds 1 to N (in place of --seeds)")
    parser.add_argument("--loop-args", nargs=argparse.REMAINDER, default=[], help="learning: more loop options")
    parser.add_argument("--learning-table", action="store_true", help="learning: the table of the committed records")
    args = parser.parse_args()
    if args.camera_client:  # the client process of the run with cameras
        print(json.dumps(camera_client(args.camera_client[0], float(args.camera_client[1]))))
        return 0
    if args.stock_client:  # the stock env of the observation run
        url, bare_url, steps = args.stock_client
        print(json.dumps(stock_client(url, bare_url, int(steps))))
        return 0
    if args.bare_flask:  # the floor of the observation run
        bare_flask(args.bare_flask)
        return 0
    if args.world_client:  # the stock client's load of the CPU run
        print(json.dumps(world_client(args.world_client[0], float(args.world_client[1]))))
        return 0

    if args.learning_only or args.learning_table:
        rows, after = learning(args) if args.learning_only else learning_table(args.experiment)
        print("\n" + markdown_table(rows) + "\n" + after)
        if not args.no_write:
            write_learning(args.experiment, rows, after)
        return 0
    if args.pipeline_only:
        rows = pipeline(args)
        print("\n" + markdown_table(rows))
        if not args.no_write:
            write_pipeline(rows)
        return 0
    f = lambda pair, unit: f"{pair[0]:.2f} {unit} / {pair[1]:.2f} {unit}"  # noqa: E731
    if args.cpu_only:
        print(f"the {WORLD_CPU_TASK} world's CPU, idle and under the stock client, against its physics ...", flush=True)
        rows = world_cpu_rows(world_cpu(args.cpu_seconds, args.ticks), f)
        print("\n" + markdown_table(rows))
        if not args.no_write:
            write_section(CPU_SECTION, "make bench ARGS=--cpu-only", CPU_INTRO, rows)
        return 0
    rows = []
    if args.observation_only:
        args.cameras_only, args.no_cameras, args.tasks = True, True, []
    if not args.no_cameras or args.observation_only:
        print(f"the stock env's observation: {args.steps} steps at 10 Hz with both wrist cameras ...", flush=True)
        rows += observation_rows(product_observation(args.steps, tuple(args.launch_args)), f)
    if not args.cameras_only:
        rows += product_rows(args, f)
        print(f"the {WORLD_CPU_TASK} world's CPU, idle and under the stock client, against its physics ...", flush=True)
        rows += world_cpu_rows(world_cpu(args.cpu_seconds, args.ticks), f)
        print("two robots in one world (dual_arm), cameras off ...", flush=True)
        cap = physics_capacity(args.ticks, str(CONFIG / "tasks" / "dual_arm.yaml"))
        rows.append(("two robots: physics + controllers tick (median / p99)", f(cap["tick_us"], "us")))
        rows += two_robot_rows(product_two_robots(args.seconds, args.requests // 2), f)
    if not args.no_cameras:
        print(
            "the product with both wrist cameras (1280x720 @ 15 fps) read through the pyrealsense2 API by a client",
            flush=True,
        )
        rows += camera_rows(product_with_cameras(max(args.seconds, 5.0), tuple(args.launch_args)), f)
    for name in args.tasks:
        print(f"the {name} world with all its cameras read by a client ...", flush=True)
        run = product_task(name, max(args.seconds, 5.0), args.task_divisor, tuple(args.launch_args))
        rows += task_rows(name, run, args.task_divisor, f)
    stamp = utc_stamp()
    text = f"# Benchmark results\n\n`make bench`, {stamp}\n\nMachine: {machine()}\n\n{markdown_table(rows)}\n"
    print("\n" + text)
    partial = args.observation_only or args.cameras_only or args.no_cameras or set(args.tasks) != set(TASKS)
    if args.no_write or partial:
        print(f"({RESULTS.name} not rewritten: {'--no-write' if args.no_write else 'a partial run'})")
        return 0
    RESULTS.write_text(text + notes_of(RESULTS))
    print(f"written to {RESULTS}")
    return 0


NOTES = "\n## "  # results.md: what follows the generated table (measurements by hand, before/after) is kept


def notes_of(path: Path) -> str:
    """The sections after the generated table of `path` ('' when none)."""
    old = path.read_text() if path.exists() else ""
    at = old.find(NOTES)
    return "\n" + old[at + 1 :] if at >= 0 else ""


if __name__ == "__main__":
    sys.exit(main())
