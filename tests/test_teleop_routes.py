"""The teleop routes (franka_server_ros2/teleop.py) in process, over create_app and the stand-in robot of
test_routes.py: what `/spacemouse` and `/keys` accept, refuse and answer, the long polls, the state going
to rest when nobody posts, and that an access token guards them as every other route."""

from __future__ import annotations

import threading
import time

import pytest
from test_routes import client

from franka_server_ros2 import access
from franka_server_ros2.teleop import KEY_NAMES, STALE_AFTER_S, TeleopHub

REST = {"axes": [0.0] * 6, "buttons": [0, 0]}
PUSH = {"axes": [0.5, -1.0, 0.25, 0.0, 1.0, -0.125], "buttons": [1, 0]}


def hub_of(app) -> TeleopHub:
    return app.application.extensions["teleop"]


def test_a_posted_state_is_answered_with_its_sequence_number_and_age():
    app, robot = client()
    first = app.get("/spacemouse").json
    assert first["seq"] == 0 and first["axes"] == REST["axes"] and first["buttons"] == [0, 0]
    assert isinstance(first["age_s"], float) and first["age_s"] >= 0.0
    response = app.post("/spacemouse", json=PUSH)
    assert response.status_code == 200 and response.text == "OK"
    state = app.get("/spacemouse").json
    assert state["seq"] == 1 and state["axes"] == PUSH["axes"] and state["buttons"] == [1, 0]
    assert 0.0 <= state["age_s"] < 0.5
    assert app.post("/spacemouse", json=REST).text == "OK"
    assert app.get("/spacemouse").json["seq"] == 2
    assert not robot.calls  # nothing reaches the robot: the stand-ins read the state, the env moves it


BAD_SPACEMOUSE = [
    "not json",
    [1, 2],
    {},
    {"axes": [0.0] * 6},
    {"buttons": [0, 0]},
    {"axes": [0.0] * 5, "buttons": [0, 0]},
    {"axes": [0.0] * 7, "buttons": [0, 0]},
    {"axes": [0.0] * 5 + [1.5], "buttons": [0, 0]},
    {"axes": [0.0] * 5 + [-1.01], "buttons": [0, 0]},
    {"axes": [0.0] * 5 + ["0.5"], "buttons": [0, 0]},
    {"axes": [0.0] * 5 + [True], "buttons": [0, 0]},
    {"axes": [0.0] * 5 + [None], "buttons": [0, 0]},
    {"axes": "000000", "buttons": [0, 0]},
    {"axes": [0.0] * 6, "buttons": [0]},
    {"axes": [0.0] * 6, "buttons": [0, 2]},
    {"axes": [0.0] * 6, "buttons": [0, 0.5]},
    {"axes": [0.0] * 6, "buttons": [0, -1]},
    {"axes": [0.0] * 6, "buttons": [True, False]},
    {"axes": [0.0] * 6, "buttons": [0, 0], "extra": 1},
]


@pytest.mark.parametrize("body", BAD_SPACEMOUSE, ids=range(len(BAD_SPACEMOUSE)))
def test_a_malformed_spacemouse_state_is_a_400_and_changes_nothing(body):
    app, _ = client()
    app.post("/spacemouse", json=PUSH)
    response = app.post("/spacemouse", data=body) if isinstance(body, str) else app.post("/spacemouse", json=body)
    assert response.status_code == 400 and response.is_json and response.json["error"], response.text
    state = app.get("/spacemouse").json
    assert state["seq"] == 1 and state["axes"] == PUSH["axes"]


@pytest.mark.parametrize("text", ["nan", "inf", "-inf", "1e400"])
def test_nan_and_infinity_are_refused(text):
    app, _ = client()
    body = '{"axes": [0, 0, 0, 0, 0, TEXT], "buttons": [0, 0]}'.replace("TEXT", text)
    response = app.post("/spacemouse", data=body, content_type="application/json")
    assert response.status_code == 400 and "error" in response.json


def test_integers_and_the_ends_of_the_range_are_accepted():
    app, _ = client()
    body = {"axes": [1, -1, 0, 1.0, -1.0, 0.0], "buttons": [1.0, 0]}
    assert app.post("/spacemouse", json=body).status_code == 200
    state = app.get("/spacemouse").json
    assert state["axes"] == [1.0, -1.0, 0.0, 1.0, -1.0, 0.0] and state["buttons"] == [1, 0]


def test_a_state_older_than_half_a_second_reads_as_the_spacemouse_at_rest():
    now = [100.0]
    hub = TeleopHub(clock=lambda: now[0])
    hub.post_spacemouse(tuple(PUSH["axes"]), (1, 1))
    now[0] += STALE_AFTER_S  # exactly 0.5 s: still the posted state
    assert hub.spacemouse()["axes"] == PUSH["axes"] and hub.spacemouse()["buttons"] == [1, 1]
    now[0] += 0.01
    state = hub.spacemouse()
    assert state == {"seq": 1, "axes": [0.0] * 6, "buttons": [0, 0], "age_s": pytest.approx(0.51)}


def test_the_state_goes_to_rest_on_the_real_clock_too():
    app, _ = client()
    app.post("/spacemouse", json=PUSH)
    time.sleep(STALE_AFTER_S + 0.1)
    state = app.get("/spacemouse").json
    assert state["seq"] == 1 and state["axes"] == REST["axes"] and state["buttons"] == [0, 0]
    assert state["age_s"] > STALE_AFTER_S


def poll_in_thread(app, path: str) -> tuple[threading.Thread, dict]:
    out: dict = {}

    def run():
        start = time.monotonic()
        response = app.application.test_client().get(path)
        out["elapsed"], out["json"], out["status"] = time.monotonic() - start, response.json, response.status_code

    thread = threading.Thread(target=run)
    thread.start()
    return thread, out


def test_get_spacemouse_waits_for_a_newer_state_and_answers_at_once_when_there_is_one():
    app, _ = client()
    app.post("/spacemouse", json=REST)
    thread, out = poll_in_thread(app, "/spacemouse?after=1&timeout=5")
    time.sleep(0.3)
    assert thread.is_alive(), "the poll waits for seq > 1"
    app.post("/spacemouse", json=PUSH)
    thread.join(5)
    assert out["status"] == 200 and out["json"]["seq"] == 2 and out["json"]["axes"] == PUSH["axes"]
    assert 0.25 < out["elapsed"] < 2.0
    start = time.monotonic()
    assert app.get("/spacemouse?after=1&timeout=5").json["seq"] == 2  # already newer: no wait
    assert time.monotonic() - start < 0.5


def test_get_spacemouse_answers_the_current_state_at_its_timeout():
    app, _ = client()
    app.post("/spacemouse", json=PUSH)
    start = time.monotonic()
    state = app.get("/spacemouse?after=1&timeout=0.3").json
    assert 0.25 < time.monotonic() - start < 2.0
    assert state["seq"] == 1 and state["axes"] == PUSH["axes"]
    assert app.get("/spacemouse?after=-1&timeout=0").json["seq"] == 1


@pytest.mark.parametrize(
    "query", ["after=x", "after=1.5", "after=-2", "timeout=abc", "timeout=-1", "timeout=31", "timeout=nan"]
)
def test_bad_query_arguments_are_a_400(query):
    app, _ = client()
    for route in ("/spacemouse", "/keys"):
        response = app.get(f"{route}?{query}")
        assert response.status_code == 400 and response.json["error"], (route, query)


def test_keys_are_queued_with_sequence_numbers_and_times():
    app, _ = client()
    assert app.get("/keys?timeout=0").json == {"seq": 0, "events": []}
    before = time.time()
    for key in ("esc", "space", "f1", "a", " "):
        response = app.post("/keys", json={"key": key})
        assert response.status_code == 200 and response.text == "OK"
    answer = app.get("/keys?timeout=0").json
    assert answer["seq"] == 5
    assert [(e["seq"], e["key"]) for e in answer["events"]] == [
        (1, "esc"),
        (2, "space"),
        (3, "f1"),
        (4, "a"),
        (5, "space"),  # the space bar as one character is pynput's Key.space
    ]
    assert all(before - 1 <= e["time"] <= time.time() + 1 for e in answer["events"])
    later = app.get("/keys?after=3&timeout=0").json
    assert [e["key"] for e in later["events"]] == ["a", "space"] and later["seq"] == 5


def test_get_keys_waits_for_a_press():
    app, _ = client()
    app.post("/keys", json={"key": "esc"})
    thread, out = poll_in_thread(app, "/keys?after=1&timeout=5")
    time.sleep(0.3)
    assert thread.is_alive()
    app.post("/keys", json={"key": "f1"})
    thread.join(5)
    assert out["json"]["seq"] == 2 and [e["key"] for e in out["json"]["events"]] == ["f1"]
    start = time.monotonic()
    assert app.get("/keys?after=2&timeout=0.3").json == {"seq": 2, "events": []}
    assert 0.25 < time.monotonic() - start < 2.0


@pytest.mark.parametrize(
    "body", ["esc", {}, {"key": "escape"}, {"key": "F1"}, {"key": ""}, {"key": "ab"}, {"key": "\n"}, {"key": 27},
             {"key": None}, {"key": "esc", "extra": 1}],
)  # fmt: skip
def test_a_malformed_key_is_a_400_and_queues_nothing(body):
    app, _ = client()
    response = app.post("/keys", data=body) if isinstance(body, str) else app.post("/keys", json=body)
    assert response.status_code == 400 and response.json["error"]
    assert app.get("/keys?timeout=0").json == {"seq": 0, "events": []}


def test_every_pynput_key_name_is_accepted():
    app, _ = client()
    for name in sorted(KEY_NAMES):
        assert app.post("/keys", json={"key": name}).status_code == 200, name
    assert {"esc", "space", "f1", "enter", "f20"} <= KEY_NAMES
    assert app.get("/keys?timeout=0").json["seq"] == len(KEY_NAMES)


def test_the_key_history_is_bounded():
    hub = TeleopHub()
    for _ in range(1000):
        hub.post_key("a")
    answer = hub.keys(0, 0.0)
    assert answer["seq"] == 1000 and len(answer["events"]) < 1000 and answer["events"][-1]["seq"] == 1000


def test_the_routes_are_on_the_egg_flip_server_too():
    app, _ = client(gripper_type="None", controller="wrench")
    assert app.post("/spacemouse", json=PUSH).status_code == 200
    assert app.post("/keys", json={"key": "esc"}).status_code == 200


def test_an_access_token_guards_the_teleop_routes_as_every_route():
    app, _ = client()
    flask_app = app.application
    flask_app.wsgi_app = access.AccessGuard(flask_app.wsgi_app, access.AccessRule(token="s3cret"), lambda m: None)
    guarded = flask_app.test_client()
    assert guarded.post("/spacemouse", json=PUSH).status_code == 401
    assert guarded.get("/keys").status_code == 401
    assert guarded.post("/s3cret/spacemouse", json=PUSH).status_code == 200
    assert guarded.get("/s3cret/spacemouse").json["axes"] == PUSH["axes"]
    headers = {"Authorization": "Bearer s3cret"}
    assert guarded.post("/keys", json={"key": "esc"}, headers=headers).status_code == 200
    assert hub_of(app).keys(0, 0.0)["seq"] == 1
