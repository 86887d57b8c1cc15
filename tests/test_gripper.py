"""The simulated gripper really grasps: pick a cube, lift it 10 cm, drop it (Robotiq 2F-85).
Real sim bridge + server + MuJoCo; the cube's pose is read from /tf, as RViz would."""

import time

import numpy as np
import pytest
from tf2_msgs.msg import TFMessage

from conftest import wait_until


@pytest.fixture()
def cube(ros):
    poses: dict[str, np.ndarray] = {}

    def on_tf(msg: TFMessage) -> None:
        for t in msg.transforms:
            if t.child_frame_id == "cube":
                p = t.transform.translation
                poses["cube"] = np.array([p.x, p.y, p.z])

    subscription = ros.create_subscription(TFMessage, "/tf", on_tf, 10)
    assert wait_until(lambda: "cube" in poses, 10.0), "no cube frame on /tf"
    yield lambda: poses["cube"].copy()
    ros.destroy_subscription(subscription)


def move(robot, position, quat, tolerance=0.004, timeout=10.0) -> None:
    robot.ok("pose", {"arr": [*position, *quat]})
    reached = wait_until(lambda: np.linalg.norm(robot.pose()[:3] - position) < tolerance, timeout)
    mode = robot.session.get(robot.url + "health").json()["robot_mode"]
    assert reached, f"at {robot.pose()[:3]}, target {position}, robot mode {mode}"


def test_pick_lift_and_drop_a_cube(robot, cube):
    assert robot.ok("activate_gripper") == "Activated"
    robot.ok("open_gripper")
    assert wait_until(lambda: robot.state()["gripper_pos"] > 0.85, 3.0)
    quat = robot.pose()[3:]
    start = cube()
    move(robot, np.array([start[0], start[1], 0.15]), quat)
    move(robot, np.array([start[0], start[1], start[2]]), quat)
    assert robot.ok("close_gripper") == "Closed"
    time.sleep(1.0)
    closed = robot.state()["gripper_pos"]
    assert 0.2 < closed < 0.85, f"fingers should stop on the cube, gripper_pos {closed}"
    move(robot, np.array([start[0], start[1], start[2] + 0.10]), quat, tolerance=0.006)
    lifted = cube()
    assert lifted[2] - start[2] > 0.09, f"the cube stayed behind: {lifted}"
    assert robot.ok("open_gripper") == "Opened"
    assert wait_until(lambda: cube()[2] < start[2] + 0.005, 3.0), f"the cube did not drop: {cube()}"
    assert robot.state()["gripper_pos"] > 0.85


def test_move_gripper_takes_a_robotiq_position_and_reports_it(robot):
    assert robot.ok("move_gripper", {"gripper_pos": 128}) == "Moved Gripper"
    assert wait_until(lambda: abs(robot.state()["gripper_pos"] - (1 - 128 / 255)) < 0.05, 3.0)
    assert robot.ok("move_gripper", {"gripper_pos": 999}) == "Moved Gripper"  # clipped to 255, as the original
    assert wait_until(lambda: robot.state()["gripper_pos"] < 0.05, 3.0)
    assert robot.ok("reset_gripper") == "Reset"
    assert wait_until(lambda: robot.state()["gripper_pos"] > 0.95, 3.0)
