"""The scripted experts (clients/scripted_expert) take each task from its experiment's reset to the
ground truth's success, as a person with a SpaceMouse does, through an emulation of HIL-SERL's stock env.

Per task: the world of config/tasks/ launched on free ports (test_tasks.task_world), the experiment's reset
sequence (stock_env.py), then the expert posting SpaceMouse states to the server's /spacemouse while an
emulated env steps at 10 Hz. The env reads the virtual SpaceMouse through the easyhid stand-in
(clients/virtual_spacemouse), decodes its reports with test_virtual_spacemouse's decoder, makes the action
as SpaceMouseExpert does ([-y, x, z, -roll, -pitch, -yaw]), puts it in place of the policy's (zeros) as
SpacemouseIntervention does (left button: gripper -1, right: +1; none for GripperCloseEnv), and applies it
as FrankaEnv.step does (relative to the measured pose, ACTION_SCALE, ABS_POSE_LIMIT, the binary gripper
with its sleeps). Real launch, real ROS 2, real HTTP, real MuJoCo. Written from those facts, not copied.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.transform import Rotation
from stock_env import (
    HANDOVER_GRIPPER_INTERVAL,
    HANDOVER_GRIPPER_SLEEP,
    HANDOVER_LEFT,
    HANDOVER_RIGHT,
    HZ,
    PICK_CUBE,
    RAM_INSERTION,
    USB_PICKUP_INSERTION,
    StockEnv,
    handoff_clip_safety_box,
    handover_reset,
    ram_reset,
    usb_reset,
)
from test_tasks import task_world, truth
from test_virtual_spacemouse import Decoded

ROOT = Path(__file__).resolve().parent.parent
EXPERT_DIR = ROOT / "clients" / "scripted_expert"
sys.path.insert(0, str(EXPERT_DIR))
sys.path.insert(0, str(ROOT / "clients" / "virtual_spacemouse"))

from scripted_expert.experts import EXPERTS, ExpertBlocked  # noqa: E402
from virtual_spacemouse import easyhid  # noqa: E402

GRIPPER_SLEEP = 0.6  # DefaultEnvConfig.GRIPPER_SLEEP


class SpaceMice:
    """SpaceMouseExpert's reading, in a thread of this process (it forks a process): the virtual devices
    found through easyhid, their reports decoded, the latest action and buttons of all of them."""

    def __init__(self) -> None:
        self.devices = easyhid.Enumeration().find(vid=0x256F, pid=0xC62E)
        assert self.devices, "no virtual SpaceMouse found"
        self.decoded = [Decoded() for _ in self.devices]
        for device in self.devices:
            device.open()
            device.set_nonblocking(True)
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            for device, decoded in zip(self.devices, self.decoded, strict=True):
                data = device.read(13)
                if data:
                    with self._lock:
                        decoded.feed(data)

    def get_action(self) -> tuple[np.ndarray, list[int]]:
        """[-y, x, z, -roll, -pitch, -yaw] per device, and the buttons of all, as SpaceMouseExpert.get_action."""
        with self._lock:
            action, buttons = [], []
            for d in self.decoded:
                v = d.values
                action += [-v["y"], v["x"], v["z"], -v["roll"], -v["pitch"], -v["yaw"]]
                buttons += d.buttons
        return np.array(action), buttons

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2)
        for device in self.devices:
            device.close()


@dataclass
class EnvArm:
    """FrankaEnv.step of one arm over StockEnv's HTTP calls."""

    env: StockEnv
    gripper_sleep: float = GRIPPER_SLEEP
    gripper_interval: float | None = None  # HandOffEnv: 2 s between gripper commands; FrankaEnv: gripper_sleep
    handoff_clip: bool = False
    last_gripper: float = field(default_factory=time.time)  # reset() sets it
    gripper_commands: list[str] = field(default_factory=list)

    def send_gripper(self, pos: float) -> None:
        """The binary gripper: close below -0.5 when it reads open (> 0.85), open above 0.5 when it reads
        closed (< 0.85), not sooner than the interval after the last command; then sleep."""
        opening = self.env.state["gripper_pos"]
        interval = self.gripper_sleep if self.gripper_interval is None else self.gripper_interval
        if time.time() - self.last_gripper <= interval:
            return
        route = None
        if pos <= -0.5 and opening > 0.85:
            route = "close_gripper"
        elif pos >= 0.5 and opening < 0.85:
            route = "open_gripper"
        if route is not None:
            self.env.robot.ok(route)
            self.gripper_commands.append(route)
            self.last_gripper = time.time()
            time.sleep(self.gripper_sleep)

    def step(self, action: np.ndarray) -> None:
        start = time.time()
        action = np.clip(action, -1.0, 1.0)
        scale = self.env.config.action_scale
        nextpos = self.env.currpos.copy()
        nextpos[:3] += action[:3] * scale[0]
        nextpos[3:] = (
            Rotation.from_euler("xyz", action[3:6] * scale[1]) * Rotation.from_quat(self.env.currpos[3:])
        ).as_quat()
        self.send_gripper(action[6] * scale[2])
        clip = (lambda p: handoff_clip_safety_box(self.env, p)) if self.handoff_clip else self.env.clip_safety_box
        self.env._send_pos_command(clip(nextpos))
        time.sleep(max(0.0, 1.0 / HZ - (time.time() - start)))
        self.env._update_currpos()


def intervene(mice: SpaceMice, policy: np.ndarray, grippers: bool) -> tuple[np.ndarray, bool]:
    """(Dual)SpacemouseIntervention.action: the expert's action where the SpaceMouse is moved or a button is
    pressed (left: close, -1..-0.9; right: open, 0.9..1; GripperCloseEnv: no gripper), else the policy's."""
    expert, buttons = mice.get_action()
    intervened = bool(np.linalg.norm(expert) > 0.001)
    if not grippers:
        return (expert, True) if intervened else (policy, False)
    parts = []
    for i in range(len(expert) // 6):
        left, right = buttons[2 * i], buttons[2 * i + 1]
        grip = -np.random.uniform(0.9, 1.0) if left else np.random.uniform(0.9, 1.0) if right else 0.0
        intervened |= bool(left or right)
        parts += [expert[6 * i : 6 * i + 6], [grip]]
    return (np.concatenate(parts), True) if intervened else (policy, False)


def run_episode(
    name,
    robots,
    arms: list[EnvArm],
    grippers: bool,
    max_steps: int,
    reopen: bool = False,
    cli: bool = False,
    options: tuple[str, ...] = (),
) -> dict:
    """The expert (a thread of this process, or `python -m scripted_expert` with `cli`) against the emulated
    env stepping at 10 Hz with a zero policy, until the expert is done (it stops once the ground truth says
    success, some a little deeper in) or `max_steps`; then the ground truth."""
    urls = [r.url for r in robots]
    mice = SpaceMice()
    log: list[str] = []
    if cli:
        command = [sys.executable, "-m", "scripted_expert", "--task", name, "--timeout", str(max_steps / HZ + 30)]
        command += [a for url in urls for a in ("--url", url)] + (["--reopen-robotiq"] if reopen else [])
        command += list(options)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(EXPERT_DIR), os.environ.get("PYTHONPATH", "")])}
        process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        running, stop = (lambda: process.poll() is None), process.terminate
    else:
        expert = EXPERTS[name](urls, reopen_robotiq=reopen, log=log.append)
        thread = threading.Thread(target=expert.run, kwargs={"timeout": max_steps / HZ + 30})
        thread.start()
        running, stop = thread.is_alive, expert.stopped.set
    steps, interventions, start, first_success = 0, 0, time.monotonic(), None
    try:
        for arm in arms:
            arm.last_gripper = time.time()  # FrankaEnv.reset() sets it
        while steps < max_steps and running():  # the expert stops once its work is done (success, settled)
            policy = np.zeros(7 * len(arms) if grippers else 6)
            action, replaced = intervene(mice, policy, grippers)
            interventions += replaced
            if not grippers:
                action = np.concatenate([action, [0.0]])  # GripperCloseEnv
            if len(arms) == 1:
                arms[0].step(action)
            else:  # DualFrankaEnv: each half to its arm, stepped together
                workers = [
                    threading.Thread(target=a.step, args=(action[7 * i : 7 * i + 7],)) for i, a in enumerate(arms)
                ]
                for w in workers:
                    w.start()
                for w in workers:
                    w.join()
            steps += 1
            if first_success is None and truth(robots[0])["success"]:
                first_success = steps
        success = truth(robots[0])
    finally:
        if cli:
            try:
                log += process.communicate(timeout=10)[0].splitlines()  # it ends by itself on success
            except subprocess.TimeoutExpired:
                stop()
                log += process.communicate()[0].splitlines()
        else:
            stop()  # on success it has stopped by itself
            thread.join(10)
        mice.close()
    outcome = {
        "success": success["success"],
        "detail": success["detail"],
        "first_success": first_success,  # the step at which the ground truth first said success
        "steps": steps,
        "interventions": interventions,
        "seconds": round(time.monotonic() - start, 1),
        "phases": log,
        "gripper": [c for a in arms for c in a.gripper_commands],
    }
    if cli:
        outcome["exit"] = process.returncode
    print(f"\n{name}: {outcome}")
    return outcome


@pytest.mark.parametrize("scale", [1e-5, 1e-4, 1.5e-3])
def test_a_fine_correction_still_reads_as_an_intervention(scale):
    """A motion smaller than the device can report would read as the cap at rest, and the env would hand the
    step to the policy: the expert deflects at least one count, in the motion's direction."""
    from scripted_expert.motion import action_of, axes_for
    from test_virtual_spacemouse import decode
    from virtual_spacemouse.report import motion_report

    wanted = scale * np.array([0.6, -0.8, 0.0, 0.0, 0.0, 0.0])
    got = action_of(decode(motion_report(axes_for(wanted))).axes)
    assert np.linalg.norm(got) > 0.001  # SpacemouseIntervention's threshold
    assert np.dot(got[:2], wanted[:2]) > 0.9 * np.linalg.norm(got[:2]) * np.linalg.norm(wanted[:2])
    assert axes_for(np.zeros(6)) == [0.0] * 6  # at rest stays at rest


@pytest.fixture()
def devices_of(monkeypatch):
    """The virtual SpaceMice: one per given server, in that order."""

    def set_urls(robots) -> None:
        monkeypatch.setenv("FRANKA_SIM_SPACEMOUSE_URLS", ",".join(r.url for r in robots))

    return set_urls


def test_ram_insertion_expert_seats_the_stick_from_the_experiments_random_resets(devices_of):
    """Three episodes: RAMEnv.reset (random x, y within 2 cm, yaw within 0.05 rad, pitched 0.05 rad) pulls
    the stick out of the slot again each time; each is seated within the experiment's MAX_EPISODE_LENGTH.
    The third by `python -m scripted_expert --patience 1.5`: the (zero) policy acts alone for 1.5 s, then
    the expert steps in, as a person does in training."""
    with task_world("ram_insertion") as (clients, _):
        robot = clients[""]
        devices_of([robot])
        env = StockEnv(robot, RAM_INSERTION, np.random.default_rng(7))
        for _ in range(2):
            ram_reset(env)
            assert not truth(robot)["success"]
            result = run_episode("ram_insertion", [robot], [EnvArm(env)], grippers=False, max_steps=100)
            assert result["success"] and result["first_success"], result
            assert result["interventions"] >= result["steps"] - 2  # the expert's, from its first input on
        ram_reset(env)
        result = run_episode(
            "ram_insertion", [robot], [EnvArm(env)], False, max_steps=100, cli=True, options=("--patience", "1.5")
        )
        assert result["success"] and result["exit"] == 0, result
        # the policy's steps: the command's start-up and 1.5 s at 10 Hz, then the expert's (some of them, near the
        # goal, below the env's 0.001 that counts as an intervention)
        assert result["steps"] - result["interventions"] >= 15 and result["interventions"] >= 5, result
        said = re.compile(r"episode 1: success after [\d.]+ s, \d+ ticks of intervention from 1\.[5-9] s on")
        assert any(said.search(line) for line in result["phases"]), result["phases"]


def test_usb_expert_picks_the_dropped_stick_up_and_plugs_it_in(devices_of):
    """Two episodes, the second by `python -m scripted_expert`, with a SpaceMouse alone. USBEnv's reset
    grasps the plugged stick, pulls it out and drops it on the platform, leaving the Robotiq open (reads
    above 0.85, as on the set-up behind HIL-SERL's results), so the stock env closes it on the left button;
    after a success the next reset opens it, takes the stick out again and drops it."""
    with task_world("usb_pickup_insertion") as (clients, _):
        robot = clients[""]
        devices_of([robot])
        env = StockEnv(robot, USB_PICKUP_INSERTION, np.random.default_rng(1))
        usb_reset(env)
        assert not truth(robot)["success"]
        assert robot.state()["gripper_pos"] > 0.85
        result = run_episode("usb_pickup_insertion", [robot], [EnvArm(env)], grippers=True, max_steps=120)
        assert result["success"] and result["first_success"], result
        assert result["gripper"] == ["close_gripper"]  # one grasp, by the left button
        usb_reset(env)  # takes the stick out again: its open, then its close on the plugged stick
        dropped = truth(robot)
        assert not dropped["success"] and float(dropped["values"]["error_m"]) > 0.02, dropped["detail"]
        result = run_episode("usb_pickup_insertion", [robot], [EnvArm(env)], grippers=True, max_steps=120, cli=True)
        assert result["success"] and result["first_success"] and result["exit"] == 0, result


def test_with_the_published_robotiq_open_the_usb_expert_needs_reopen_robotiq(devices_of):
    """robotiq_open_position:=175 (the published server's): USBEnv's reset leaves the Robotiq reading 0.31,
    which the stock env never closes again. With a SpaceMouse alone the expert is stuck, and says so; with
    --reopen-robotiq it opens the gripper fully first (/move_gripper 0) and plugs the stick in."""
    with task_world("usb_pickup_insertion", "robotiq_open_position:=175") as (clients, _):
        robot = clients[""]
        devices_of([robot])
        env = StockEnv(robot, USB_PICKUP_INSERTION, np.random.default_rng(1))
        usb_reset(env)
        assert robot.state()["gripper_pos"] < 0.85
        with pytest.raises(ExpertBlocked, match="reopen-robotiq"):
            EXPERTS["usb_pickup_insertion"]([robot.url], log=lambda m: None).run(timeout=5)
        result = run_episode("usb_pickup_insertion", [robot], [EnvArm(env)], grippers=True, max_steps=120, reopen=True)
        assert result["success"] and result["first_success"], result


def test_pick_cube_expert_lifts_the_cube(devices_of):
    with task_world("pick_cube") as (clients, _):
        robot = clients[""]
        devices_of([robot])
        env = StockEnv(robot, PICK_CUBE)
        env.reset()
        result = run_episode("pick_cube", [robot], [EnvArm(env)], grippers=True, max_steps=100)
        assert result["success"] and result["first_success"], result
        assert result["gripper"] == ["close_gripper"]


def test_object_handover_expert_hands_the_bar_from_the_left_arm_to_the_right(devices_of):
    with task_world("object_handover") as (clients, _):
        left, right = clients["left"], clients["right"]
        devices_of([left, right])  # DualSpacemouseIntervention: the left arm's SpaceMouse first
        envs = [StockEnv(left, HANDOVER_LEFT), StockEnv(right, HANDOVER_RIGHT)]
        workers = [threading.Thread(target=handover_reset, args=(e,)) for e in envs]  # DualFrankaEnv.reset
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        arms = [EnvArm(e, HANDOVER_GRIPPER_SLEEP, HANDOVER_GRIPPER_INTERVAL, handoff_clip=True) for e in envs]
        result = run_episode("object_handover", [left, right], arms, grippers=True, max_steps=200)
        assert result["success"] and result["first_success"], result


def test_egg_flip_has_no_expert_and_says_why():
    with pytest.raises(ExpertBlocked, match="docs/tasks.md"):
        EXPERTS["egg_flip"](["http://127.0.0.2:5000/"])
    env = {**os.environ, "PYTHONPATH": str(EXPERT_DIR)}
    run = subprocess.run(
        [sys.executable, "-m", "scripted_expert", "--task", "egg_flip"], env=env, capture_output=True, text=True
    )
    assert run.returncode == 2 and "no scripted expert" in run.stderr and "Known limit" in run.stderr
