"""Human devices over HTTP: a SpaceMouse's state and key presses, posted by a teleop page or a scripted
expert, read back by the stand-ins of clients/virtual_spacemouse (easyhid and pynput for HIL-SERL's
scripts). New routes on every server; the original ones never change.

`POST /spacemouse` {"axes": [x, y, z, roll, pitch, yaw], "buttons": [left, right]} sets the state, each
axis as HIL-SERL's pyspacemouse reports it (-1..1); `GET /spacemouse` answers it (long poll on its
sequence number). A state not renewed within `STALE_AFTER_S` reads as a SpaceMouse at rest (all zeros,
buttons released), so a page that is closed or a client that dies never leaves the arm moving.
`POST /keys` {"key": "esc"} queues a key press; `GET /keys` answers the presses after a sequence number.
`GET /teleop` is the page a person drives them from (teleop_page.html: keys, on-screen controls, a game
controller; the world's camera views and the robot's state).

Plain Python (no ROS, nothing of the simulator): the same hub runs in front of the real arm.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from flask import Flask, Response, jsonify, request

from .bodies import BadRequest, is_number, query_number

AXES = 6  # x, y, z, roll, pitch, yaw
BUTTONS = 2  # left (HIL-SERL: close the gripper), right (open it)
STALE_AFTER_S = 0.5  # [s] a state older than this reads as the SpaceMouse at rest
MAX_TIMEOUT_S = 30.0  # [s] longest long poll
DEFAULT_TIMEOUT_S = 1.0
KEY_HISTORY = 256  # key events kept for GET /keys
PAGE = Path(__file__).with_name("teleop_page.html")  # GET /teleop

# pynput's keyboard.Key names (what `str(key)` gives after "Key."); a key is one of these or one printable
# character. clients/virtual_spacemouse has the same list (tests/test_virtual_spacemouse.py checks).
KEY_NAMES = frozenset(
    [
        "alt", "alt_l", "alt_r", "alt_gr", "backspace", "caps_lock", "cmd", "cmd_l", "cmd_r", "ctrl", "ctrl_l",
        "ctrl_r", "delete", "down", "end", "enter", "esc", "home", "left", "page_down", "page_up", "right",
        "shift", "shift_l", "shift_r", "space", "tab", "up", "media_play_pause", "media_volume_mute",
        "media_volume_down", "media_volume_up", "media_previous", "media_next", "insert", "menu", "num_lock",
        "pause", "print_screen", "scroll_lock",
        *(f"f{i}" for i in range(1, 21)),
    ]
)  # fmt: skip


def parse_spacemouse(body: Any) -> tuple[tuple[float, ...], tuple[int, ...]]:
    """`{"axes": [6 finite numbers in -1..1], "buttons": [2 values, each 0 or 1]}` -> (axes, buttons)."""
    if not isinstance(body, dict):
        raise BadRequest('the body must be a JSON object {"axes": [6 numbers], "buttons": [2 values]}')
    unknown = sorted(set(body) - {"axes", "buttons"})
    if unknown:
        raise BadRequest(f"unknown key(s) {unknown}: the body has only 'axes' and 'buttons'")
    for key in ("axes", "buttons"):
        if key not in body:
            raise BadRequest(f"missing key '{key}'")
    axes, buttons = body["axes"], body["buttons"]
    if not isinstance(axes, list) or len(axes) != AXES:
        raise BadRequest(f"'axes' must be a list of {AXES} numbers [x, y, z, roll, pitch, yaw]")
    if not all(is_number(v) and math.isfinite(v) and -1.0 <= v <= 1.0 for v in axes):
        raise BadRequest(f"'axes' must hold finite numbers in -1..1, got {axes}")
    if not isinstance(buttons, list) or len(buttons) != BUTTONS:
        raise BadRequest(f"'buttons' must be a list of {BUTTONS} values [left, right], each 0 or 1")
    if not all(is_number(v) and v in (0, 1) for v in buttons):
        raise BadRequest(f"'buttons' must hold 0 (released) or 1 (pressed), got {buttons}")
    return tuple(float(v) for v in axes), tuple(int(v) for v in buttons)


def parse_key(body: Any) -> str:
    """`{"key": name}`: a pynput Key name ("esc", "space", "f1", ...) or one printable character (" " is
    "space", as pynput reports the space bar)."""
    if not isinstance(body, dict) or "key" not in body:
        raise BadRequest('the body must be a JSON object {"key": "esc" | "space" | "f1" | ... | one character}')
    unknown = sorted(set(body) - {"key"})
    if unknown:
        raise BadRequest(f"unknown key(s) {unknown}: the body has only 'key'")
    key = body["key"]
    if key == " ":
        return "space"
    if isinstance(key, str) and (key in KEY_NAMES or (len(key) == 1 and key.isprintable())):
        return key
    raise BadRequest(f"'key' must be a pynput Key name (esc, space, f1, ...) or one printable character, got {key!r}")


class TeleopHub:
    """The latest SpaceMouse state and the recent key presses of one server, shared by its request threads."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, stale_after: float = STALE_AFTER_S) -> None:
        self._clock = clock
        self._stale_after = stale_after
        self._changed = threading.Condition()
        self._seq = 0
        self._axes: tuple[float, ...] = (0.0,) * AXES
        self._buttons: tuple[int, ...] = (0,) * BUTTONS
        self._posted = clock()  # no post yet: at rest since the hub started
        self._key_seq = 0
        self._keys: deque[dict[str, Any]] = deque(maxlen=KEY_HISTORY)

    # ------------------------------------------------------------------ SpaceMouse
    def post_spacemouse(self, axes: tuple[float, ...], buttons: tuple[int, ...]) -> int:
        """A new state; returns its sequence number."""
        with self._changed:
            self._seq += 1
            self._axes, self._buttons, self._posted = tuple(axes), tuple(buttons), self._clock()
            self._changed.notify_all()
            return self._seq

    def spacemouse(self, after: int | None = None, timeout: float = 0.0) -> dict[str, Any]:
        """The state, once its seq is above `after` or after `timeout` s (at once when `after` is None)."""
        with self._changed:
            if after is not None:
                self._changed.wait_for(lambda: self._seq > after, timeout)
            age = self._clock() - self._posted
            fresh = age <= self._stale_after
            return {
                "seq": self._seq,
                "axes": list(self._axes) if fresh else [0.0] * AXES,
                "buttons": list(self._buttons) if fresh else [0] * BUTTONS,
                "age_s": age,
            }

    # ------------------------------------------------------------------ keys
    def post_key(self, key: str) -> int:
        with self._changed:
            self._key_seq += 1
            self._keys.append({"seq": self._key_seq, "key": key, "time": time.time()})
            self._changed.notify_all()
            return self._key_seq

    def keys(self, after: int = 0, timeout: float = 0.0) -> dict[str, Any]:
        """The key events with seq above `after` (waiting up to `timeout` s for one), and the latest seq."""
        with self._changed:
            self._changed.wait_for(lambda: self._key_seq > after, timeout)
            return {"seq": self._key_seq, "events": [dict(e) for e in self._keys if e["seq"] > after]}


def _query_number(name: str, kind: type, default, low, high):
    return query_number(request.args, name, kind, default, low, high)


def _body() -> Any:
    return request.get_json(force=True, silent=True)


def add_teleop_routes(app: Flask, hub: TeleopHub) -> None:
    """`/spacemouse` and `/keys` (POST to set, GET to read with a long poll) over `hub` (kept as
    `app.extensions["teleop"]`), and the page that posts them, `GET /teleop`."""
    app.extensions["teleop"] = hub

    def answer(route: Callable[[], Any]) -> Callable[[], Any]:
        """Malformed input is a 400 with {"error"} (handled here, so the routes work on any Flask app)."""

        def wrapped():
            try:
                return route()
            except BadRequest as exc:
                response = jsonify(error=str(exc))
                response.status_code = 400
                return response

        wrapped.__name__ = route.__name__
        return wrapped

    def timeout() -> float:
        return _query_number("timeout", float, DEFAULT_TIMEOUT_S, 0.0, MAX_TIMEOUT_S)

    @answer
    def spacemouse_post():
        hub.post_spacemouse(*parse_spacemouse(_body()))
        return "OK"

    @answer
    def spacemouse_get():
        after = _query_number("after", int, None, -1, 2**63 - 1)
        return jsonify(hub.spacemouse(after, timeout()))

    @answer
    def keys_post():
        hub.post_key(parse_key(_body()))
        return "OK"

    @answer
    def keys_get():
        after = _query_number("after", int, 0, -1, 2**63 - 1)
        return jsonify(hub.keys(after, timeout()))

    page = PAGE.read_text(encoding="utf-8")

    def teleop_page():
        return Response(page, mimetype="text/html", headers={"Cache-Control": "no-cache"})

    app.add_url_rule("/teleop", "teleop_page", teleop_page, methods=["GET"])
    app.add_url_rule("/spacemouse", "spacemouse_post", spacemouse_post, methods=["POST"])
    app.add_url_rule("/spacemouse", "spacemouse_get", spacemouse_get, methods=["GET"])
    app.add_url_rule("/keys", "keys_post", keys_post, methods=["POST"])
    app.add_url_rule("/keys", "keys_get", keys_get, methods=["GET"])
