"""The simulated gripper really grasps: pick a cube, lift it 10 cm, drop it, with both gripper types
(Robotiq 2F-85 and Franka hand). Real sim bridge + server + MuJoCo; the cube's pose is read from
/tf, as RViz would."""

import time

import numpy as np
import pytest
from tf2_msgs.msg import TFMessage

from isaac_franka_bridge.controller import DEFAULT_COMPLIANCE

from conftest import second_robot, wait_until


@pytest.fixture(params=["Robotiq", "Franka"], scope="module")
def rig(request, sim, ros):
    """(robot over HTTP, a ROS node on its domain) for the gripper type."""
    if request.param == "Robotiq":  # the session's simulation
        yield sim[0], ros
        return
    with second_robot("gripper_type:=Franka") as (robot, node, _):
        yield robot, node


@pytest.fixture()
def cube(rig):
    robot, node = rig
    robot.ok("update_param", DEFAULT_COMPLIANCE)
    robot.ok("jointreset")
    poses: dict[str, np.ndarray] = {}

    def on_tf(msg: TFMessage) -> None:
        for t in msg.transforms:
            if t.child_frame_id == "cube":
                p = t.transform.translation
                poses["cube"] = np.array([p.x, p.y, p.z])

    subscription = node.create_subscription(TFMessage, "/tf", on_tf, 10)
    assert wait_until(lambda: "cube" in poses, 10.0), "no cube frame on /tf"
    yield lambda: poses["cube"].copy()
    node.destroy_subscription(subscription)


def move(robot, position, quat, tolerance=0.004, timeout=10.0) -> None:
    robot.ok("pose", {"arr": [*position, *quat]})
    reached = wait_until(lambda: np.linalg.norm(robot.pose()[:3] - position) < tolerance, timeout)
    mode = robot.session.get(robot.url + "health").json()["robot_mode"]
    assert reached, f"at {robot.pose()[:3]}, target {position}, robot mode {mode}"


def test_pick_lift_and_drop_a_cube(rig, cube):
    robot, _ = rig
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
    assert 0.2 < closed < 0.85, f"fingers should stop on the 4 cm cube, gripper_pos {closed}"
    move(robot, np.array([start[0], start[1], start[2] + 0.10]), quat, tolerance=0.006)
    lifted = cube()
    assert lifted[2] - start[2] > 0.085, f"the cube stayed behind: {lifted}"
    assert robot.ok("open_gripper") == "Opened"
    assert wait_until(lambda: cube()[2] < start[2] + 0.005, 3.0), f"the cube did not drop: {cube()}"
    assert wait_until(lambda: robot.state()["gripper_pos"] > 0.85, 3.0)


def test_move_gripper_takes_a_0_to_255_position_and_reports_it(rig):
    robot, _ = rig
    assert robot.ok("move_gripper", {"gripper_pos": 128}) == "Moved Gripper"
    assert wait_until(lambda: abs(robot.state()["gripper_pos"] - (1 - 128 / 255)) < 0.05, 3.0)
    assert robot.ok("move_gripper", {"gripper_pos": 999}) == "Moved Gripper"  # clipped to 255, as the original
    assert wait_until(lambda: robot.state()["gripper_pos"] < 0.05, 3.0)
    assert robot.ok("reset_gripper") == "Reset"
    assert wait_until(lambda: robot.state()["gripper_pos"] > 0.95, 3.0)
