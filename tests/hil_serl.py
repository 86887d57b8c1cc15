"""HIL-SERL's own code in the tests: its environment (.venv-hil-serl/, built by scripts/hil_serl_env.sh from the
checkout at ../shared/hil-serl, or HIL_SERL_DIR) and a way to run a snippet or a script of HIL-SERL's in it.
A missing checkout fails the test that needs it; nothing here skips."""

from __future__ import annotations

import atexit
import contextlib
import functools
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
from runner_module import runner  # noqa: E402, F401  (scripts/hil_serl.py as a module, for the tests)
from terminal import type_line  # noqa: E402  (scripts/: one place for what the runner and the tests type)

CHECKOUT = Path(os.environ.get("HIL_SERL_DIR") or ROOT.parent / "shared" / "hil-serl")
EXAMPLES = CHECKOUT / "examples"  # the directory HIL-SERL's scripts are run from
BUILD_TIMEOUT = 1200.0  # [s] a first build installs about 2 GB (about a minute here)
# the mark of a test that may build the environment on first use (pytest.ini's 300 s would cut the build short)
may_build = pytest.mark.timeout(BUILD_TIMEOUT + 300)


@functools.cache
def python() -> str:
    """The environment's interpreter, built (or brought up to date) by scripts/hil_serl_env.sh once a session."""
    if not (CHECKOUT / "serl_robot_infra" / "franka_env").is_dir():
        pytest.fail(
            f"HIL-SERL's checkout is not at {CHECKOUT}: these tests run HIL-SERL's own code from ../shared/hil-serl "
            "beside this repository, or from where HIL_SERL_DIR points",
            pytrace=False,
        )
    build = subprocess.run(
        [str(ROOT / "scripts" / "hil_serl_env.sh")],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=BUILD_TIMEOUT,
    )
    if build.returncode != 0:
        pytest.fail(f"scripts/hil_serl_env.sh failed:\n{build.stdout[-4000:]}", pytrace=False)
    return str(ROOT / ".venv-hil-serl" / "bin" / "python")


@functools.cache
def display() -> str | None:
    """An X display for HIL-SERL's camera windows (cv2.imshow: FrankaEnv's DISPLAY_IMAGE, DualFrankaEnv always;
    OpenCV built with its GUI aborts the process without one): this session's DISPLAY, else a private Xvfb for the
    whole test session (Debian's xvfb: scripts/install_xvfb.sh), on a display number nobody listens on (Xvfb's
    own -displayfd choice was seen to collide with another Xvfb of the machine). None where there is no Xvfb
    (OpenCV without its GUI needs none)."""
    if os.environ.get("DISPLAY"):
        return os.environ["DISPLAY"]
    if shutil.which("Xvfb") is None:
        return None
    listening = lambda n: f"/tmp/.X11-unix/X{n}" in Path("/proc/net/unix").read_text()  # noqa: E731
    for number in range(90 + os.getpid() % 50, 400):
        if listening(number):
            continue
        server = subprocess.Popen(
            ["Xvfb", f":{number}", "-screen", "0", "1280x800x24", "-nolisten", "tcp"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10.0
        while server.poll() is None and not listening(number) and time.monotonic() < deadline:
            time.sleep(0.05)
        if listening(number) and server.poll() is None:
            atexit.register(server.terminate)
            return f":{number}"
        server.kill()
    pytest.fail("no Xvfb could start", pytrace=False)


def environment(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment without what belongs to the tests' own Python (scripts/run.sh's PYTHONPATH
    of ROS 2 for Python 3.12, its libraries) and without FRANKA_SIM_*, plus `env`."""
    dropped = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "LD_LIBRARY_PATH")
    clean = {k: v for k, v in os.environ.items() if k not in dropped and not k.startswith("FRANKA_SIM_")}
    clean["PATH"] = f"{Path(python()).parent}{os.pathsep}{clean.get('PATH', '')}"
    clean["PYTHONUNBUFFERED"] = "1"
    if display() is not None:
        clean["DISPLAY"] = display()
    return {**clean, **(env or {})}


class Session:
    """A snippet or script of HIL-SERL's running in its environment that a test talks to as a person at its
    terminal does: waits for what it prints (a prompt of `input()`), answers on its stdin. Stopped (its process
    group killed) when the `with` block ends."""

    def __init__(self, code_or_script: str | Sequence[str], env: Mapping[str, str] | None = None, cwd=None) -> None:
        args = ["-c", code_or_script] if isinstance(code_or_script, str) else list(code_or_script)
        self.process = subprocess.Popen(
            [python(), *args],
            cwd=cwd,
            env=environment(env),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.output = ""
        self.seen = 0  # what expect() has matched so far ends here

    def expect(self, text: str, timeout: float, line: bool = False) -> str:
        """Waits until `text` is printed after what was matched before (a prompt need not end its line; with
        `line`, until the end of its line) and returns what follows it on its line. Fails the test past `timeout`
        s or when the process ends first, showing what it printed."""
        deadline = time.monotonic() + timeout
        fd = self.process.stdout.fileno()
        while True:
            found = self.output.find(text, self.seen)
            end = self.output.find("\n", found) if found >= 0 else -1
            if found >= 0 and (end >= 0 or not line):
                self.seen = found + len(text)
                return self.output[self.seen : end if end >= 0 else None]
            left = deadline - time.monotonic()
            ready = select.select([fd], [], [], max(0.0, left))[0] if left > 0 else []
            chunk = os.read(fd, 65536).decode(errors="replace") if ready else ""
            if not chunk:
                ended = "ended" if ready else f"printed no {text!r} within {timeout} s"
                pytest.fail(f"HIL-SERL's code {ended}; its output:\n{self.output}", pytrace=False)
            self.output += chunk

    def episode(self, timeout: float) -> dict:
        """ACTOR's next episode's outcome."""
        return json.loads(self.expect("@@ episode ", timeout, line=True))

    def answer(self, line: str = "", read_within: float = 10.0) -> None:
        """Types `line` and Enter, then waits (up to `read_within` s) until the process has read it, as a person
        does before pressing Enter again (scripts/terminal.py says why)."""
        type_line(self.process.stdin, line, read_within, alive=lambda: self.process.poll() is None)

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()


# the start of each agent-math check's snippet (tests/test_grasp_critic.py, test_temperature_floor.py,
# test_critic_target_bound.py, test_demo_losses.py), run in HIL-SERL's environment with hil_serl_experiments/ as its
# first argument: state_agent imported; `made_up_batch`, B transitions of a `dim` state and a `size` action, the
# grippers' columns -1, 0 or 1, a grasp_penalty drawn from `penalties` where given; `refusal`, what a maker refuses
AGENT_MATH = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import jax
import numpy as np
from flax.core import frozen_dict
import state_agent


def made_up_batch(rng, dim, size, B=16, grippers=(), penalties=()):
    actions = rng.uniform(-1, 1, (B, size)).astype(np.float32)
    actions[:, list(grippers)] = rng.choice([-1.0, 0.0, 1.0], (B, len(grippers)))
    batch = {"observations": {"state": rng.normal(size=(B, 1, dim)).astype(np.float32)},
             "next_observations": {"state": rng.normal(size=(B, 1, dim)).astype(np.float32)},
             "actions": actions, "rewards": rng.choice([0.0, 1.0], B).astype(np.float32),
             "masks": rng.choice([0.0, 1.0], B).astype(np.float32), "dones": np.zeros(B, bool)}
    if penalties:
        batch["grasp_penalty"] = rng.choice(penalties, B).astype(np.float32)
    return frozen_dict.freeze(batch)


def joint_choice(actions, grippers):  # the grippers' joint grasp choice by hand: each -1/0/1 a base-3 digit
    choice = np.zeros(len(actions), int)
    for gripper in grippers:
        choice = choice * 3 + np.round(np.asarray(actions)[:, gripper]).astype(int) + 1
    return choice


def grasp_values(agent, params, observations):  # the grasp critic's raw values per choice (an ensemble's members' mean)
    raw = np.asarray(agent.state.apply_fn({"params": params}, observations, name="grasp_critic"))
    return raw.mean(axis=0) if raw.ndim == 3 else raw


def refusal(make, **kwargs):  # the message of the ValueError with which make(**kwargs) refuses, or ""
    try:
        make(**kwargs)
        return ""
    except ValueError as error:
        return str(error)
"""

# HIL-SERL's env built in its environment from a JSON spec (the snippet's first argument), unaltered:
#   experiment   an example's name: its config's TrainConfig().get_environment(fake_env=False, classifier=False),
#                each config class of `servers` ({class: url}) pointed at the test's world, DISPLAY_IMAGE off
#   env, config  or one env class of HIL-SERL's and a config class ("module:Class" each), with SERVER_URL `server`,
#                DISPLAY_IMAGE off and the config attributes of `values` (lists as arrays); `cameras`: false leaves
#                the config's cameras out (a world without them); `wrappers`: "module:Class" applied in order
BUILD = r"""
import importlib, json, sys
import numpy as np

spec = json.loads(sys.argv[1])


def attribute(path):
    module, name = path.split(":")
    return getattr(importlib.import_module(module), name)


if spec.get("experiment"):
    config = importlib.import_module(f"experiments.{spec['experiment']}.config")
    for name, url in spec["servers"].items():
        setattr(getattr(config, name), "SERVER_URL", url)
        setattr(getattr(config, name), "DISPLAY_IMAGE", False)
    env = config.TrainConfig().get_environment(fake_env=False, save_video=False, classifier=False)
else:
    values = {k: np.array(v) if isinstance(v, list) else v for k, v in spec.get("values", {}).items()}
    overrides = {"SERVER_URL": spec["server"], "DISPLAY_IMAGE": False, **values}
    if spec.get("cameras") is False:
        overrides["REALSENSE_CAMERAS"] = {}
    env = attribute(spec["env"])(fake_env=False, config=type("Config", (attribute(spec["config"]),), overrides)())
    for wrapper in spec.get("wrappers", []):
        env = attribute(wrapper)(env)
"""

# An actor of HIL-SERL's (BUILD: its env and intervention wrappers) stepping a zero policy at 10 Hz, with in the
# spec also `truth` (a server of the world, for GET /task: the ground truth, which the env never sees) and
# `episodes`: how many; each: reset, "@@ reset", wait for a line on stdin, then step until the ground truth says
# success and nobody has intervened for 3 steps, or `max_steps`; "@@ episode {json}". 0: step for ever
ACTOR = (
    BUILD
    + r"""
import time
import requests

session = requests.Session()
truth = lambda: session.get(spec["truth"] + "task", timeout=5).json()
zero = np.zeros(env.action_space.shape)
print("@@ ready", flush=True)
episode = 0
while spec["episodes"] == 0 or episode < spec["episodes"]:
    env.reset()
    print("@@ reset", flush=True)
    input()
    started, steps, interventions, first_success, last_intervention = time.monotonic(), 0, 0, None, 0
    while spec["episodes"] == 0 or steps < spec["max_steps"]:
        obs, reward, done, truncated, info = env.step(zero)
        steps += 1
        if "intervene_action" in info:
            interventions, last_intervention = interventions + 1, steps
        if spec["episodes"] and truth()["success"]:
            first_success = first_success or steps
            if steps - last_intervention >= 3:
                break
    outcome = truth()
    print("@@ episode " + json.dumps({"success": outcome["success"], "detail": outcome["detail"], "steps": steps,
          "first_success": first_success, "interventions": interventions,
          "seconds": round(time.monotonic() - started, 1)}), flush=True)
    episode += 1
"""
)

# HIL-SERL's env (BUILD) driven call by call from a test (Remote): each line on stdin is a call, {"call":
# "reset"|"step"|..., "args": [...], "kwargs": {...}} or {"get": an attribute of the unwrapped env}, answered by
# "@@ result {json}" (arrays as lists, an observation as its keys' shapes), or by "@@ error ..." with the
# traceback (the env kept)
REMOTE = (
    BUILD
    + r"""
import traceback


def plain(value):
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value


def shapes(obs):
    return {k: shapes(v) for k, v in obs.items()} if isinstance(obs, dict) else list(np.shape(obs))


print("@@ ready", flush=True)
for line in sys.stdin:
    request = json.loads(line)
    try:
        if "get" in request:
            result = getattr(env.unwrapped, request["get"])
        else:
            args = [np.array(a) if isinstance(a, list) else a for a in request.get("args", [])]
            result = getattr(env, request["call"])(*args, **request.get("kwargs", {}))
            if request["call"] == "reset":
                result = {"observation": shapes(result[0]), "info": list(result[1])}
            elif request["call"] == "step":
                obs, reward, done, truncated, info = result
                result = {"observation": shapes(obs), "reward": reward, "done": done, "truncated": truncated,
                          "info": plain(info)}
        print("@@ result " + json.dumps(plain(result)), flush=True)
    except Exception:
        print("@@ error " + json.dumps(traceback.format_exc()), flush=True)
"""
)


class Remote(Session):
    """HIL-SERL's env (REMOTE) in its environment, called from the test: `reset()`, `step(action)`, any method with
    `call(name, *args, **kwargs)`, an attribute of the unwrapped env with `get(name)` (currpos, ...). Answers in
    `START` s; a call that raised fails the test with HIL-SERL's traceback."""

    def __init__(self, spec: Mapping, urls: Sequence[str], start: float = 150.0) -> None:
        super().__init__(["-c", REMOTE, json.dumps(spec)], env=sim_devices(urls), cwd=EXAMPLES)
        self.expect("@@ ready", start)

    def _ask(self, request: dict, timeout: float, prompts: Sequence[str] = ()):
        self.answer(json.dumps(request))
        for prompt in prompts:  # what the call asks a person on the terminal (HandOffEnv's reset: Enter)
            self.expect(prompt, timeout)
            self.answer()
        kind = ""
        while kind not in ("result", "error"):
            kind, _, payload = self.expect("@@ ", timeout, line=True).partition(" ")
        reply = json.loads(payload)
        if kind == "error":
            pytest.fail(f"HIL-SERL's env raised:\n{reply}", pytrace=False)
        return reply

    def call(self, name: str, *args, timeout: float = 120.0, prompts: Sequence[str] = (), **kwargs):
        return self._ask({"call": name, "args": [_plain(a) for a in args], "kwargs": kwargs}, timeout, prompts)

    def reset(self, prompts: Sequence[str] = (), **kwargs) -> dict:
        return self.call("reset", prompts=prompts, **kwargs)

    def step(self, action, timeout: float = 30.0) -> dict:
        return self.call("step", action, timeout=timeout)

    def get(self, name: str):
        return self._ask({"get": name}, 30.0)


def _plain(value):
    return value.tolist() if hasattr(value, "tolist") else value


ACTOR_START = 150.0  # [s] HIL-SERL's env up (JAX's import, its cameras) and its first reset, on a loaded machine


def sim_devices(urls: Sequence[str]) -> dict[str, str]:
    """The variables of this repository's stand-ins, for HIL-SERL's code against the world of `urls`: its cameras,
    a SpaceMouse per server (in the order of `urls`: DualSpacemouseIntervention reads the left arm's first), the
    keyboard; and, for two servers, those of this repository's two-arm state experiments (FRANKA_SIM_URLS)."""
    return {
        "FRANKA_SIM_URL": urls[0],
        **({"FRANKA_SIM_URLS": ",".join(urls)} if len(urls) > 1 else {}),
        "FRANKA_SIM_SPACEMOUSE_URLS": ",".join(urls),
        **{f"FRANKA_SIM_{device}": "1" for device in ("CAMERAS", "SPACEMOUSE", "KEYS")},
    }


def actor(spec: Mapping, urls: Sequence[str]) -> Session:
    """ACTOR with `spec` (the ground truth and max_steps defaulted) against the world of `urls`."""
    spec = {"truth": urls[0], "max_steps": 100, **spec}
    return Session(["-c", ACTOR, json.dumps(spec)], env=sim_devices(urls), cwd=EXAMPLES)


def run(
    code_or_script: str | Sequence[str],
    env: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
    stdin: str | None = None,
    timeout: float = 120.0,
) -> tuple[int, str]:
    """Runs, in HIL-SERL's environment, a snippet of code (a str) or a script and its arguments (a list, e.g.
    ["record_demos.py", "--exp_name=ram_insertion"] with cwd=EXAMPLES), with `env` added (FRANKA_SIM_URL,
    FRANKA_SIM_CAMERAS=1, ...) and `stdin` as its input. Returns (return code, stdout and stderr together); the
    output is printed when the code is not 0, so that pytest shows it. Past `timeout` seconds the process and
    what it started are killed and the test fails, showing the output."""
    args = ["-c", code_or_script] if isinstance(code_or_script, str) else list(code_or_script)
    process = subprocess.Popen(
        [python(), *args],
        cwd=cwd,
        env=environment(env),
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group: a timeout ends its children too (forked readers, ...)
    )
    try:
        output, _ = process.communicate(stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        pytest.fail(f"{args} in HIL-SERL's environment ran past {timeout} s; its output:\n{output}", pytrace=False)
    with contextlib.suppress(ProcessLookupError):  # what it left running
        os.killpg(process.pid, signal.SIGKILL)
    if process.returncode != 0:
        print(f"{args} in HIL-SERL's environment exited with {process.returncode}; its output:\n{output}")
    return process.returncode, output


def reported(output: str) -> dict:
    """What a snippet run in HIL-SERL's environment reported: the JSON it printed after "@@ " on one line."""
    return json.loads(output.split("@@ ", 1)[1].splitlines()[0])


def check(snippet: str, timeout: float) -> dict:
    """A snippet of agent code run in HIL-SERL's environment with this repository's hil_serl_experiments/ as its
    argv[1] (no world): its report, once it exited with 0."""
    code, output = run(["-c", snippet, str(ROOT / "hil_serl_experiments")], timeout=timeout)
    assert code == 0, output
    return reported(output)
