"""The Flask application: the original franka_server routes, each only parsing, calling, formatting.

Answers are those of HIL-SERL's franka_server (text strings, JSON keys); errors are JSON with an
"error" key: 400 for a malformed request (nothing is changed), 503 when the robot does not answer.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from flask import Flask, jsonify, request
from flask_sock import Sock
from werkzeug.exceptions import NotFound

from . import bodies, cameras
from .bodies import BadRequest
from .cameras import CameraFeeds
from .grippers import GripperGoal, GripperModel
from .robot import Robot, RobotRefused, RobotUnavailable, ServerSettings, StateSnapshot
from .teleop import TeleopHub, add_teleop_routes

JOINT_RESET_TIMEOUT = 40.0  # [s] the original waits up to ~30 s for the arm, plus its own sleeps
WRENCH_RESET_WAIT = 2.0  # [s] the egg-flip server's /reset sleeps this long after asking for the reset
SERVICE_TIMEOUT = 5.0  # [s] a robot service's answer (error recovery, a controller's start or stop, the task's)

# state routes: name -> what of the snapshot they answer
STATE_ROUTES: dict[str, Callable[[StateSnapshot], dict[str, Any]]] = {
    "getpos": lambda s: {"pose": s.pose},
    "getpos_euler": lambda s: {"pose": s.euler_pose()},
    "getvel": lambda s: {"vel": s.vel},
    "getforce": lambda s: {"force": s.force},
    "gettorque": lambda s: {"torque": s.torque},
    "getq": lambda s: {"q": s.q},
    "getdq": lambda s: {"dq": s.dq},
    "getjacobian": lambda s: {"jacobian": s.jacobian},
    "get_gripper": lambda s: {"gripper": s.gripper_pos},
    "getstate": lambda s: {
        "pose": s.pose,
        "vel": s.vel,
        "force": s.force,
        "torque": s.torque,
        "q": s.q,
        "dq": s.dq,
        "jacobian": s.jacobian,
        "gripper_pos": s.gripper_pos,
    },
}


def _jsonable(values: dict[str, Any]) -> dict[str, Any]:
    return {k: (v.tolist() if isinstance(v, np.ndarray) else float(v)) for k, v in values.items()}


def _error(status: int, message: str):
    response = jsonify(error=message)
    response.status_code = status
    return response


def _json_body() -> dict[str, Any]:
    body = request.get_json(force=True, silent=True)
    if not isinstance(body, dict):
        raise BadRequest("the request body must be a JSON object")
    return body


def create_app(robot: Robot, feeds: CameraFeeds, settings: ServerSettings) -> Flask:
    """The routes over `robot` (robot.py's interface), the camera `feeds` and the server's `settings`."""
    app = Flask("franka_server_ros2")

    @app.errorhandler(BadRequest)
    def bad_request(exc: BadRequest):
        return _error(400, str(exc))

    last_unavailable = {"text": "", "at": 0.0}

    @app.errorhandler(RobotUnavailable)
    def unavailable(exc: RobotUnavailable):
        """A 503, logged with its reason (the stock client shows only a KeyError): each new reason, and the same one
        again at most once a second (a client polling a stopped simulator)."""
        text, now = f"{request.path}: 503: {exc}", time.monotonic()
        if text != last_unavailable["text"] or now - last_unavailable["at"] >= 1.0:
            robot.warn(text)
            last_unavailable.update(text=text, at=now)
        return _error(503, str(exc))

    @app.errorhandler(RobotRefused)
    def refused(exc: RobotRefused):
        return _error(500, str(exc))

    def state_route(name: str, answer: Callable[[StateSnapshot], dict[str, Any]]) -> None:
        app.add_url_rule(f"/{name}", name, lambda: jsonify(_jsonable(answer(robot.state()))), methods=["POST"])

    for name, answer in STATE_ROUTES.items():
        state_route(name, answer)

    @app.get("/health")
    def health():
        """Liveness for people and monitors (a new route; the original ones are unchanged)."""
        age = robot.state_age
        timeout = settings.state_timeout
        status = "no_state" if age is None else ("ok" if age <= timeout else "stale")
        body = {
            "status": status,
            "simulation_running": status == "ok",
            "state_age_s": age,
            "state_timeout_s": timeout,
            "robot_mode": robot.robot_mode,
            "gripper_type": robot.gripper.name if robot.gripper is not None else "None",
            # where /open_gripper leaves a Robotiq (0 fully open; the published server's 175), else null
            "robotiq_open_position": getattr(robot.gripper, "open_byte", None),
        }
        response = jsonify(body)
        response.status_code = 200 if status == "ok" else 503
        return response

    def call(service: str, timeout: float = SERVICE_TIMEOUT) -> None:
        """A robot service that must succeed (a new route's: /task/reset); its refusal is a 500 with the reason."""
        response = robot.trigger(service, timeout)
        if not response.success:
            raise RobotRefused(f"{service}: {response.message}")

    trigger_route(app, robot, "/clearerr", ("error_recovery",), "Clear")
    if settings.controller == "wrench":
        add_wrench_routes(app, robot)
    else:
        add_impedance_routes(app, robot, settings)

    @app.get("/task")
    def task():
        """The simulated task's ground truth (a new, read-only route; 503 behind a real robot)."""
        return jsonify(robot.task_state())

    @app.post("/task/reset")
    def task_reset():
        """A simulated world's objects back where they started (a new route: what a person does between
        episodes on the real set-up; 503 behind a real robot)."""
        call("task_reset")
        return "Reset task"

    @app.post("/task/place")
    def task_place():
        """`{"place": name}`: a simulated world's object put in its place (a holder), as a person does (a new
        route; 400 for an unknown place, 409 while a gripper holds the object, 503 behind a real robot)."""
        places = robot.task_state().get("places", {})
        name = bodies.place(_json_body(), places)
        result = robot.place_object(name)
        if not result.success:
            return _error(409, f"/task/place/{name}: {result.message}")
        return f"Placed {places[name]} in {name}"

    def gripper():
        if robot.gripper is None:
            raise BadRequest("no gripper configured (gripper_type None)")
        return robot.gripper

    def gripper_route(path: str, answer: str, command: Callable[[GripperModel], GripperGoal | None]) -> None:
        """The original gripper server's command for the route; None = it sends nothing."""

        def route():
            model = gripper()
            robot.wait_for_gripper()
            goal = command(model)
            if goal is not None:
                robot.command_gripper(goal)
            return answer

        app.add_url_rule(path, path.strip("/"), route, methods=["POST"])

    gripper_route("/activate_gripper", "Activated", lambda g: g.activate())
    gripper_route("/reset_gripper", "Reset", lambda g: g.reset())
    gripper_route("/open_gripper", "Opened", lambda g: g.open())
    gripper_route("/close_gripper", "Closed", lambda g: g.close())
    if settings.controller != "wrench":  # the egg-flip server has no slow close
        gripper_route("/close_gripper_slow", "Closed", lambda g: g.close_slow())
    gripper_route("/move_gripper", "Moved Gripper", lambda g: g.move(bodies.gripper_command(_json_body())))

    add_camera_routes(app, feeds, settings.world_servers)
    add_teleop_routes(app, TeleopHub())  # the SpaceMouse and keys of a person or a scripted expert
    return app


def ask(robot: Robot, path: str, service: str, answer: str) -> str:
    """Ask the robot for `service` as the original asks (it publishes error recovery's goal, launches or stops a
    controller, and reads no outcome): a refusal (error recovery failing, a controller that cannot start in a reflex
    the arm re-entered right after its recovery) is logged as a warning and returned ('' for none); the route still
    answers `answer`, the original's. A robot that does not answer at all is a 503 (RobotUnavailable), as for
    every route."""
    response = robot.trigger(service, SERVICE_TIMEOUT)
    if response.success:
        return ""
    robot.warn(f"{path}: {service} refused ({response.message}); answered {answer!r} as the original")
    return f"{service}: {response.message}"


def trigger_route(app: Flask, robot: Robot, path: str, services: tuple[str, ...], answer: str) -> None:
    """A route of the original's that asks the robot for `services` in order (each asked whatever the one before
    made of it) and answers `answer`; refusals are named in the `X-Refused` header."""

    def route():
        refused = [r for r in (ask(robot, path, service, answer) for service in services) if r]
        return answer, 200, {"X-Refused": "; ".join(refused)} if refused else {}

    app.add_url_rule(path, path.strip("/"), route, methods=["POST"])


def add_impedance_routes(app: Flask, robot: Robot, settings: ServerSettings) -> None:
    """franka_server.py's routes over the Cartesian impedance controller."""

    @app.post("/pose")
    def pose():
        position, quat = bodies.pose(_json_body(), settings.workspace_min, settings.workspace_max)
        robot.move(position, quat)
        return "Moved"

    trigger_route(app, robot, "/startimp", ("error_recovery", "start"), "Started impedance")  # clears first
    trigger_route(app, robot, "/stopimp", ("stop",), "Stopped impedance")

    @app.post("/jointreset")
    def joint_reset():
        """As the original: error recovery (so it works from a reflex), the joint-space move (impedance
        control stops, and restarts at the end), error recovery again; the answer is always `Reset Joint`,
        and the outcome is logged and in the `X-Joint-Reset` header."""
        refused = [ask(robot, "/jointreset", "error_recovery", "Reset Joint")]
        response = robot.trigger("joint_reset", JOINT_RESET_TIMEOUT)
        refused.append(ask(robot, "/jointreset", "error_recovery", "Reset Joint"))
        if not response.success:
            robot.warn(f"joint reset did not reach its target: {response.message}")
        refusals = {"X-Refused": "; ".join(r for r in refused if r)} if any(refused) else {}
        return "Reset Joint", 200, {"X-Joint-Reset": response.message, **refusals}

    @app.post("/update_param")
    def update_param():
        """As the original: values converted as float() does, clamped into their ranges (dynamic_reconfigure
        clamps, the env never reads the answer) and applied all at once; an unknown name changes nothing."""
        values, clamped = bodies.clamp_parameters(bodies.parameters(_json_body()), robot.compliance_parameter_ranges())
        ok, reason = robot.set_parameters("cartesian_impedance_controller", values)
        if not ok:
            raise BadRequest(f"parameters refused, none changed: {reason}")
        headers = {}
        if clamped:
            text = ", ".join(f"{name} {sent:g} -> {applied:g}" for name, (sent, applied) in sorted(clamped.items()))
            robot.warn(f"update_param: clamped into range: {text}")
            headers["X-Clamped-Parameters"] = json.dumps({name: applied for name, (_, applied) in clamped.items()})
        return "Updated compliance parameters", 200, headers

    @app.post("/set_load")
    def set_load():
        mass, center, inertia = bodies.load(_json_body())
        ok, reason = robot.set_parameters(
            "franka_control",
            {"load_mass": mass, "load_center_of_mass": center.tolist(), "load_inertia": inertia.tolist()},
        )
        if not ok:
            raise BadRequest(f"load refused: {reason}")
        return "Set Load"


def add_wrench_routes(app: Flask, robot: Robot) -> None:
    """franka_eggflip_server.py's routes over the Cartesian wrench controller (HIL-SERL's egg_flip)."""

    trigger_route(app, robot, "/startwrench", ("error_recovery", "start"), "Started wrench")  # clears, then starts
    trigger_route(app, robot, "/stopwrench", ("stop",), "Stopped wrench")

    @app.post("/wrench")
    def wrench():
        robot.send_wrench(bodies.finite_vector(_json_body(), "arr", 6))
        return "Moved"

    @app.post("/reset")
    def reset():
        """The controller moves the arm back to its reset joints (for 1 s); the original waits 2 s."""
        robot.reset_wrench_controller()
        time.sleep(WRENCH_RESET_WAIT)
        return "Reset"


def _number(name: str, kind: type, default, low, high):
    return bodies.query_number(request.args, name, kind, default, low, high)


def _quality() -> int:
    return _number("quality", int, 90, 1, 100)


def _crop():
    try:
        return cameras.crop_box(request.args.get("crop"))
    except ValueError as exc:
        raise BadRequest(str(exc)) from exc


def add_camera_routes(app: Flask, feeds: CameraFeeds, servers: tuple[str, ...] = ()) -> None:
    """Frames for clients without ROS: listing, raw long poll, base64 JPEG, WebSocket stream."""

    def frame_or_error(name: str, after: int, timeout: float):
        try:
            return feeds.frame(name, after, timeout)
        except cameras.UnknownCamera as exc:
            raise NotFound(f"unknown camera {exc.args[0]!r}; see GET /cameras") from exc

    def requested_cameras(crop) -> list[str]:
        """The `cameras` argument (default: all), each known and large enough for `crop`."""
        names = [n for n in request.args.get("cameras", ",".join(feeds.cameras)).split(",") if n]
        for name in names:
            spec = feeds.cameras.get(name)
            if spec is None:
                raise NotFound(f"unknown camera {name!r}; see GET /cameras")
            if crop is not None and (crop[2] > spec.width or crop[3] > spec.height):
                raise BadRequest(f"crop {crop} reaches outside the {spec.width}x{spec.height} frame of {name}")
        return names

    @app.errorhandler(NotFound)
    def not_found(exc: NotFound):
        return _error(404, exc.description or "not found")

    @app.get("/cameras")
    def camera_list():
        """The cameras; with "host" (this host, for shared memory) and each camera's ring ("shm") where written."""
        return jsonify(cameras=feeds.listing(), servers=list(servers), host=feeds.host)

    @app.get("/frame/<name>")
    def frame(name: str):
        """Raw frame (bgr8 bytes); blocks until one newer than `after` exists, or 504 after `timeout`."""
        after = _number("after", int, -1, -1, 2**63 - 1)
        timeout = _number("timeout", float, 1.0, 0.0, 30.0)
        if request.args.get("stream", "color") != "color":
            raise BadRequest("the simulated cameras have no depth stream")
        found = frame_or_error(name, after, timeout)
        if found is None:
            return _error(504 if after >= 0 else 503, f"no new frame from {name} within {timeout:g} s")
        height, width = found.bgr.shape[:2]
        headers = {
            "Content-Type": "application/octet-stream",
            "X-Frame-Seq": str(found.seq),
            "X-Frame-Width": str(width),
            "X-Frame-Height": str(height),
            "X-Frame-Encoding": "bgr8",
            "X-Frame-Stamp": repr(found.stamp),
            "X-Frame-Time": repr(found.received),
        }
        return found.bgr.tobytes(), 200, headers

    @app.route("/get_images", methods=["GET", "POST"])
    def get_images():
        crop, quality = _crop(), _quality()
        names = requested_cameras(crop)
        images, stamps = {}, {}
        for name in names:
            found = frame_or_error(name, -1, 2.0)
            if found is None:
                raise RobotUnavailable(f"no frame from camera {name} yet")
            images[name] = cameras.jpeg_base64(found, crop, quality)
            stamps[name] = found.stamp
        # the body stays {camera: base64 JPEG}; capture times (simulated clock) ride in a header
        return jsonify(images), 200, {"X-Frame-Stamps": json.dumps(stamps)}

    @app.before_request
    def refuse_a_bad_stream():
        """A WebSocket with bad arguments gets its 400/404 as the answer to the upgrade request."""
        if request.path == "/images":
            requested_cameras(_crop())
            _quality()

    sock = Sock(app)

    @sock.route("/images")
    def images(ws):
        """Binary messages [1 byte key length][key][JPEG]: every camera's frames as they come."""
        crop, quality = _crop(), _quality()
        names = requested_cameras(crop)  # bad arguments fail before streaming
        last = dict.fromkeys(names, -1)
        while True:
            for name in names:
                found = feeds.frame(name, last[name], 0.02)
                if found is not None:
                    last[name] = found.seq
                    key = name.encode()
                    ws.send(bytes([len(key)]) + key + cameras.jpeg(found, crop, quality))
