"""Route logic in process, in milliseconds: create_app over a stand-in robot and stand-in camera feeds.

The stand-ins are test doubles of robot.py's interface, used here only to check what the routes
parse, call and answer (every 400 path, 503, 500, the answers' texts and keys). That the real server
does the same against the real simulation is what the end-to-end tests (test_bad_input.py,
test_conformance.py, test_gripper.py, ...) prove; these do not replace them.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
from test_bad_input import BAD_BODIES

from franka_server_ros2.app import STATE_ROUTES, create_app
from franka_server_ros2.camera_specs import CameraSpec
from franka_server_ros2.cameras import CameraFeeds, CameraFrame, UnknownCamera
from franka_server_ros2.grippers import GRIPPERS
from franka_server_ros2.robot import RobotUnavailable, ServerSettings, StateSnapshot, TriggerResult
from isaac_franka_bridge.controller import COMPLIANCE_PARAMETERS

ROOT = os.path.join(os.path.dirname(__file__), "..")
STATE = StateSnapshot(
    stamp=1.0,
    received=0.0,
    pose=np.array([0.5, 0.0, 0.3, 1.0, 0.0, 0.0, 0.0]),
    vel=np.zeros(6),
    force=np.array([1.0, 2.0, 3.0]),
    torque=np.zeros(3),
    q=np.arange(7.0),
    dq=np.zeros(7),
    jacobian=np.ones((6, 7)),
    gripper_pos=0.25,
)
RANGES = {p.name: (p.low, p.high) for p in COMPLIANCE_PARAMETERS}


class StandInRobot:
    """Test double of franka_server_ros2.robot.Robot: records what the routes ask of it."""

    def __init__(self, gripper_type: str = "Robotiq") -> None:
        self.gripper = GRIPPERS[gripper_type]() if gripper_type in GRIPPERS else None
        self.robot_mode = "impedance"
        self.state_age = 0.001
        self.calls: list[tuple] = []
        self.unavailable = False
        self.refuse: set[str] = set()
        self.warnings: list[str] = []

    def state(self) -> StateSnapshot:
        if self.unavailable:
            raise RobotUnavailable("no robot state received yet")
        return STATE

    def move(self, position, quat) -> None:
        self.calls.append(("move", list(position), list(quat)))

    def trigger(self, name: str, timeout: float = 5.0) -> TriggerResult:
        self.calls.append(("trigger", name))
        return TriggerResult(name not in self.refuse, f"{name} refused" if name in self.refuse else "ok")

    def compliance_parameter_ranges(self):
        return RANGES

    def set_parameters(self, node: str, values: dict) -> tuple[bool, str]:
        self.calls.append(("set_parameters", node, values))
        return True, ""

    def wait_for_gripper(self) -> None:
        if self.unavailable:
            raise RobotUnavailable("franka_gripper/gripper_action is not available")

    def command_gripper(self, goal) -> None:
        self.calls.append(("gripper", goal))

    def warn(self, message: str) -> None:
        self.warnings.append(message)

    def send_wrench(self, wrench) -> None:
        self.calls.append(("wrench", list(wrench)))

    def reset_wrench_controller(self) -> None:
        self.calls.append(("reset_wrench_controller",))

    def task_state(self) -> dict:
        if self.unavailable:
            raise RobotUnavailable("no task ground truth: the robot behind this server publishes none")
        cube = [0.55, 0, 0.02, 0, 0, 0, 1]
        return {"task": "pick_cube", "success": False, "objects": {"cube": cube}, "places": {"tray": "cube"}}

    def place_object(self, place: str) -> TriggerResult:
        self.calls.append(("place", place))
        held = "place" in self.refuse
        return TriggerResult(not held, "cube is held by gripper: open the gripper first" if held else "ok")


CAMERA = CameraSpec("wrist_1", "127122270146", 64, 48, 15.0, "attachment", (0, 0, 0), (1, 0, 0, 0), 42.5)


class StandInFeeds(CameraFeeds):
    """Test double of the camera feeds: one camera, one fixed frame."""

    def __init__(self) -> None:
        super().__init__(node=None, cameras=[CAMERA])

    def frame(self, name: str, after: int = -1, timeout: float = 1.0) -> CameraFrame | None:
        if name not in self.cameras:
            raise UnknownCamera(name)
        return CameraFrame(seq=1, stamp=1.0, received=0.0, bgr=np.zeros((48, 64, 3), np.uint8))


def client(gripper_type: str = "Robotiq", controller: str = "impedance", servers: tuple[str, ...] = ()):
    robot = StandInRobot(gripper_type)
    settings = ServerSettings(np.array([-0.9, -0.9, -0.05]), np.array([0.9, 0.9, 1.2]), 0.75, controller, servers)
    return create_app(robot, StandInFeeds(), settings).test_client(), robot


def post(app, route: str, body):
    if isinstance(body, str):
        return app.post(f"/{route}", data=body)
    return app.post(f"/{route}", json=body)


CASES = [(route, body) for route, bodies in BAD_BODIES.items() for body in bodies]


@pytest.mark.parametrize("route,body", CASES, ids=[f"{r}-{i}" for i, (r, _) in enumerate(CASES)])
def test_every_malformed_body_is_a_400_with_a_json_error_and_nothing_reaches_the_robot(route, body):
    app, robot = client()
    response = post(app, route, body)
    assert response.status_code == 400, response.text
    assert response.is_json and response.json["error"]
    assert not [c for c in robot.calls if c[0] in ("move", "set_parameters", "gripper")]


@pytest.mark.parametrize("route", sorted(STATE_ROUTES))
def test_state_routes_answer_the_original_keys_and_503_without_a_robot(route):
    app, robot = client()
    response = app.post(f"/{route}")
    assert response.status_code == 200
    assert set(response.json) == set(STATE_ROUTES[route](STATE))
    robot.unavailable = True
    for _ in range(3):  # a client polling a stopped robot: its reason logged once (then at most once a second)
        response = app.post(f"/{route}")
        assert response.status_code == 503 and "no robot state" in response.json["error"]
    assert robot.warnings == [f"/{route}: 503: {response.json['error']}"]


def test_getstate_carries_every_key_the_env_reads():
    app, _ = client()
    state = app.post("/getstate").json
    assert state["pose"] == STATE.pose.tolist() and state["gripper_pos"] == 0.25
    assert np.array(state["jacobian"]).shape == (6, 7)


def test_pose_sends_the_target_and_answers_moved():
    app, robot = client()
    response = app.post("/pose", json={"arr": [0.5, 0.1, 0.3, 0.0, 0.0, 0.0, 2.0]})
    assert response.text == "Moved"
    _, position, quat = robot.calls[-1]
    assert position == [0.5, 0.1, 0.3] and quat == [0.0, 0.0, 0.0, 1.0]  # normalised


@pytest.mark.parametrize(
    ("route", "services", "answer"),
    [
        ("clearerr", ["error_recovery"], "Clear"),
        ("startimp", ["error_recovery", "start"], "Started impedance"),
        ("stopimp", ["stop"], "Stopped impedance"),
        ("jointreset", ["error_recovery", "joint_reset", "error_recovery"], "Reset Joint"),
    ],
)
def test_trigger_routes_call_the_original_sequence(route, services, answer):
    app, robot = client()
    assert app.post(f"/{route}").text == answer
    assert [c[1] for c in robot.calls] == services


@pytest.mark.parametrize(
    ("route", "refused", "answer"),
    [
        ("clearerr", {"error_recovery"}, "Clear"),
        ("startimp", {"start"}, "Started impedance"),
        ("startimp", {"error_recovery", "start"}, "Started impedance"),
        ("stopimp", {"stop"}, "Stopped impedance"),
    ],
)
def test_a_refusal_answers_as_the_original_with_a_warning_and_the_reason_in_a_header(route, refused, answer):
    """The original publishes error recovery's goal and launches or stops the controller without reading an outcome:
    it answers its text whatever the robot does. So does this server: the refusal is logged and in `X-Refused`,
    and every service of the route is still asked, in order (a 500 here was seen in a fuzz run: error recovery,
    then the arm back in a reflex before the controller's start)."""
    app, robot = client()
    robot.refuse = refused
    response = app.post(f"/{route}")
    assert response.status_code == 200 and response.text == answer
    assert response.headers["X-Refused"] == "; ".join(
        f"{s}: {s} refused" for s in robot_services(route) if s in refused
    )
    assert len(robot.warnings) == len(refused) and all(f"/{route}" in w for w in robot.warnings), robot.warnings
    assert [c[1] for c in robot.calls] == robot_services(route)


def robot_services(route: str) -> list[str]:
    return {"clearerr": ["error_recovery"], "startimp": ["error_recovery", "start"], "stopimp": ["stop"]}[route]


def test_jointreset_answers_as_the_original_whatever_the_robot_refuses():
    app, robot = client()
    robot.refuse = {"error_recovery", "joint_reset"}
    response = app.post("/jointreset")
    assert response.status_code == 200 and response.text == "Reset Joint"
    assert response.headers["X-Joint-Reset"] == "joint_reset refused"
    assert (
        response.headers["X-Refused"]
        == "error_recovery: error_recovery refused; error_recovery: error_recovery refused"
    )
    assert [c[1] for c in robot.calls] == ["error_recovery", "joint_reset", "error_recovery"] and robot.warnings


def test_a_task_reset_the_world_refuses_is_a_500_with_the_reason():
    app, robot = client()
    robot.refuse = {"task_reset"}
    response = app.post("/task/reset")
    assert response.status_code == 500 and "task_reset refused" in response.json["error"]


def test_update_param_clamps_names_what_it_clamped_and_refuses_unknown_names():
    app, robot = client()
    response = app.post("/update_param", json={"rotational_clip_x": 0.5, "translational_stiffness": "3000"})
    assert response.text == "Updated compliance parameters"
    node, values = robot.calls[-1][1:]
    assert node == "cartesian_impedance_controller"
    assert values == {"rotational_clip_x": RANGES["rotational_clip_x"][1], "translational_stiffness": 3000.0}
    assert json.loads(response.headers["X-Clamped-Parameters"]) == {"rotational_clip_x": RANGES["rotational_clip_x"][1]}
    assert app.post("/update_param", json={}).status_code == 200


def test_set_load_sets_the_robots_declared_load():
    app, robot = client()
    body = {"mass": 0.5, "F_x_center_load": [0, 0, 0.05], "load_inertia": [0.001, 0, 0, 0, 0.001, 0, 0, 0, 0.001]}
    assert app.post("/set_load", json=body).text == "Set Load"
    node, values = robot.calls[-1][1:]
    assert node == "franka_control" and values["load_mass"] == 0.5


@pytest.mark.parametrize(
    "route", ["activate_gripper", "reset_gripper", "open_gripper", "close_gripper", "close_gripper_slow"]
)
def test_gripper_routes_without_a_gripper_are_a_400_and_with_an_absent_one_a_503(route):
    app, _ = client("None")
    response = app.post(f"/{route}")
    assert response.status_code == 400 and "no gripper configured" in response.json["error"]
    app, robot = client("Robotiq")
    robot.unavailable = True
    assert app.post(f"/{route}").status_code == 503


def test_move_gripper_sends_the_original_servers_goal():
    app, robot = client("Robotiq")
    assert app.post("/move_gripper", json={"gripper_pos": 12.9}).text == "Moved Gripper"
    goal = robot.calls[-1][1]
    assert goal.position == pytest.approx(0.8 * 12 / 255)  # int() truncates, then the knuckle angle


def test_health_reports_the_state_age_and_mode():
    app, robot = client()
    body = app.get("/health").json
    assert body["status"] == "ok" and body["robot_mode"] == "impedance"
    robot.state_age = None
    assert app.get("/health").status_code == 503


@pytest.mark.parametrize(
    ("query", "status"),
    [
        ("/frame/nope", 404),
        ("/frame/wrist_1?after=x", 400),
        ("/frame/wrist_1?timeout=nan", 400),
        ("/frame/wrist_1?stream=depth", 400),
        ("/get_images?cameras=nope", 404),
        ("/get_images?crop=0,0,999,999", 400),
        ("/get_images?crop=bad", 400),
        ("/get_images?quality=0", 400),
        ("/get_images?quality=x", 400),
    ],
)
def test_camera_routes_refuse_bad_arguments(query, status):
    app, _ = client()
    response = app.get(query)
    assert response.status_code == status, response.text
    assert response.json["error"]


def test_camera_routes_list_and_serve_frames():
    app, _ = client()
    assert app.get("/cameras").json["cameras"][0]["serial"] == CAMERA.serial_number
    response = app.get("/frame/wrist_1")
    assert response.status_code == 200 and len(response.data) == 64 * 48 * 3
    assert set(app.get("/get_images").json) == {"wrist_1"}


def test_the_server_imports_nothing_of_the_simulator():
    """It must serve the real arm: with isaac_franka_bridge unimportable, every server module loads."""
    code = (
        "import sys; sys.modules['isaac_franka_bridge'] = None\n"
        "import franka_server_ros2.app, franka_server_ros2.main, franka_server_ros2.robot_client\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr


def test_nan_never_reaches_the_robot():
    app, robot = client()
    app.post("/pose", data='{"arr": [NaN, 0, 0.3, 1, 0, 0, 0]}')
    assert not any(c[0] == "move" and any(math.isnan(v) for v in c[1]) for c in robot.calls)


# ---------------------------------------------------------------------- the task's ground truth, the egg-flip routes
def test_task_answers_the_ground_truth_and_503_where_there_is_none():
    app, robot = client()
    answer = app.get("/task")
    assert answer.status_code == 200 and answer.json["task"] == "pick_cube" and answer.json["success"] is False
    assert app.post("/task/reset").text == "Reset task" and robot.calls[-1] == ("trigger", "task_reset")
    robot.unavailable = True  # behind a real robot
    assert app.get("/task").status_code == 503 and "no task ground truth" in app.get("/task").json["error"]


def test_task_place_puts_an_object_in_a_place_of_the_world_and_refuses_anything_else():
    app, robot = client()
    answer = app.post("/task/place", json={"place": "tray"})
    assert answer.status_code == 200 and answer.text == "Placed cube in tray" and robot.calls[-1] == ("place", "tray")
    for body in ({}, {"place": 3}, {"place": "shelf"}, "not json", [1]):
        answer = post(app, "task/place", body)
        assert answer.status_code == 400 and answer.json["error"], (body, answer.json)
    assert "its places: tray" in app.post("/task/place", json={"place": "shelf"}).json["error"]
    assert robot.calls[-1] == ("place", "tray")  # nothing more was asked of the robot
    robot.refuse.add("place")  # a gripper holds the object
    answer = app.post("/task/place", json={"place": "tray"})
    assert answer.status_code == 409 and "open the gripper" in answer.json["error"]
    robot.unavailable = True  # behind a real robot
    assert app.post("/task/place", json={"place": "tray"}).status_code == 503


def test_cameras_lists_the_other_servers_of_the_world():
    app, _ = client(servers=("http://127.0.0.2:5000/",))
    assert app.get("/cameras").json["servers"] == ["http://127.0.0.2:5000/"]
    assert client()[0].get("/cameras").json["servers"] == []


def test_the_egg_flip_server_has_the_wrench_routes_and_not_the_impedance_ones():
    app, robot = client("None", controller="wrench")
    assert app.post("/startwrench").text == "Started wrench"
    assert robot.calls[-2:] == [("trigger", "error_recovery"), ("trigger", "start")]  # clears first, as the original
    assert app.post("/stopwrench").text == "Stopped wrench" and robot.calls[-1] == ("trigger", "stop")
    assert app.post("/wrench", json={"arr": [1, 0, 12, 0, 3.5, 0]}).text == "Moved"
    assert robot.calls[-1] == ("wrench", [1.0, 0.0, 12.0, 0.0, 3.5, 0.0])
    assert app.post("/getstate").status_code == 200  # gripper_pos 0.0 without a gripper: test_tasks
    for route in ("pose", "jointreset", "update_param", "set_load", "startimp", "stopimp", "close_gripper_slow"):
        assert app.post(f"/{route}", json={}).status_code == 404, route  # not on the original egg-flip server
    impedance, _ = client()
    for route in ("startwrench", "stopwrench", "wrench", "reset"):
        assert impedance.post(f"/{route}", json={}).status_code == 404, route


@pytest.mark.parametrize(
    "body", [{}, {"arr": [1, 2, 3]}, {"arr": [0, 0, float("nan"), 0, 0, 0]}, {"arr": "12"}, "not json", [1, 2]]
)
def test_a_bad_wrench_is_a_400_and_nothing_is_sent(body):
    app, robot = client("None", controller="wrench")
    response = post(app, "wrench", body)
    assert response.status_code == 400 and "error" in response.json
    assert not [c for c in robot.calls if c[0] == "wrench"]


def test_reset_asks_the_wrench_controller_and_answers_after_the_originals_2_s(monkeypatch):
    import franka_server_ros2.app as app_module

    slept = []
    monkeypatch.setattr(app_module.time, "sleep", slept.append)
    app, robot = client("None", controller="wrench")
    assert app.post("/reset").text == "Reset"
    assert robot.calls[-1] == ("reset_wrench_controller",) and slept == [2.0]
