"""The simulated gripper really grasps: pick a cube, lift it 10 cm, drop it, with both gripper types
(Robotiq 2F-85 and Franka hand), and an arm with none. Real sim bridge + server + MuJoCo; the cube's pose is read from
/tf, as RViz would."""

import time

import numpy as np
import pytest
from sensor_msgs.msg import JointState
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


def test_an_arm_without_a_gripper_moves_and_refuses_gripper_commands():
    """gripper_type None, as in the original server: a bare flange, no franka_gripper on the graph, and
    every gripper route answers 400 with the reason while the arm keeps working."""
    with second_robot("gripper_type:=None") as (robot, node, _):
        joint_names: list[list[str]] = []
        node.create_subscription(JointState, "/joint_states", lambda m: joint_names.append(list(m.name)), 10)
        assert wait_until(lambda: joint_names, 5.0), "no /joint_states"
        assert joint_names[-1] == [f"panda_joint{i}" for i in range(1, 8)]
        assert wait_until(lambda: "franka_sim" in node.get_node_names(), 5.0)
        assert "franka_gripper" not in node.get_node_names()
        for route, body in [
            ("open_gripper", None),
            ("close_gripper", None),
            ("close_gripper_slow", None),
            ("reset_gripper", None),
            ("activate_gripper", None),
            ("move_gripper", {"gripper_pos": 100}),
        ]:
            response = robot.post(route, json=body)
            assert response.status_code == 400, f"/{route}: {response.status_code} {response.text}"
            assert "no gripper" in response.json()["error"]
        start = robot.pose()
        target = start[:3] + np.array([0.0, 0.03, -0.02])
        move(robot, target, start[3:])
        assert robot.state()["gripper_pos"] == 0.0


def test_a_new_gripper_goal_preempts_the_active_one(robot, ros):
    """As a gripper action controller does: rapid open/close commands never queue up waiting goals
    (they used to occupy the simulator's executor threads and delay its services)."""
    from action_msgs.msg import GoalStatus
    from control_msgs.action import GripperCommand
    from rclpy.action import ActionClient

    client = ActionClient(ros, GripperCommand, "/franka_gripper/gripper_action")
    try:
        assert client.wait_for_server(timeout_sec=10.0)
        goals = []
        for position in (0.8, 0.0, 0.8, 0.0):  # Robotiq knuckle: closed, open, closed, open
            goal = GripperCommand.Goal()
            goal.command.position, goal.command.max_effort = position, 100.0
            sent = client.send_goal_async(goal)
            assert wait_until(sent.done, 5.0) and sent.result().accepted
            goals.append(sent.result())
        results = [g.get_result_async() for g in goals]
        assert wait_until(lambda: all(r.done() for r in results), 10.0)
        statuses = [r.result().status for r in results]
        assert statuses[:3] == [GoalStatus.STATUS_ABORTED] * 3, statuses
        assert statuses[3] == GoalStatus.STATUS_SUCCEEDED and results[3].result().result.reached_goal
        assert robot.state()["gripper_pos"] > 0.95  # the last command won: open
    finally:
        client.destroy()


def opening_over_time(robot, seconds: float) -> list[tuple[float, float]]:
    t0, samples = time.monotonic(), []
    while time.monotonic() - t0 < seconds:
        samples.append((time.monotonic() - t0, robot.state()["gripper_pos"]))
        time.sleep(0.02)
    return samples


def test_close_gripper_slow_closes_at_a_lower_speed_and_ends_closed(rig):
    """As the original's slow close (Robotiq speed 50 of 255; Franka grasp at 0.1 instead of 0.3 m/s)."""
    robot, _ = rig

    def half_closed_after(samples) -> float:
        return next(t for t, g in samples if g < 0.5)

    robot.ok("open_gripper")
    assert wait_until(lambda: robot.state()["gripper_pos"] > 0.95, 3.0)
    assert robot.ok("close_gripper") == "Closed"
    fast = opening_over_time(robot, 1.5)
    robot.ok("open_gripper")
    assert wait_until(lambda: robot.state()["gripper_pos"] > 0.95, 3.0)
    assert robot.ok("close_gripper_slow") == "Closed"
    slow = opening_over_time(robot, 4.0)
    assert slow[-1][1] < 0.05, "a slow close still closes fully"
    assert half_closed_after(slow) > 2.0 * half_closed_after(fast), (half_closed_after(slow), half_closed_after(fast))
    robot.ok("open_gripper")
    assert wait_until(lambda: robot.state()["gripper_pos"] > 0.95, 3.0)
