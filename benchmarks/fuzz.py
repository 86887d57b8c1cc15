"""Fuzz of every route of franka_server_ros2 over the simulated robot, right after reflex recoveries too: each
answer's status counted per route; any 5xx is a failure, printed with its body.

    scripts/run.sh python benchmarks/fuzz.py [--requests 1500] [--recoveries 300] [--seed 1]

The world: HIL-SERL's ram_insertion (config/tasks/ram_insertion.yaml on free ports, its cameras on), real ROS 2,
real HTTP. The routes: every rule of franka_server_ros2's app (listed from the app built over the stand-in robot of
tests/test_routes.py), `<name>` filled with the world's cameras (and a name that is none).

1. Random requests: a route, then a body: a valid one (a pose near the hand's, a gripper position, compliance
   values, a load), one of tests/test_bad_input.py's bad bodies for the route, random JSON (wrong types and lengths,
   NaN, 1e308, nesting) or none; GET routes with random query strings.
2. Right after reflex recoveries: the hand above a lowered workspace ceiling (franka_control's
   reflex.workspace_max), so that every tick after a recovery trips the reflex again; then /clearerr or /startimp,
   and 0-100 ms later a random request (weighted to /startimp, /pose, /getstate, /jointreset, /clearerr).
3. The ceiling restored and the reflex cleared: the robot answers /getstate and /health ok, and the simulation
   stepped throughout.

Writes benchmarks/fuzz.json (counts per route and status, every 5xx) and a section of benchmarks/results.md.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import rclpy
import requests
from rclpy.parameter import Parameter
from rclpy.parameter_client import AsyncParameterClient

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests")]
from harness import launch_sim, wait_until, world_on_free_ports  # noqa: E402
from run import machine, utc_stamp, write_section  # noqa: E402
from test_bad_input import BAD_BODIES  # noqa: E402
from test_routes import client  # noqa: E402

RECORD = HERE / "fuzz.json"
SECTION = "## Fuzz of every route"
AFTER_RECOVERY = ("startimp", "pose", "getstate", "jointreset", "clearerr", "getpos", "open_gripper", "update_param")
JUNK = ["", "not json", "[]", "{}", "null", "1", '{"arr": NaN}', '{"arr": "x"}', '{"arr": [1e999]}', "{" * 50]


def routes() -> list[tuple[str, str]]:
    """(method, path) of every rule of the server's app (HEAD, OPTIONS and static left out)."""
    app, _ = client()
    found = set()
    for rule in app.application.url_map.iter_rules():
        if rule.endpoint == "static":
            continue
        for method in sorted(rule.methods - {"HEAD", "OPTIONS"}):
            found.add((method, rule.rule))
    return sorted(found)


def random_json(rng: random.Random, depth: int = 0):
    kind = rng.randrange(7 if depth < 2 else 5)
    if kind == 0:
        return rng.choice([0, -1, 1e308, -1e308, 3, 255, 256])
    if kind == 1:
        return rng.uniform(-10, 10)
    if kind == 2:
        return rng.choice(["", "a", "open", "NaN", "0.5"])
    if kind == 3:
        return rng.choice([None, True, False])
    if kind == 4:
        return [rng.uniform(-2, 2) for _ in range(rng.randrange(12))]
    if kind == 5:
        return [random_json(rng, depth + 1) for _ in range(rng.randrange(4))]
    keys = ["arr", "gripper_pos", "mass", "translational_stiffness", "place", "F_x_center_load", "x"]
    return {rng.choice(keys): random_json(rng, depth + 1) for _ in range(rng.randrange(4))}


def valid_body(path: str, pose: np.ndarray, rng: random.Random):
    name = path.strip("/")
    if name == "pose":
        return {"arr": [*(pose[:3] + [rng.uniform(-0.02, 0.02) for _ in range(3)]), *pose[3:]]}
    if name == "move_gripper":
        return {"gripper_pos": rng.randrange(256)}
    if name == "update_param":
        return {"translational_stiffness": rng.uniform(0, 4000), "rotational_damping": rng.uniform(0, 100)}
    if name == "set_load":
        return {"mass": rng.uniform(0, 1), "F_x_center_load": [0, 0, 0.05], "load_inertia": [0.001, 0, 0, 0, 0.001,
                                                                                          0, 0, 0, 0.001]}  # fmt: skip
    if name == "task/place":
        return {"place": rng.choice(["holder", "nowhere"])}
    return None


def body_of(path: str, pose: np.ndarray, rng: random.Random):
    """(json body or None, raw data or None) for a POST."""
    pick = rng.random()
    if pick < 0.4:
        return valid_body(path, pose, rng), None
    bad = BAD_BODIES.get(path.strip("/"))
    if pick < 0.6 and bad:
        choice = rng.choice(bad)
        return (None, choice) if isinstance(choice, str) else (choice, None)
    if pick < 0.85:
        return random_json(rng), None
    return None, rng.choice(JUNK)


class Fuzz:
    def __init__(self, url: str, cameras: list[str], rng: random.Random) -> None:
        self.url, self.rng, self.session = url, rng, requests.Session()
        self.paths = routes()
        self.cameras = cameras
        self.counts: dict[str, Counter] = defaultdict(Counter)
        self.failures: list[dict] = []
        self.pose_now = np.zeros(7)
        self.refused: Counter = Counter()

    def pose(self) -> np.ndarray:
        return np.array(self.session.post(self.url + "getpos", timeout=5).json()["pose"])

    def request(self, method: str, path: str, phase: str) -> int:
        if "<name>" in path:
            path = path.replace("<name>", self.rng.choice([*self.cameras, "nope"]))
        url = self.url + path.lstrip("/")
        try:
            if method == "GET":
                query = self.rng.choice(["", "?quality=0", "?quality=50", "?crop=1,2", "?after=-5", "?timeout=0.1"])
                response = self.session.get(url + query, timeout=30)
            else:
                json_body, data = body_of(path, self.pose_now, self.rng)
                response = self.session.post(url, json=json_body, data=data, timeout=30)
            status = response.status_code
            if response.headers.get("X-Refused"):
                self.refused[phase] += 1  # the robot refused (a reflex): answered as the original, reason in the header
        except requests.RequestException as exc:
            status, response = 0, exc
        self.counts[f"{method} {path.split('/')[1] if path.startswith('/frame/') else path}"][status] += 1
        if status == 0 or status >= 500:
            text = response.text[:300] if hasattr(response, "text") else repr(response)
            self.failures.append({"phase": phase, "method": method, "path": path, "status": status, "body": text})
            print(f"{phase}: {method} {path} -> {status}: {text}", flush=True)
        return status

    def random_phase(self, n: int) -> None:
        self.pose_now = self.pose()
        for i in range(n):
            method, path = self.rng.choice(self.paths)
            self.request(method, path, "random")
            if i % 50 == 0:
                self.pose_now = self.pose()

    def recovery_phase(self, n: int, set_ceiling) -> None:
        self.pose_now = self.pose()
        set_ceiling(float(self.pose_now[2]) - 0.02)
        try:
            for _ in range(n):
                self.request("POST", self.rng.choice(["/clearerr", "/startimp"]), "after recovery")
                time.sleep(self.rng.uniform(0.0, 0.1))
                self.request("POST" if self.rng.random() < 0.9 else "GET", "/" + self.rng.choice(AFTER_RECOVERY),
                             "after recovery")  # fmt: skip
        finally:
            set_ceiling(1.3)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=1500, help="random requests (phase 1)")
    parser.add_argument("--recoveries", type=int, default=300, help="recoveries, each followed by a request (phase 2)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    path, spec = world_on_free_ports("ram_insertion", tempfile.mkdtemp(prefix="fuzz-"))
    url = spec.robots[0].url
    print(f"the ram_insertion world at {url} (cameras on) ...", flush=True)
    sim = launch_sim(None, f"task:={path}", "cameras_config:=")
    rclpy.init()
    node = rclpy.create_node("fuzz")
    try:
        session = requests.Session()
        ok = lambda: session.get(url + "health", timeout=2).status_code == 200  # noqa: E731
        if not wait_until(lambda: _quiet(ok), 120.0, 0.5):
            raise RuntimeError(f"the world did not come up; see {sim.log_path}")
        cameras = list(session.get(url + "cameras", timeout=5).json())
        parameters = AsyncParameterClient(node, "/franka_control")
        if not parameters.wait_for_services(timeout_sec=10.0):
            raise RuntimeError("franka_control has no parameter services")

        def set_ceiling(z: float) -> None:
            future = parameters.set_parameters([Parameter("reflex.workspace_max", value=[0.9, 0.9, z])])
            rclpy.spin_until_future_complete(node, future, timeout_sec=10.0)
            assert future.done() and all(r.successful for r in future.result().results), future.result()

        fuzz = Fuzz(url, cameras, rng)
        started = time.monotonic()
        print(f"{len(fuzz.paths)} routes; {args.requests} random requests ...", flush=True)
        fuzz.random_phase(args.requests)
        print(f"{args.recoveries} reflex recoveries, each followed by a request within 100 ms ...", flush=True)
        session.post(url + "clearerr", timeout=10)
        session.post(url + "jointreset", timeout=60)
        fuzz.recovery_phase(args.recoveries, set_ceiling)
        session.post(url + "clearerr", timeout=10)
        healthy = wait_until(lambda: _quiet(ok) and session.post(url + "getstate", timeout=5).status_code == 200, 30.0)
        seconds = time.monotonic() - started
    finally:
        node.destroy_node()
        rclpy.shutdown()
        sim.stop()
    total = sum(sum(c.values()) for c in fuzz.counts.values())
    fivexx = len(fuzz.failures)
    record = {
        "machine": machine(),
        "date": utc_stamp(),
        "seed": args.seed,
        "requests": total,
        "seconds": round(seconds, 1),
        "routes": len(fuzz.paths),
        "healthy_after": healthy,
        "five_xx": fivexx,
        "refused_by_the_robot": dict(fuzz.refused),
        "failures": fuzz.failures,
        "counts": {route: dict(sorted(c.items())) for route, c in sorted(fuzz.counts.items())},
    }
    print(json.dumps(record, indent=1))
    if not args.no_write:
        RECORD.write_text(json.dumps(record, indent=1) + "\n")
        statuses = Counter()
        for c in fuzz.counts.values():
            statuses.update(c)
        rows = [
            ("routes (method and path) / requests / seconds", f"{len(fuzz.paths)} / {total} / {seconds:.0f}"),
            ("answers by status", ", ".join(f"{s}: {n}" for s, n in sorted(statuses.items()))),
            ("5xx answers or no answer (random phase / right after recoveries)",
             f"{sum(f['phase'] == 'random' for f in fuzz.failures)} / "
             f"{sum(f['phase'] != 'random' for f in fuzz.failures)}"),
            ("answers of a trigger route whose service the robot refused (X-Refused: in a reflex), right after "
             "recoveries / in the random phase", f"{fuzz.refused['after recovery']} / {fuzz.refused['random']}"),
            ("the robot answers /getstate and /health afterwards", "yes" if healthy else "NO"),
        ]  # fmt: skip
        intro = (
            f"`scripts/run.sh python benchmarks/fuzz.py --seed {args.seed}`: the ram_insertion world, cameras on; "
            f"{args.requests} random requests over every route, then {args.recoveries} reflex recoveries each "
            "followed by a request within 100 ms (record: benchmarks/fuzz.json, counts per route)."
        )
        write_section(SECTION, "benchmarks/fuzz.py", intro, rows)
    return 1 if fivexx or not healthy else 0


def _quiet(predicate) -> bool:
    try:
        return bool(predicate())
    except requests.RequestException:
        return False


if __name__ == "__main__":
    sys.exit(main())
