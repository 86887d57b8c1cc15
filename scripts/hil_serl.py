#!/usr/bin/env python3
"""One command per step of a HIL-SERL example experiment on the simulated Franka.

    scripts/hil_serl.py TASK STEP [options]          (or: make experiment TASK=... STEP=... ARGS="...")

The steps, in their order; each runs HIL-SERL's own script, unaltered, from its checkout, in the experiment
directory (runs/TASK/ by default, where the script finds what the steps before it left there):

    env         build HIL-SERL's environment, .venv-hil-serl/ (every other step does this first; cached)
    successes   record_success_fail.py     -> classifier_data/*.pkl  (the scripted expert presses space, Esc)
    classifier  train_reward_classifier.py -> classifier_ckpt/       (needs classifier_data/)
    demos       record_demos.py            -> demo_data/*.pkl        (needs classifier_ckpt/)
    train       train_rlpd.py --learner, then --actor -> first_run/  (needs classifier_ckpt/, demo_data/)

and, for this repository's experiments (hil_serl_experiments/: reward from the simulator's ground truth, no
classifier):

    evaluate    the policy alone (--policy checkpoint|expert|zero), scored by the ground truth -> logs/.../
    loop        demos, then train with evaluations while training, a named checkpoint confirmed on fresh
                episodes, the learning curve -> logs/loop-*/loop.json, learning_curve.png
    probe       the experiment's agent trained offline on a run's kept transitions (--checkpoint-path's
                demo_buffer/ and buffer/), its critics' values -> logs/probe-*/probe.json (no world); with
                --probe-checkpoint STEP, that checkpoint on the expert's demo states instead (no training)

A step starts the task's world (make sim ARGS="task:=TASK") unless one answers at the config's SERVER_URL,
and the scripted expert (clients/scripted_expert) unless --expert person (then: the teleop page). It shows
progress, says where the outputs went, and stops every process it started when the step ends, on Ctrl-C or
SIGTERM, or when one of them dies (showing that one's last lines). Exit status: 0 done, 1 a part failed,
2 something the step needs is missing, 130 stopped by Ctrl-C. Standard library only (Python >= 3.10).
"""

from __future__ import annotations

import argparse
import ast
import codecs
import contextlib
import ipaddress
import json
import math
import os
import pickle
import re
import select
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path

import learning_record
import terminal

ROOT = Path(__file__).resolve().parent.parent
VENV_PYTHON = ROOT / ".venv-hil-serl" / "bin" / "python"
STEPS = ("env", "successes", "classifier", "demos", "train", "evaluate", "loop", "probe")
SCRIPTS = {
    "successes": "record_success_fail.py",
    "classifier": "train_reward_classifier.py",
    "demos": "record_demos.py",
    "train": "train_rlpd.py",
}
RESNET_URL = "https://github.com/rail-berkeley/serl/releases/download/resnet10/resnet10_params.pkl"
RESNET_PATH = Path("~/.serl/resnet10_params.pkl")  # serl_launcher's reward_classifier.py and train_utils.py
RANDOM_MARK = "RANDOM_ENCODER_WEIGHTS.txt"  # in an experiment directory some of whose outputs used random weights
LABEL = " [RANDOM ENCODER WEIGHTS, not SERL's ResNet-10]"
OWN_EXPERIMENTS = ROOT / "hil_serl_experiments"  # this repository's experiments; launch.py runs HIL-SERL's scripts
LEARNER_PORTS = (5588, 5589)  # agentlace's request and broadcast ports (serl_launcher's make_trainer_config)
# the learner's niceness: on a shared machine the worlds and actors, which keep the robot's 10 Hz, come first
# (two worlds, their actors and a learner keep two cores 95 % busy: docs/scaling.md)
LEARNER_NICE = 10
# what train_rlpd.py passes the agent factory from its TrainConfig: refused in --agent before anything starts
# (state_agent's factory refuses any such value when the agent is made)
TRAIN_CONFIG_AGENT_ARGS = {"discount"}
WORLD_TIMEOUT = 180.0  # [s] a first launch builds nothing but loads meshes, DDS and the camera process
SERVER_GRACE = 10.0  # [s] a training world's server not answering this long (its launch alive): the world restarts
DROPPED_ENV = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "LD_LIBRARY_PATH")  # scripts/run.sh's, not HIL-SERL's
TQDM = re.compile(r"^(?:(?P<desc>.*?): )?\s*(?:\d+%\|[^|]*\| )?(?P<n>\d+)/(?P<total>\d+) \[")
SAVED = re.compile(r"saved (\d+) (successful transitions|failure transitions|demos) to (\S+)")
EPISODE = re.compile(r"\] episode (\d+): (success|no success) after ([\d.]+) s, (.*)$")
STALLS = re.compile(r"held the arms still in (\d+) of its turns")  # the expert's --stalled turns in an episode
EPOCH = re.compile(r"Epoch: (\d+), Train Loss: ([\d.]+), Train Accuracy: ([\d.]+)")


class StepFailed(Exception):
    """Ends the step: `code` is the exit status, the message is said once."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def say(message: str) -> None:
    print(f"\033[1;34m[hil-serl]\033[0m {message}", flush=True)


# ------------------------------------------------------------------------------------------------- the experiment
@dataclass
class Experiment:
    """A HIL-SERL example experiment as its config.py has it, and where this run of a step writes."""

    task: str
    servers: list[str]  # the config's SERVER_URLs, in its order (object_handover: left, right)
    examples: Path  # HIL-SERL's examples/ (its scripts and `experiments` package)
    directory: Path  # where the scripts run and write (as examples/experiments/TASK/ for run_actor.sh)
    logs: Path  # this step's logs and summary.json
    uses_encoder: bool  # the step's scripts load the ResNet-10 (the classifier's, the agent's)
    random_weights: bool = False  # this step runs with random encoder weights (--random-encoder-weights)
    world: str = ""  # the simulated world's task (default: the experiment's name)
    world_args: tuple[str, ...] = ()  # its launch arguments beyond task:=
    own: bool = False  # one of this repository's experiments (hil_serl_experiments/): launch.py runs the scripts
    agent: str = ""  # --agent: hyperparameters over the config's (JSON; $HIL_SERL_AGENT of its scripts)
    train_config: str = ""  # --train-config: TrainConfig attributes over the config's (JSON; $HIL_SERL_TRAIN_CONFIG)
    index: int = 1  # which of the run's worlds (--worlds) this is: its parts' names end in -INDEX from the second on

    def __post_init__(self) -> None:
        self.world = self.world or self.task

    def name(self, part: str) -> str:
        """The name of this world's `part` (world, actor, expert): `part` for the first, `part-INDEX` for others."""
        return part if self.index == 1 else f"{part}-{self.index}"

    @property
    def label(self) -> str:
        """What a result line carries where random encoder weights made it (this step's, or the classifier's
        and demos' it builds on)."""
        random = self.random_weights or (self.directory / RANDOM_MARK).exists()
        return LABEL if self.uses_encoder and random else ""


def server_urls(source: str) -> list[str]:
    return re.findall(r'SERVER_URL(?:\s*:\s*str)?\s*=\s*"([^"]+)"', source)


def known_tasks(hil_serl: Path) -> list[str]:
    """The experiments a step can run: HIL-SERL's examples/experiments/*/ and this repository's, with a config."""
    found = [p.parent.name for p in (hil_serl / "examples" / "experiments").glob("*/config.py")]
    return sorted(found) + sorted(p.parent.name for p in (OWN_EXPERIMENTS / "experiments").glob("*/config.py"))


def fresh_folder(path: Path) -> Path:
    """`path`, made; `path`-2, -3, ... where it is taken (two steps started in the same second keep their logs
    apart: two probes of one run, side by side)."""
    for n in range(1, 1000):
        candidate = path if n == 1 else path.with_name(f"{path.name}-{n}")
        try:
            candidate.mkdir(parents=True)
            return candidate
        except FileExistsError:
            continue
    raise StepFailed(f"no free folder name beside {path}", 2)


def load_experiment(hil_serl: Path, task: str, directory: Path, step: str) -> Experiment:
    logs = directory / "logs" / f"{step}-{datetime.now():%Y%m%d-%H%M%S}"  # made once the experiment is known
    own = OWN_EXPERIMENTS / "experiments" / task / "config.py"
    if own.is_file():
        return own_experiment(hil_serl, task, own.read_text(), directory, logs)
    config = hil_serl / "examples" / "experiments" / task / "config.py"
    if not config.is_file():
        known = known_tasks(hil_serl)
        raise StepFailed(f"no experiment {task!r} in {hil_serl}/examples/experiments nor {OWN_EXPERIMENTS} "
                         f"(there: {', '.join(known)})", 2)  # fmt: skip
    text = config.read_text()
    servers = server_urls(text)
    for module in re.findall(r"from franka_env\.envs\.(\w+) import", text) if not servers else ():  # inherited
        servers = servers or server_urls((hil_serl / "serl_robot_infra/franka_env/envs" / f"{module}.py").read_text())
    if not servers:
        raise StepFailed(f"no SERVER_URL in {config} nor in the franka_env modules it imports", 2)
    logs = fresh_folder(logs)
    return Experiment(task, servers, hil_serl / "examples", directory, logs, step != "successes")


def own_experiment(hil_serl: Path, task: str, text: str, directory: Path, logs: Path) -> Experiment:
    """One of this repository's experiments (hil_serl_experiments/experiments/TASK/config.py): the world it runs on
    and that world's launch arguments are its config's WORLD and WORLD_ARGS. A one-arm experiment's server is
    $FRANKA_SIM_URL or the default its config names (`server_url("...")`), the server's address added to the launch
    arguments (a world of its own per address); a two-arm one's are $FRANKA_SIM_URLS (left,right) or the defaults
    its config names (`arm_server_urls([...])`: the world's own, fixed)."""
    default = re.search(r'server_url\("([^"]+)"\)', text)
    defaults = re.search(r"arm_server_urls\(\[([^\]]+)\]\)", text)
    world = re.search(r'WORLD\s*=\s*"([^"]+)"', text)
    if not (default or defaults) or world is None:
        raise StepFailed(f'{task}\'s config names no server_url("...") nor arm_server_urls([...]) defaults, or no '
                         "WORLD", 2)  # fmt: skip
    if default:
        servers = [os.environ.get("FRANKA_SIM_URL") or default[1]]
    else:
        servers = [u for u in os.environ.get("FRANKA_SIM_URLS", "").split(",") if u.strip()]
        servers = servers or re.findall(r'"([^"]+)"', defaults[1])
    servers = [url.strip().rstrip("/") + "/" for url in servers]
    extra = re.search(r'WORLD_ARGS\s*=\s*"([^"]*)"', text)
    args = tuple(extra[1].split() if extra else ())
    if default:
        address = urllib.parse.urlsplit(servers[0])
        args += (f"host:={address.hostname}", f"port:={address.port or 80}")
    logs = fresh_folder(logs)
    return Experiment(task, servers, hil_serl / "examples", directory, logs, False, world=world[1], world_args=args,
                      own=True)  # fmt: skip


def world_of(exp: Experiment, index: int) -> Experiment:
    """World `index` of a run with --worlds (1: the experiment's own): a one-arm state experiment's server with the
    address's last number index - 1 higher (127.0.0.2, 127.0.0.3, ...) on the same port, a world of its own there."""
    if index == 1:
        return exp
    if not exp.own or len(exp.servers) != 1:
        raise StepFailed(f"--worlds above 1 is for this repository's one-arm state experiments: {exp.task} has "
                         f"{len(exp.servers)} server(s) at fixed addresses" if exp.own else "--worlds above 1 is "
                         "for this repository's state experiments (HIL-SERL's own name their server in the "
                         "config)", 2)  # fmt: skip
    address = urllib.parse.urlsplit(exp.servers[0])
    host, port = ipaddress.ip_address(address.hostname) + (index - 1), address.port or 80
    args = (*(a for a in exp.world_args if not a.startswith(("host:=", "port:="))), f"host:={host}", f"port:={port}")
    return replace(exp, servers=[f"{address.scheme}://{host}:{port}/"], world_args=args, index=index)


# ------------------------------------------------------------------------------------------------- processes
Handler = Callable[["Part", str], None]
REPEATS, REPEAT_WINDOW = 3, 600.0  # a part that dies this many times within this many seconds stops the step


class Part:
    """A process of the step in a process group of its own; its output goes to LOGS/NAME.log and, split into
    records at each newline or carriage return (tqdm's refreshes), to `on_record`; raw text to `on_text`."""

    def __init__(
        self,
        name: str,
        argv: list[str],
        logs: Path,
        env: dict[str, str],
        cwd: Path | None = None,
        on_record: Handler | None = None,
        on_text: Handler | None = None,
        pass_fds: tuple[int, ...] = (),
    ) -> None:
        self.name, self.log_path = name, logs / f"{name}.log"
        self.on_record, self.on_text = on_record, on_text
        self.records: deque[str] = deque(maxlen=400)
        self.popen = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            pass_fds=pass_fds,
        )
        self.reader = threading.Thread(target=self._read, name=f"read-{name}", daemon=True)
        self.reader.start()

    def _read(self) -> None:
        decoder, pending = codecs.getincrementaldecoder("utf-8")(errors="replace"), ""
        with open(self.log_path, "ab") as log:
            while chunk := os.read(self.popen.stdout.fileno(), 65536):
                log.write(chunk)
                log.flush()
                text = decoder.decode(chunk)
                self._call(self.on_text, text)
                *records, pending = re.split(r"[\r\n]", pending + text)
                if TQDM.search(pending) and pending.rstrip().endswith("]"):  # a refresh ends no line: take it now
                    records.append(pending)
                    pending = ""
                for record in filter(str.strip, records):
                    self.records.append(record)
                    self._call(self.on_record, record)

    def _call(self, handler: Handler | None, text: str) -> None:
        try:
            if handler is not None:
                handler(self, text)
        except Exception as exc:  # a parser's fault must not stop the reading (the process would block)
            print(f"[hil-serl] reading {self.name}'s output: {exc!r}", file=sys.stderr, flush=True)

    def answer(self, line: str = "") -> None:
        """Types `line` and Enter on the part's terminal, as a person: the next answer waits until this one was
        read (HandOffEnv's two arms' prompts, scripts/terminal.py)."""
        with contextlib.suppress(OSError):
            terminal.type_line(self.popen.stdin, line, alive=self.alive)

    def alive(self) -> bool:
        return self.popen.poll() is None

    def drain(self, timeout: float = 2.0) -> None:
        """Once the process ended: wait up to `timeout` s until what it wrote last is read (into `records`, the log
        and the handlers). The process can end before its reader has read its last lines; a child that inherited
        the pipe keeps it open, hence the limit."""
        self.reader.join(timeout=timeout)

    def signal(self, sig: int) -> None:
        """`sig` to the part's whole process group (SIGSTOP, SIGCONT: a loop's evaluation pauses the learner)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.popen.pid, sig)

    def stopped(self) -> bool:
        """Whether the part's process is stopped (SIGSTOP takes effect when the kernel next schedules it)."""
        try:
            return Path(f"/proc/{self.popen.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in "Tt"
        except (OSError, IndexError):
            return not self.alive()

    def _group_alive(self) -> bool:
        self.popen.poll()  # reaps the leader, so that a group of one zombie reads as gone
        try:
            os.killpg(self.popen.pid, 0)
            return True
        except ProcessLookupError:
            return False

    def stop(self, grace: float = 10.0) -> None:
        """SIGINT to the whole group, then SIGTERM after `grace` s, then SIGKILL after 5 s more (a stopped group is
        continued first: a stopped process does not act on SIGINT)."""
        self.signal(signal.SIGCONT)
        for sig, wait in ((signal.SIGINT, grace), (signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
            if not self._group_alive():
                break
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.popen.pid, sig)
            deadline = time.monotonic() + wait
            while time.monotonic() < deadline and self._group_alive():
                time.sleep(0.1)
        self.popen.wait()
        self.drain()

    def last_lines(self, n: int = 15) -> str:
        return "\n".join(f"    {record}" for record in list(self.records)[-n:])


class Parts:
    """The processes the step started, stopped in the reverse order when the `with` block ends. A part that dies
    is restarted where `restarts` names how (train, loop: a world, its actor, its expert), each restart recorded
    in `restarted`; a part without one, or one that died REPEATS times within REPEAT_WINDOW, stops the step."""

    def __init__(self) -> None:
        self.parts: list[Part] = []
        self.expected_exit: set[str] = set()  # parts whose end is not a failure (done, or a script that exits)
        self.restarts: dict[str, Callable[[Part], None]] = {}  # part name -> what starts it again
        self.restarted: list[dict] = []  # each restart: the part, its exit status, when, how long it took

    def add(self, part: Part) -> Part:
        self.parts.append(part)
        return part

    def stop(self, names: set[str]) -> None:
        """Stop the parts of these names now (the last started first)."""
        for part in reversed(list(self.parts)):
            if part.name in names:
                part.stop()
                self.parts.remove(part)

    def check(self) -> None:
        """A part that ended and should be running: restarted (said and recorded) where `restarts` says how, else
        StepFailed with its last lines."""
        for part in list(self.parts):
            if part.name in self.expected_exit or part.alive() or part not in self.parts:
                continue
            part.drain()
            died = (f"{part.name} ended (exit status {part.popen.returncode}); its last lines ({part.log_path}):\n"
                    f"{part.last_lines()}")  # fmt: skip
            restart = self.restarts.get(part.name)
            if restart is None:
                raise StepFailed(died)
            recent = [r for r in self.restarted if r["part"] == part.name and time.time() - r["at"] < REPEAT_WINDOW]
            if len(recent) + 1 >= REPEATS:
                raise StepFailed(f"{died}\n{part.name} died {len(recent) + 1} times within {REPEAT_WINDOW / 60:.0f} "
                                 "minutes: the runner stops rather than restart it again")  # fmt: skip
            say(f"{died}\nthe runner starts {part.name} again")
            part.stop(grace=2.0)  # what its process forked and left (HIL-SERL's SpaceMouse reader and its Manager)
            self.parts.remove(part)
            started, at = time.monotonic(), time.time()
            restart(part)
            took = round(time.monotonic() - started, 1)
            self.restarted.append({"part": part.name, "exit_status": part.popen.returncode, "at": at,
                                   "recovery_s": took})  # fmt: skip
            say(f"{part.name} is running again after {took} s ({len(self.restarted)} restart(s) in this step)")

    def __enter__(self) -> Parts:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.parts:
            say(f"stopping {', '.join(p.name for p in reversed(self.parts))}")
        for part in reversed(self.parts):
            part.stop(grace=5.0 if part.name in ("world", "xvfb") else 10.0)


def interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def hil_serl_env(exp: Experiment, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of HIL-SERL's scripts and the expert: this one without scripts/run.sh's Python 3.12
    paths, with the stand-ins switched on (cameras, SpaceMouse, keys from the simulator's server)."""
    env = {k: v for k, v in os.environ.items() if k not in DROPPED_ENV}
    if exp.agent:
        env["HIL_SERL_AGENT"] = exp.agent
    if exp.train_config:
        env["HIL_SERL_TRAIN_CONFIG"] = exp.train_config
    env.update(
        FRANKA_SIM_URL=exp.servers[0].rstrip("/"),
        **({"FRANKA_SIM_URLS": ",".join(exp.servers)} if len(exp.servers) > 1 else {}),  # a two-arm state experiment's
        FRANKA_SIM_CAMERAS="1",
        FRANKA_SIM_SPACEMOUSE="1",
        FRANKA_SIM_KEYS="1",
        PYTHONUNBUFFERED="1",
        XLA_PYTHON_CLIENT_PREALLOCATE="false",  # as HIL-SERL's run_actor.sh / run_learner.sh
    )
    return {**env, **(extra or {})}


# ------------------------------------------------------------------------------------------------- HTTP
def http(url: str, method: str = "GET", body: dict | None = None, timeout: float = 3.0) -> tuple[int, bytes]:
    data = json.dumps(body).encode() if body is not None else (b"" if method == "POST" else None)
    request = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()
    except (OSError, ValueError):
        return 0, b""


def world_task(url: str) -> str | None:
    """The task of the simulated world answering at `url`; '' while it has no fresh state; None: nobody."""
    status, body = http(url.rstrip("/") + "/health")
    if status == 0:
        return None
    if status != 200 or json.loads(body or b"{}").get("status") != "ok":
        return ""
    status, body = http(url.rstrip("/") + "/task")
    return json.loads(body).get("task", "") if status == 200 else ""


# ------------------------------------------------------------------------------------------------- what a step needs
def gpu_present() -> bool:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return False
    listed = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=30)
    return listed.returncode == 0 and "GPU " in listed.stdout


def build_env(hil_serl: Path) -> None:
    """scripts/hil_serl_env.sh: Python 3.11, the pins that import together, JAX for this machine, the clients."""
    jax = os.environ.get("HIL_SERL_JAX") or ("cuda12" if gpu_present() else "cpu")
    env = {k: v for k, v in os.environ.items() if k not in DROPPED_ENV}
    env.update(HIL_SERL_DIR=str(hil_serl), HIL_SERL_JAX=jax)
    started = time.monotonic()
    if subprocess.run([str(ROOT / "scripts" / "hil_serl_env.sh")], env=env).returncode != 0:
        raise StepFailed("scripts/hil_serl_env.sh could not build HIL-SERL's environment (its message above)", 2)
    why = "an NVIDIA GPU is present" if jax == "cuda12" else "no NVIDIA GPU here"
    say(f"HIL-SERL's environment: .venv-hil-serl/ (Python 3.11, JAX {jax}: {why}; {time.monotonic() - started:.0f} s)")


def encoder_weights(exp: Experiment, random_ok: bool) -> dict[str, str]:
    """What HIL-SERL's script needs in its environment to find ResNet-10 weights ({}: the user's ~/.serl)."""
    if RESNET_PATH.expanduser().is_file():
        if random_ok:
            say(f"--random-encoder-weights ignored: SERL's pretrained ResNet-10 is at {RESNET_PATH}")
        return {}
    if not random_ok:
        status, _ = http(RESNET_URL, method="HEAD", timeout=8.0)
        if 200 <= status < 400:
            say(f"SERL's pretrained ResNet-10 is not at {RESNET_PATH}: HIL-SERL downloads it there from {RESNET_URL}")
            return {}
        raise StepFailed(
            f"SERL's pretrained ResNet-10 is not at {RESNET_PATH} and {RESNET_URL} cannot be reached from here: "
            f"download it where it can and copy it to {RESNET_PATH}, or run with --random-encoder-weights "
            "(random weights, every result labelled)",
            2,
        )
    home = exp.logs / "home"
    (home / ".serl").mkdir(parents=True, exist_ok=True)
    (home / ".serl" / RESNET_PATH.name).write_bytes(pickle.dumps({}))  # no parameter: the random init stays
    (exp.directory / RANDOM_MARK).write_text(
        "Outputs in this directory were made with RANDOM encoder weights (scripts/hil_serl.py "
        "--random-encoder-weights), not SERL's pretrained ResNet-10: not a real result.\n"
    )
    exp.random_weights = True
    say(
        f"RANDOM ENCODER WEIGHTS: SERL's ResNet-10 cannot be had here; HIL-SERL's scripts of this step read an "
        f"empty {RESNET_PATH.name} from a private HOME ({home}), so the encoder keeps its random initialisation "
        f"(HIL-SERL prints 'Loaded 0.0M parameters'); {RESNET_PATH.parent} is untouched; {exp.directory.name}/"
        f"{RANDOM_MARK} marks the directory"
    )
    return {"HOME": str(home)}


def install_xvfb() -> str | None:
    script = ROOT / "scripts" / "install_xvfb.sh"
    if subprocess.run([str(script)]).returncode != 0:
        return None
    return shutil.which("Xvfb")


def display(exp: Experiment, parts: Parts) -> dict[str, str]:
    """An X display for the windows of HIL-SERL's envs (cv2.imshow in a thread: FrankaEnv's with the config's
    DISPLAY_IMAGE, DualFrankaEnv's always): the user's, else a private Xvfb. Without one, OpenCV aborts the
    script at its first frame."""
    if os.environ.get("DISPLAY"):
        say(f"HIL-SERL's env shows its cameras (cv2.imshow) on your display {os.environ['DISPLAY']}")
        return {"DISPLAY": os.environ["DISPLAY"]}
    xvfb = shutil.which("Xvfb") or install_xvfb()
    if xvfb is None:
        raise StepFailed(
            "HIL-SERL's env shows its cameras with cv2.imshow, which needs an X display, and there is none (no "
            "DISPLAY, no Xvfb): "
            "install Debian's xvfb (apt-get install xvfb) or run where DISPLAY is set",
            2,
        )
    read, write = os.pipe()
    argv = [xvfb, "-displayfd", str(write), "-screen", "0", "1280x800x24", "-nolisten", "tcp"]
    part = parts.add(Part("xvfb", argv, exp.logs, dict(os.environ), pass_fds=(write,)))
    os.close(write)
    number = ""
    deadline = time.monotonic() + 20.0
    while not number.endswith("\n") and time.monotonic() < deadline and part.alive():
        if select.select([read], [], [], 0.5)[0]:
            number += os.read(read, 16).decode() or "\n"
    os.close(read)
    if not number.strip().isdigit():
        raise StepFailed(f"Xvfb did not start; its output ({part.log_path}):\n{part.last_lines()}")
    say(
        f"no X display here: the windows of HIL-SERL's env (cv2.imshow of the cameras: the config's DISPLAY_IMAGE, "
        f"DualFrankaEnv's) go to a private Xvfb "
        f":{number.strip()}, which nobody sees and which stops with the step (with a desktop, set DISPLAY to see them)"
    )
    return {"DISPLAY": f":{number.strip()}"}


def world(exp: Experiment, parts: Parts) -> Part | None:
    """The task's world: the one this step launched before (the loop's demos'), one answering at the config's
    SERVER_URLs that is not this step's (None), or one launched for this step (its part)."""
    launched = next((p for p in parts.parts if p.name == exp.name("world") and p.alive()), None)
    if launched is not None and all(world_task(url) == exp.world for url in exp.servers):
        return launched  # this step's: restarted where it dies (train)
    found = {url: world_task(url) for url in exp.servers}
    if all(task == exp.world for task in found.values()):
        say(f"using the {exp.world} world already running at {', '.join(exp.servers)}")
        return None
    other = {url: task for url, task in found.items() if task not in (None, exp.world)}
    if other:
        url, task = next(iter(other.items()))
        what = f"a world of task {task!r}" if task else "a server without a fresh state (a world starting?)"
        raise StepFailed(f"{what} answers at {url}, where {exp.task}'s config expects its own: stop it first", 2)
    launch = [f"task:={exp.world}", *exp.world_args]
    argv = [str(ROOT / "scripts" / "run.sh"), "ros2", "launch", "isaac_franka_bridge", "sim.launch.py", *launch]
    part = parts.add(Part(exp.name("world"), argv, exp.logs, dict(os.environ)))
    say(
        f'starting the {exp.world} world (as make sim ARGS="{" ".join(launch)}"; log {part.log_path}); it stops with '
        "this step: run make sim in another terminal to keep one across steps"
    )
    deadline = time.monotonic() + WORLD_TIMEOUT
    while not all(world_task(url) == exp.world for url in exp.servers):
        parts.check()
        if time.monotonic() > deadline:
            raise StepFailed(f"the world did not answer within {WORLD_TIMEOUT:.0f} s; its log: {part.log_path}")
        time.sleep(1.0)
    say(f"the world answers at {', '.join(exp.servers)}")
    return part


# ------------------------------------------------------------------------------------------------- progress
@dataclass
class Bar:
    """A tqdm bar of one of HIL-SERL's scripts, from its refreshes."""

    n: int = 0
    total: int = 0
    desc: str = ""
    first_at: float | None = None  # the first refresh: the bar is made after the env's first reset
    last_at: float = 0.0
    one_at: float | None = None  # when n first reached 1
    refreshes: int = 0  # refreshes by a description change (record_demos: one per env step)

    def feed(self, record: str) -> bool:
        match = TQDM.search(record)
        if match is None:
            return False
        now, n, desc = time.monotonic(), int(match["n"]), (match["desc"] or "").strip()
        if self.first_at is None:
            self.first_at = now
        elif not (desc == self.desc and n > self.n):  # an update's refresh repeats the description
            self.refreshes += 1
        if n >= 1 and self.one_at is None:
            self.one_at = now
        self.n, self.total, self.desc, self.last_at = n, int(match["total"]), desc, now
        return True

    def rate(self, count: int | None = None) -> float:
        """`count` (default n) per second since the first refresh."""
        span = self.last_at - (self.first_at or self.last_at)
        return (self.n if count is None else count) / span if span > 0 else 0.0


@dataclass
class ActorBars:
    """The actors' tqdm bars (train_rlpd.py's actor: a refresh per env step), one per actor process started (a
    restarted actor's bar starts again): their sum, and its rate since the first."""

    bars: dict[str, Bar] = field(default_factory=dict)

    def feed(self, key: str, record: str) -> bool:
        return self.bars.setdefault(key, Bar()).feed(record)

    @property
    def n(self) -> int:
        return sum(bar.n for bar in self.bars.values())

    @property
    def first_at(self) -> float | None:
        return min((bar.first_at for bar in self.bars.values() if bar.first_at is not None), default=None)

    def rate(self) -> float:
        """Env steps per second over all actors, since the first refresh of any."""
        first = self.first_at
        span = max((bar.last_at for bar in self.bars.values()), default=0.0) - (first or 0.0)
        return self.n / span if first is not None and span > 0 else 0.0


@dataclass
class ExpertLog:
    """The scripted expert's episodes, from its lines."""

    episodes: int = 0
    successes: int = 0
    seconds: float = 0.0
    intervened: float = 0.0  # seconds of those episodes in which it drove (after --patience)
    alone: deque = field(default_factory=lambda: deque(maxlen=10))  # the last episodes: the policy's success alone?
    alone_successes: int = 0  # episodes the policy finished before the expert stepped in
    stalled_turns: int = 0  # --stalled: the policy's turns the expert ended early, the arms held still
    stalled_episodes: int = 0  # the episodes with one such turn or more

    def feed(self, part: Part, record: str) -> None:
        match = EPISODE.search(record)
        if match is None:
            return
        took, how = float(match[3]), match[4]
        since = re.search(r"from ([\d.]+) s on", how)
        alone = match[2] == "success" and "by the policy" in how
        self.alone.append(alone)
        self.alone_successes += alone
        if stalls := STALLS.search(how):
            self.stalled_turns += int(stalls[1])
            self.stalled_episodes += 1
        self.episodes += 1
        self.successes += match[2] == "success"
        self.seconds += took
        drove = re.search(r"the expert driving ([\d.]+) s", how)  # --hand-back: its turns, not all since it came
        if "by the policy" not in how:
            self.intervened += float(drove[1]) if drove else took - (float(since[1]) if since else 0.0)

    def counts(self) -> dict:
        """The step's record of the expert's episodes."""
        return {
            "expert_episodes": self.episodes,
            "expert_successes": self.successes,
            "policy_alone_successes": self.alone_successes,
            "stalled_turns": self.stalled_turns,
            "stalled_episodes": self.stalled_episodes,
        }

    def summary(self) -> str:
        if not self.episodes:
            return "expert: no episode yet"
        share = 100.0 * self.intervened / self.seconds if self.seconds else 0.0
        done = f"expert: {self.successes}/{self.episodes} episodes to success"
        return f"{done}; intervention: the expert drove {share:.0f} % of their time"


@dataclass
class Progress:
    """What a step has shown so far; printed as one line every `period` s or on a new count."""

    bar: Bar = field(default_factory=Bar)
    actors: ActorBars = field(default_factory=ActorBars)  # train, loop: the actors' env steps
    learner: Bar = field(default_factory=Bar)
    filling: Bar = field(default_factory=Bar)  # the learner's replay buffer until training starts
    expert: ExpertLog = field(default_factory=ExpertLog)
    saved: dict[str, tuple[int, Path]] = field(default_factory=dict)  # kind -> (count, file)
    epoch: str = ""
    listening: bool = False
    saved_at: float = 0.0
    noted: set[str] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def script(self, part: Part, record: str) -> None:
        if saved := SAVED.search(record):
            self.saved[saved[2]] = (int(saved[1]), Path(saved[3]))
            self.saved_at = self.saved_at or time.monotonic()
        elif epoch := EPOCH.search(record):
            self.epoch = f"epoch {epoch[1]}, loss {epoch[2]}, accuracy {epoch[3]}"
        else:
            self.bar.feed(record)

    def actor_record(self, part: Part, record: str) -> None:
        """A line of an actor (of train_rlpd.py; each of --worlds, each start its own bar)."""
        self.actors.feed(f"{part.name}:{part.popen.pid}", record)

    def learner_record(self, part: Part, record: str) -> None:
        if "Filling up replay buffer" in record:
            self.listening = True
            self.filling.feed(record)
        if record.lstrip().startswith("learner"):
            self.learner.feed(record)

    def note(self, key: str, message: str) -> None:
        """`message` once per step."""
        with self.lock:
            if key in self.noted:
                return
            self.noted.add(key)
        say(message)


# ------------------------------------------------------------------------------------------------- prompts
@dataclass(frozen=True)
class Prompt:
    """An input() of HIL-SERL's code: what a person at the real set-up does, then Enter."""

    text: str
    note: str
    route: str = ""  # POSTed to the first server before answering ('' nothing)
    body: dict | None = None
    settle: bool = False  # answer once every arm is at rest (`at_rest`): a person puts an object back meanwhile


PROMPTS = (
    Prompt(
        "Press Enter to continue...",
        "HandOffEnv's reset waits for Enter, a person having put the bar back: the runner puts it back "
        "(POST /task/reset) and answers once the arms are at rest, at every reset",
        "task/reset",
        settle=True,
    ),
    Prompt("Press enter to release gripper...", "RAMEnv's regrasp (F1) waits for Enter to release: answered"),
    Prompt(
        "Place RAM in holder and press enter to grasp...",
        "RAMEnv's regrasp waits for the stick in its holder: the runner puts it there (POST /task/place) and answers",
        "task/place",
        {"place": "holder"},
    ),
    Prompt(
        "Put egg back and press Enter",
        "egg_flip's reset waits for the egg put back: the runner puts it back (POST /task/reset) and answers once "
        "the arm is at rest",
        "task/reset",
        settle=True,
    ),
    Prompt(
        "camera frozen. Check connect", "FrankaEnv found a camera frozen (5 s without a frame): answered, it retries"
    ),
    Prompt(
        "Checkpoint path already exists. Press Enter to resume training.",
        "train_rlpd.py asks before it resumes from the checkpoint path: answered (resuming)",
    ),
)


class Prompter:
    """Answers the prompts of `PROMPTS` in a script's output (a prompt ends no line: raw text is watched)."""

    def __init__(self, exp: Experiment, progress: Progress) -> None:
        self.exp, self.progress, self.seen = exp, progress, ""

    def __call__(self, part: Part, text: str) -> None:
        self.seen = (self.seen + text)[-2000:]
        while found := [(at, p) for p in PROMPTS if (at := self.seen.find(p.text)) >= 0]:
            at, prompt = min(found, key=lambda pair: pair[0])  # in their order (two arms' resets: two prompts)
            self.seen = self.seen[at + len(prompt.text) :]
            self.progress.note(prompt.text, prompt.note)
            if prompt.route:
                status, body = http(self.exp.servers[0] + prompt.route, "POST", prompt.body, timeout=10.0)
                if status != 200:
                    say(f"POST /{prompt.route} answered {status}: {body[:200].decode(errors='replace')}")
            if prompt.settle and not at_rest(self.exp.servers, alive=part.alive) and part.alive():
                self.progress.note("not at rest", f"an arm still moved {REST_WITHIN_S:.0f} s after a reset's prompt")
            part.answer()


REST_SPEED = (0.002, 0.02)  # m/s, rad/s: an arm below both (`at_rest`) has stopped; on its way back, over 0.1 m/s
REST_WITHIN_S = 10.0  # at most this long after a reset's prompt
REST_EVERY_S = 0.1  # between two reads of the arms' speeds


def at_rest(servers: list[str], alive=lambda: True, reads: int = 3) -> bool:
    """Waits until every arm's hand (POST /getvel) moved slower than REST_SPEED in `reads` reads in a row, at most
    REST_WITHIN_S: whether it did. HandOffEnv's reset moves the hand to RESET_POSE for 1 s, then asks for Enter with
    the reset pose still commanded; a person puts the bar back before pressing it, and the arm reaches its reset pose
    meanwhile. Answered at once, an episode began with the hand up to 7 cm short of it (object_handover_state run 5's
    evaluations), wherever the last episode had left it."""
    deadline, still = time.monotonic() + REST_WITHIN_S, 0
    while still < reads and time.monotonic() < deadline and alive():
        slow = all(t < REST_SPEED[0] and r < REST_SPEED[1] for t, r in map(hand_speed, servers))
        still = still + 1 if slow else 0
        time.sleep(REST_EVERY_S if still < reads else 0.0)
    return still >= reads


def hand_speed(url: str) -> tuple[float, float]:
    """The hand's translational and rotational speed (POST /getvel); infinite if the server does not say."""
    status, body = http(url + "getvel", "POST")
    if status == 200:
        with contextlib.suppress(ValueError, KeyError, TypeError):
            vel = json.loads(body)["vel"]
            return math.hypot(*vel[:3]), math.hypot(*vel[3:])
    return math.inf, math.inf


# ------------------------------------------------------------------------------------------------- running a step
@dataclass
class Run:
    """One step's run: the experiment, the options, the processes, the progress, the summary."""

    exp: Experiment
    args: argparse.Namespace
    parts: Parts
    progress: Progress = field(default_factory=Progress)
    started: float = field(default_factory=time.monotonic)
    summary: dict = field(default_factory=dict)
    home: dict[str, str] = field(default_factory=dict)  # HOME for random encoder weights
    episodes: ActorEpisodes | None = None  # the first actor's episodes (train, loop)
    learner: Part | None = None  # train_rlpd.py's learner (train, loop)
    slots: list[Slot] = field(default_factory=list)  # each world of the training, its actor and expert (train, loop)
    patience: float = 0.0  # the experts' patience now (train: --patience; loop: grown by --patience-grows)

    def script(
        self,
        step: str,
        flags: list[str],
        name: str = "",
        extra: dict[str, str] | None = None,
        on_record: Handler | None = None,
        exp: Experiment | None = None,
    ) -> Part:
        """HIL-SERL's script of `step`, unaltered, run from the experiment directory (against `exp`'s world: one
        of --worlds; default the experiment's)."""
        exp = exp or self.exp
        launcher = [str(OWN_EXPERIMENTS / "launch.py")] if self.exp.own else []
        script = str(self.exp.examples / SCRIPTS[step])
        argv = [str(VENV_PYTHON), *launcher, script, f"--exp_name={self.exp.task}", *flags]
        if name == "learner" and self.args.learner_nice:
            argv = ["nice", "-n", str(self.args.learner_nice), *argv]
        on_record = on_record or (self.progress.learner_record if name == "learner" else self.progress.script)
        part = Part(
            name or Path(SCRIPTS[step]).stem,
            argv,
            self.exp.logs,
            hil_serl_env(exp, {**self.home, **(extra or {})}),
            cwd=self.exp.directory,
            on_record=on_record,
            on_text=Prompter(exp, self.progress),
        )
        start = argv.index(script)
        shown = [Path(script).name, *(re.sub(r"=(/.*)", lambda m: "=" + self.rel(m[1]), a) for a in argv[start + 1 :])]
        shown[0] = f"hil_serl_experiments/launch.py {shown[0]}" if launcher else shown[0]
        say(f"running HIL-SERL's {' '.join(shown)} (log {part.log_path})")
        return self.parts.add(part)

    def expert(self, flags: list[str], exp: Experiment | None = None) -> Part | None:
        """The scripted expert, in HIL-SERL's environment (installed there), or a person at the teleop page; on
        `exp`'s world (one of --worlds; default the experiment's)."""
        exp = exp or self.exp
        pages = " and ".join(f"{url}teleop" for url in exp.servers)
        if self.args.expert == "person":
            say(f"a person drives: open {pages} (W/S A/D R/F move, C/V gripper, space success, Esc ends an episode)")
            return None
        urls = [a for url in exp.servers for a in ("--url", url)]
        argv = [str(VENV_PYTHON), "-m", "scripted_expert", "--task", exp.world, *urls, "--episodes", "0", *flags]
        part = Part(exp.name("expert"), argv, exp.logs, hil_serl_env(exp), on_record=self.progress.expert.feed)
        self.parts.add(part)
        say(f"the scripted expert drives the SpaceMouse: {' '.join(argv[2:])} (log {part.log_path})")
        return part

    def expert_gone(self) -> None:
        """An expert that ended with status 2 has none for this task, or is blocked (it said why): a person
        drives instead. Any other end is a failure (Parts.check)."""
        part = next((p for p in self.parts.parts if p.name.startswith("expert") and not p.alive()), None)
        if part is not None and part.popen.returncode == 2:
            part.drain()
            self.parts.parts.remove(part)
            pages = " and ".join(f"{url}teleop" for url in self.exp.servers)
            say(f"{part.last_lines(3).strip()}\n    so a person drives instead: open {pages}")

    def watch(self, done: Callable[[], bool], line: Callable[[], str], period: float = 10.0) -> None:
        """Until `done`: every part alive (else restarted, or StepFailed), a progress line each `period` s or on a
        change."""
        last, shown = "", 0.0
        while not done():
            self.expert_gone()
            self.servers_answer()
            self.parts.check()
            text, now = line(), time.monotonic()
            if (text != last and now - shown > 2.0) or now - shown > period:
                say(f"{text}{self.exp.label}")
                last, shown = text, now
            time.sleep(0.5)

    def servers_answer(self, every: float = 5.0) -> None:
        """A world of the training whose server has not answered for SERVER_GRACE s while its launch runs (a server
        that died alone): stopped, so that the supervisor starts the world again (Parts.check)."""
        now = time.monotonic()
        for slot in self.slots:
            if slot.world is None or slot.world not in self.parts.parts or now - slot.asked < every:
                continue
            slot.asked = now
            if all(world_task(url) is not None for url in slot.exp.servers):
                slot.unanswered = None
                continue
            slot.unanswered = slot.unanswered or now
            if now - slot.unanswered > SERVER_GRACE:
                say(f"{slot.exp.servers[0]} has not answered for {now - slot.unanswered:.0f} s: its world is stopped")
                slot.world.stop(grace=5.0)
                slot.unanswered = None

    def result(self, message: str) -> None:
        """A line that reports results: labelled where random encoder weights made them."""
        say(f"{message}{self.exp.label}")

    def elapsed(self) -> str:
        return f"{time.monotonic() - self.started:.0f} s"

    def rel(self, path: Path | str) -> str:
        path = Path(path)
        path = path if path.is_absolute() else self.exp.directory / path
        with contextlib.suppress(ValueError):
            return str(path.resolve().relative_to(Path.cwd()))
        return str(path)


def pickle_complete(path: Path) -> bool:
    """Whether the file ends as a pickle does (the script prints 'saved' before it closes the file)."""
    try:
        with open(path, "rb") as f:
            f.seek(-1, os.SEEK_END)
            return f.read(1) == b"."
    except OSError:
        return False


def saved(run: Run, kinds: tuple[str, ...]) -> bool:
    files = [run.progress.saved.get(kind) for kind in kinds]
    return all(f is not None and pickle_complete(run.exp.directory / f[1]) for f in files)


def no_classifier(run: Run) -> None:
    if run.exp.own:
        raise StepFailed(
            f"{run.exp.task}'s reward is the simulator's ground truth (its config): no classifier to record for or "
            "to train; its steps: demos, train, evaluate, loop",
            2,
        )


def before_scripts(run: Run) -> dict[str, str]:
    """What HIL-SERL's example experiments need before their scripts start: a trained reward classifier, the
    encoder's weights, a display for DISPLAY_IMAGE (its variables); this repository's have no images: none."""
    if run.exp.own:
        return {}
    need_classifier(run)
    run.home = encoder_weights(run.exp, run.args.random_encoder_weights)
    return display(run.exp, run.parts)


def step_successes(run: Run) -> None:
    exp, args, progress = run.exp, run.args, run.progress
    no_classifier(run)
    env = display(exp, run.parts)
    world(exp, run.parts)
    run.expert(["--success-key", "--hold", str(args.hold), "--esc"])
    run.script("successes", [f"--successes_needed={args.successes}"], extra=env)
    kinds = ("successful transitions", "failure transitions")
    run.watch(
        lambda: saved(run, kinds),
        lambda: f"successes {progress.bar.n}/{args.successes} transitions; {progress.expert.summary()}",
    )
    progress.note(
        "no-exit",
        "record_success_fail.py does not exit after saving (HIL-SERL's camera threads are not "
        "daemons, as with real cameras): the runner stops it now that its files are written",
    )
    total = sum(progress.saved[k][0] for k in kinds)
    span = progress.saved_at - (progress.bar.first_at or progress.saved_at)
    rate = total / span if span > 0 else 0.0
    outputs = [run.rel(progress.saved[k][1]) for k in kinds]
    run.result(
        f"{progress.saved[kinds[0]][0]} success and {progress.saved[kinds[1]][0]} failure transitions in "
        f"{run.elapsed()} ({rate:.1f} env steps/s); {progress.expert.summary()}; written: {', '.join(outputs)}"
    )
    run.summary.update(
        successes=progress.saved[kinds[0]][0],
        failures=progress.saved[kinds[1]][0],
        env_steps=total,
        env_steps_per_s=rate,
        outputs=outputs,
    )


def step_classifier(run: Run) -> None:
    exp, args, progress = run.exp, run.args, run.progress
    no_classifier(run)
    data = exp.directory / "classifier_data"
    if not (list(data.glob("*success*.pkl")) and list(data.glob("*failure*.pkl"))):
        raise StepFailed(f"no successes and failures in {run.rel(data)}: run STEP=successes first", 2)
    run.home = encoder_weights(exp, args.random_encoder_weights)
    world(exp, run.parts)
    progress.note(
        "fake-env",
        "train_reward_classifier.py makes the env with fake_env=True, whose FrankaEnv still asks "
        "the robot for its state once: the world runs for this step too",
    )
    flags = [f"--num_epochs={args.epochs}"] if args.epochs else []
    flags += [f"--batch_size={args.batch_size}"] if args.batch_size else []
    script = run.script("classifier", flags)
    run.parts.expected_exit.add(script.name)
    run.watch(lambda: not script.alive(), lambda: f"classifier: {progress.epoch or 'starting (JAX compiles)'}", 30.0)
    if script.popen.wait() != 0:
        raise StepFailed(f"{script.name} ended with {script.popen.returncode}; its last lines:\n{script.last_lines()}")
    checkpoints = sorted((exp.directory / "classifier_ckpt").glob("checkpoint_*"), key=os.path.getmtime)
    if not checkpoints:
        raise StepFailed(f"{script.name} ended without writing classifier_ckpt/; its log: {script.log_path}")
    run.result(f"reward classifier trained in {run.elapsed()} ({progress.epoch}); written: {run.rel(checkpoints[-1])}")
    accuracy = float(progress.epoch.rsplit(" ", 1)[-1]) if progress.epoch else 0.0
    if accuracy < 0.75:
        say(
            f"the classifier's training accuracy ended at {accuracy:.2f}: it does not tell the successes from the "
            "failures (are the classifier camera's images of both different?); record_demos would get no demo"
        )
    run.summary.update(epoch=progress.epoch, accuracy=accuracy, outputs=[run.rel(checkpoints[-1])])


def need_classifier(run: Run) -> None:
    if not list((run.exp.directory / "classifier_ckpt").glob("checkpoint_*")):
        where = run.rel(run.exp.directory / "classifier_ckpt")
        raise StepFailed(f"no reward classifier in {where}: run STEP=classifier first", 2)


def step_demos(run: Run) -> None:
    progress = run.progress
    record_demos(run, before_scripts(run))
    bar = progress.bar
    output = run.rel(progress.saved["demos"][1])
    first = bar.one_at - run.started if bar.one_at else None
    run.result(
        f"{bar.n} demos in {run.elapsed()} (the first after {first:.0f} s), {bar.refreshes} env steps at "
        f"{bar.rate(bar.refreshes):.1f}/s; {progress.expert.summary()}; written: {output}"
    )
    run.summary.update(
        demos=bar.n,
        first_demo_s=first,
        env_steps=bar.refreshes,
        env_steps_per_s=bar.rate(bar.refreshes),
        outputs=[output],
    )


def record_demos(run: Run, env: dict[str, str]) -> None:
    """HIL-SERL's record_demos.py with the expert (or a person) until it has saved its demos."""
    exp, args, progress = run.exp, run.args, run.progress
    world(exp, run.parts)
    episodes = ActorEpisodes(progress)
    if exp.own:  # the env says when its episodes start: the expert starts each there, not when its reset began
        episodes.expert = run.expert(["--episode-starts", "stdin"])
    else:
        run.expert([])
    script = run.script("demos", [f"--successes_needed={args.demos}"], extra=env, on_record=episodes)
    run.parts.expected_exit.add(script.name)  # without cameras it exits once its file is written
    bar = progress.bar

    def done() -> bool:
        if saved(run, ("demos",)):
            return True
        if not script.alive():
            script.drain()
            raise StepFailed(f"{script.name} ended ({script.popen.returncode}) before saving; its last lines:\n"
                             f"{script.last_lines()}")  # fmt: skip
        return False

    def line() -> str:
        if bar.n == 0 and progress.expert.successes >= 3:
            progress.note(
                "no-demo",
                f"the expert reached {progress.expert.successes} successes (the simulator's "
                "ground truth) but the config's reward (its classifier and its condition on the state) ended "
                "none of those episodes with a success: the classifier may be undertrained (more successes, epochs "
                "or a larger batch in the steps before), or the state not what the condition asks",
            )
        return (
            f"demos {bar.n}/{args.demos}, {bar.refreshes} env steps ({bar.rate(bar.refreshes):.1f}/s); "
            f"{progress.expert.summary()}"
        )

    run.watch(done, line)
    if script.alive():
        progress.note(
            "no-exit",
            "record_demos.py does not exit after saving (HIL-SERL's camera threads are not "
            "daemons): the runner stops it now that its file is written",
        )


def listening(port: int) -> bool:
    """Whether something listens on TCP `port` (Linux's /proc/net/tcp*, without connecting to it)."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError), open(table) as f:
            for row in f.readlines()[1:]:
                local, state = row.split()[1], row.split()[3]
                if state == "0A" and int(local.rsplit(":", 1)[1], 16) == port:
                    return True
    return False


def checkpoint_path(run: Run) -> Path:
    """The checkpoint path, new or one train_rlpd.py can resume from (it needs a checkpoint and a buffer)."""
    path = run.exp.directory / run.args.checkpoint_path
    if not path.exists():
        return path
    if not (list(path.glob("checkpoint_*")) and list((path / "buffer").glob("*.pkl"))):
        raise StepFailed(
            f"{run.rel(path)} exists but train_rlpd.py cannot resume from it (its learner needs a checkpoint_*, "
            "written every checkpoint_period learner steps, its actor a buffer/*.pkl, every buffer_period steps): "
            "remove it or choose another --checkpoint-path",
            2,
        )
    say(f"resuming from {run.rel(path)}")
    return path


def intervened(run: Run, path: Path) -> str:
    """The share of intervened steps in the buffers HIL-SERL's actor dumped (every buffer_period steps)."""
    files = {kind: sorted((path / kind).glob("*.pkl")) for kind in ("buffer", "demo_buffer")}
    if not files["buffer"]:
        return "HIL-SERL's actor dumped no buffer yet (every buffer_period steps, 1000 in its configs)"
    code = "import pickle, sys; print(sum(len(pickle.load(open(p, 'rb'))) for p in sys.argv[1:]))"
    counts = [
        int(
            subprocess.run(
                [str(VENV_PYTHON), "-c", code, *map(str, fs)], capture_output=True, text=True, env=hil_serl_env(run.exp)
            ).stdout
            or 0
        )
        for fs in files.values()
    ]
    share = 100.0 * counts[1] / counts[0] if counts[0] else 0.0
    return f"HIL-SERL's buffers: {counts[1]} of {counts[0]} actor steps intervened ({share:.0f} %)"


def start_learner(run: Run, path: Path, demos: list[Path]) -> Part:
    taken = [port for port in LEARNER_PORTS if listening(port)]
    if taken:
        raise StepFailed(f"port {taken[0]} is taken (another learner running?): agentlace's learner needs it", 2)
    flags = [f"--checkpoint_path={path}", *(f"--demo_path={d.resolve()}" for d in demos), "--learner"]
    flags += [f"--seed={run.args.seed}", *([] if run.args.wandb else ["--debug"])]
    own = {}
    if run.exp.own:  # its figures kept (metrics.py); each actor's own store names taken, and counted (actors.py)
        logs = run.exp.logs
        own = {"HIL_SERL_METRICS": str(logs / "learner_metrics.jsonl"), "HIL_SERL_ACTORS": str(run.args.worlds),
               "HIL_SERL_ACTOR_COUNTS": str(logs / "learner-received.json")}  # fmt: skip
    learner = run.learner = run.script("train", flags, "learner", {"XLA_PYTHON_CLIENT_MEM_FRACTION": ".3", **own})
    deadline = time.monotonic() + 600.0
    while not (run.progress.listening and listening(LEARNER_PORTS[0])):
        run.parts.check()
        if time.monotonic() > deadline:
            raise StepFailed(f"the learner did not listen within 600 s; its last lines:\n{learner.last_lines()}")
        time.sleep(0.5)
    say(f"the learner listens on port {LEARNER_PORTS[0]} (agentlace) after {run.elapsed()}; now the actor(s)")
    return learner


def demo_files(run: Run) -> list[Path]:
    """The demos a training loads into its demo buffer: --demo-path's files, else all of demo_data/."""
    return [Path(p) for p in run.args.demo_path] or sorted((run.exp.directory / "demo_data").glob("*.pkl"))


def step_train(run: Run) -> None:
    exp, args = run.exp, run.args
    demos = demo_files(run)
    if not demos:
        raise StepFailed(f"no demos in {run.rel(exp.directory / 'demo_data')}: run STEP=demos first", 2)
    path = checkpoint_path(run)
    env = before_scripts(run)
    train(run, path, demos, env, lambda: args.steps > 0 and run.progress.actors.n >= args.steps)


EPISODE_LINE = re.compile(
    r"\[ground truth\] episode (starts|ends)( in success)?"
)  # hil_serl_experiments/ground_truth.py
PARKED_LINE = "[ground truth] parked between episodes"


@dataclass
class ActorEpisodes:
    """What the env of the actor (or of record_demos.py) says of its episodes (this repository's experiments:
    hil_serl_experiments/ground_truth.py):
    each start and end handed to the scripted expert ("start", "end success", "end" on its standard input: its
    patience counts from the episode's first step), and the actor parked between two episodes (`parked`)."""

    progress: Progress
    expert: Part | None = None
    parked: threading.Event = field(default_factory=threading.Event)
    pause_file: Path | None = None
    forward: Handler | None = None  # the script's other lines (default Progress.script)

    def __call__(self, part: Part, record: str) -> None:
        if match := EPISODE_LINE.search(record):
            if self.expert is not None:
                self.expert.answer("start" if match[1] == "starts" else "end" + (" success" if match[2] else ""))
        elif PARKED_LINE in record:
            self.parked.set()
        else:
            (self.forward or self.progress.script)(part, record)


@dataclass
class Slot:
    """One world of a training run (--worlds: one each), its actor and its expert, and what the supervisor
    restarts of them."""

    exp: Experiment  # this world's servers and launch arguments (world_of)
    episodes: ActorEpisodes
    world: Part | None = None  # None: a world that answered before the step (not the runner's to restart)
    actor: Part | None = None
    starts: int = 0  # the actor's starts
    asked: float = 0.0  # when its server was last asked whether it answers (Run.servers_answer)
    unanswered: float | None = None  # since when it has not

    def actor_path(self, path: Path) -> Path:
        """The actor's --checkpoint_path, where it dumps its buffers (buffer/, demo_buffer/ every buffer_period
        steps): HIL-SERL's own layout, the checkpoint path, for the first world's first actor; a folder of its own
        under it (actors/INDEX.START) for every other actor and every restart, so that no two write the same
        transitions_<step>.pkl and none starts in a folder train_rlpd.py cannot resume from (it would ask to, and
        fail without a buffer dump or a checkpoint there)."""
        first = self.exp.index == 1 and self.starts == 1
        return path if first else path / "actors" / f"{self.exp.index}.{self.starts}"


def train(run: Run, path: Path, demos: list[Path], env: dict[str, str], done: Callable[[], bool]) -> tuple[Part, Part]:
    """train_rlpd.py's learner, then an actor beside it on each of --worlds worlds, each with the expert after
    --patience, until `done`; the learner's and the first actor's parts. For this repository's experiments the
    expert's patience counts from each episode's first step, the actors park between two episodes while the pause
    file exists, and each actor sends its transitions under store names of its own (hil_serl_experiments/actors.py).
    A world, an actor or an expert that dies is started again (Parts.restarts; an actor of HIL-SERL's own
    experiments is not: it would send under the names of the one before it, behind its update id)."""
    exp, args, progress = run.exp, run.args, run.progress
    if args.wandb:
        say("wandb: train_rlpd.py logs to your wandb account (wandb login first)")
    else:
        say(
            "wandb: train_rlpd.py --debug (wandb off, no login needed); the learner's and actor's output is kept "
            f"in {run.rel(exp.logs)}; --wandb logs to your account"
        )
    say(f"demos: {', '.join(run.rel(d) for d in demos)}")
    pause = exp.logs / "pause"
    run.patience = args.patience
    run.slots = [
        Slot(world_of(exp, k), ActorEpisodes(progress, pause_file=pause, forward=progress.actor_record))
        for k in range(1, args.worlds + 1)
    ]
    for slot in run.slots:
        slot.world = world(slot.exp, run.parts)
    learner_part = start_learner(run, path, demos)
    if exp.own:
        env = {**env, "HIL_SERL_PAUSE": str(pause)}
    for slot in run.slots:
        start_expert(run, slot)
        start_actor(run, slot, path, env)
        restarts = {"expert": lambda part, slot=slot: start_expert(run, slot)}
        if exp.own:
            restarts["actor"] = lambda part, slot=slot: start_actor(run, slot, path, env)
        if slot.world is not None:
            restarts["world"] = lambda part, slot=slot: restart_world(run, slot, path, env)
        run.parts.restarts.update({slot.exp.name(kind): restart for kind, restart in restarts.items()})
    run.episodes = run.slots[0].episodes
    bars, learner = progress.actors, progress.learner
    several = f"{args.worlds} actors" if args.worlds > 1 else "actor"

    def line() -> str:
        if bars.first_at is None:
            return f"the {several} start{'' if args.worlds > 1 else 's'} (HIL-SERL's env: cameras, SpaceMouse, " \
                   "classifier, reset)"  # fmt: skip
        fill = progress.filling
        updates = f"{learner.n} updates" if learner.first_at else f"replay buffer {fill.n}/{fill.total or '?'} to start"
        return f"{several} {bars.n} env steps ({bars.rate():.2f}/s); learner {updates}; {progress.expert.summary()}"

    run.watch(done, line, 15.0)
    run.result(f"{line()} in {run.elapsed()}; {intervened(run, path)}")
    written = sorted(run.rel(p) for p in path.rglob("*") if p.is_file()) if path.exists() else []
    nothing = "nothing yet by HIL-SERL (checkpoints every checkpoint_period learner steps, buffers every buffer_period"
    shown = written if len(written) <= 12 else [*written[:5], f"... ({len(written)} files)", *written[-5:]]
    say(f"written: {', '.join(shown) or nothing + ' actor steps)'}; logs: {run.rel(exp.logs)}")
    run.summary.update(
        worlds=args.worlds,
        actor_steps=bars.n,
        env_steps_per_s=bars.rate(),
        learner_updates=learner.n,
        learner_updates_per_s=learner.rate(),
        **progress.expert.counts(),
        outputs=written,
        actor_log=run.rel(run.slots[0].actor.log_path),
        restarts=run.parts.restarted,
        **({"transitions": transitions(exp.logs)} if exp.own else {}),
    )
    return learner_part, run.slots[0].actor


def start_expert(run: Run, slot: Slot) -> None:
    """The slot's scripted expert (or a person): for this repository's experiments it starts each episode where
    its env says the episode starts (`--episode-starts stdin`, from the actor's lines)."""
    turns = ["--patience", str(run.patience), "--hand-back", str(run.args.hand_back)]
    turns += ["--stalled", str(run.args.stalled)]  # the policy held the arms still: the expert steps in sooner
    turns += ["--holding", str(run.args.holding)]  # the policy carries the object: the expert waits longer
    if run.exp.own:
        slot.episodes.expert = run.expert([*turns, "--episode-starts", "stdin"], slot.exp)
    else:
        run.expert(turns, slot.exp)


def start_actor(run: Run, slot: Slot, path: Path, env: dict[str, str]) -> None:
    """train_rlpd.py's actor on the slot's world: its own seed (the run's for the first world), its own buffer
    folder (Slot.actor_path), and, for this repository's experiments, store names of its own (actors.py) and a
    count of what it sent."""
    args, index = run.args, slot.exp.index
    slot.starts += 1
    own = {}
    if run.exp.own:
        sent = run.exp.logs / f"{slot.exp.name('actor')}.{slot.starts}-sent.json"
        own = {"HIL_SERL_ACTOR": str(index), "HIL_SERL_ACTOR_COUNTS": str(sent)}
    flags = [f"--checkpoint_path={slot.actor_path(path)}", "--actor", f"--seed={args.seed + index - 1}"]
    flags += [f"--ip={args.ip}"] if args.ip else []
    flags += [] if args.wandb else ["--debug"]
    extra = {**env, "XLA_PYTHON_CLIENT_MEM_FRACTION": ".1", **own}
    slot.actor = run.script("train", flags, slot.exp.name("actor"), extra, on_record=slot.episodes, exp=slot.exp)


def restart_world(run: Run, slot: Slot, path: Path, env: dict[str, str]) -> None:
    """A world that died: its actor and expert stopped (their world is gone), a fresh world at the same address,
    then a fresh expert and actor on it; the learner keeps all it has."""
    names = {slot.exp.name("actor"), slot.exp.name("expert")}
    run.parts.stop(names)
    slot.world = world(slot.exp, run.parts)
    start_expert(run, slot)
    start_actor(run, slot, path, env)


def transitions(logs: Path) -> dict:
    """What the actors sent and what the learner received, per store name (hil_serl_experiments/actors.py's counts:
    every transition an actor sent reaches the learner once when the two agree)."""
    received = json.loads(p.read_text()).get("received", {}) if (p := logs / "learner-received.json").is_file() else {}
    sent: dict[str, int] = {}
    for file in sorted(logs.glob("actor*-sent.json")):
        with contextlib.suppress(ValueError):
            sent.update(json.loads(file.read_text()).get("sent", {}))
    names = sorted(set(sent) | set(received))
    by_name = {name: {"sent": sent.get(name, 0), "received": received.get(name, 0)} for name in names}
    return {"sent": sum(sent.values()), "received": sum(received.values()), "by_name": by_name}


def own_only(run: Run) -> None:
    if not run.exp.own:
        raise StepFailed(
            f"STEP={run.args.step} is for this repository's experiments (hil_serl_experiments/: "
            f"{', '.join(sorted(p.parent.name for p in (OWN_EXPERIMENTS / 'experiments').glob('*/config.py')))}), "
            "whose reward is the simulator's ground truth",
            2,
        )


EVALUATED = re.compile(r"\[evaluate\] (\S+) episode (\d+): .*?\((\d+)/(\d+)\)")
RATE = re.compile(r"\[evaluate\] (\S+): success rate ([\d.]+) \((\d+)/(\d+)\)")


class Evaluator:
    """hil_serl_experiments/evaluate.py --serve: the policy alone from the experiment's reset, scored by the ground
    truth; one process for a step's evaluations (its env and agent made once), a command per evaluation."""

    def __init__(self, run: Run, path: Path) -> None:
        self.run, self.shown, self.done = run, {}, set()
        exp, args = run.exp, run.args
        world(exp, run.parts)
        flags = [f"--exp_name={exp.task}", f"--policy={args.policy}", f"--seed={args.seed}", "--serve"]
        flags += [f"--checkpoint_path={path}"] if args.policy == "checkpoint" else []
        flags += [f"--expert_task={exp.world}"] if args.policy == "expert" else []
        argv = [str(VENV_PYTHON), str(OWN_EXPERIMENTS / "evaluate.py"), *flags]
        self.part = run.parts.add(
            Part("evaluate", argv, exp.logs, hil_serl_env(exp), on_record=self._record,
                 on_text=Prompter(exp, run.progress))  # HandOffEnv's reset asks for Enter: answered as the actor's
        )  # fmt: skip
        say(f"the evaluator: hil_serl_experiments/evaluate.py {' '.join(flags)} (log {self.part.log_path})")
        run.watch(lambda: self._answered("ready"), lambda: "the evaluator starts (its env, the agent, JAX)", 30.0)

    def _record(self, part: Part, text: str) -> None:
        if match := EVALUATED.search(text):
            self.shown["now"] = f"evaluating {match[1]}{self.shown.get('name', '')}: {match[3]} successes in {match[4]}"
        elif text.startswith("[evaluate] done "):
            self.done.add(text.removeprefix("[evaluate] done ").strip())
        elif text.strip() == "[evaluate] ready":
            self.done.add("ready")

    def _answered(self, key: str) -> bool:
        if not self.part.alive():
            self.part.drain()
            raise StepFailed(f"the evaluator ended ({self.part.popen.returncode}); its last lines:\n"
                             f"{self.part.last_lines()}")  # fmt: skip
        return key in self.done

    def __call__(self, steps: str, out: Path, episodes: int, seed: int, argmax: bool = False, name: str = "") -> list:
        """The checkpoints of `steps` on `episodes` episodes chosen by `seed` (their results; written to `out`)."""
        command = {"steps": steps, "episodes": episodes, "seed": seed, "argmax": argmax, "out": str(out)}
        self.shown.update(name=name, now=f"evaluating{name}: starts")
        say(f"evaluating{name}: {json.dumps(command)}")
        self.part.answer(json.dumps(command))
        self.run.watch(lambda: self._answered(str(out)), lambda: self.shown["now"], 30.0)
        runs = json.loads(out.read_text())["runs"]
        shown = [f"{r.get('step', r['policy'])}: {sum(e['success'] for e in r['episodes'])}/{len(r['episodes'])}"
                 for r in runs]  # fmt: skip
        self.run.result(f"evaluated{name} (the policy alone{', its mode' if argmax else ''}): {'; '.join(shown)}")
        return runs

    def close(self) -> None:
        """No more commands: it ends by itself (stopped after 10 s)."""
        self.run.parts.expected_exit.add(self.part.name)
        with contextlib.suppress(OSError):
            self.part.popen.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.part.popen.wait(timeout=10.0)
        self.part.stop()
        self.run.parts.parts.remove(self.part)


def step_evaluate(run: Run) -> None:
    own_only(run)
    args = run.args
    path = run.exp.directory / args.checkpoint_path
    out = run.exp.logs / "evaluation.json"
    evaluator = Evaluator(run, path)
    runs = evaluator(args.eval_steps, out, args.episodes, args.seed, args.argmax)
    evaluator.close()
    run.summary.update(evaluation=runs, outputs=[run.rel(out)])


# the seeds of a loop's evaluations (evaluate.py --seed: the random resets and the policy's samples), per run seed:
# selection episodes (those that choose the checkpoint), fresh ones (that confirm it), the mode's
SEEDS = {"selection": 1_000, "fresh": 50_000, "mode": 90_000}


def step_probe(run: Run) -> None:
    """benchmarks/critic_probe.py in HIL-SERL's environment (the stand-ins and the run's --agent and --train-config
    as every step has them): the agent trained offline on the kept transitions of --checkpoint-path, no world."""
    own_only(run)
    args = run.args
    path, out = run.exp.directory / args.checkpoint_path, run.exp.logs / "probe.json"
    if not list(path.glob("buffer/*.pkl")) or not list(path.glob("demo_buffer/*.pkl")):
        raise StepFailed(f"no kept transitions in {run.rel(path)} (buffer/, demo_buffer/): train or loop first", 2)
    argv = [str(VENV_PYTHON), str(ROOT / "benchmarks" / "critic_probe.py"), str(path), "--exp", run.exp.task]
    argv += ["--seed", str(args.seed), "--state-scale", args.state_scale or "{}", "--record", str(out)]
    argv += ["--steps", str(args.steps)] if args.steps else []
    argv += ["--checkpoint", str(args.probe_checkpoint)] if args.probe_checkpoint else []
    argv += [a for demos in demo_files(run) for a in ("--demos", str(demos.resolve()))]  # as step_train loads them

    def shown(part: Part, record: str) -> None:
        if record.startswith("{"):  # the probe's figures, one JSON line each
            say(f"probe: {record}")

    env = hil_serl_env(run.exp, {"HIL_SERL_DIR": str(run.exp.examples.parent)})  # the checkout the step uses
    probe = run.parts.add(Part("probe", argv, run.exp.logs, env, on_record=shown))
    run.parts.expected_exit.add(probe.name)
    say(f"the critic probe on {run.rel(path)}'s transitions (log {probe.log_path})")
    doing = f"checkpoint {args.probe_checkpoint} beside the demos" if args.probe_checkpoint else "training the agent"
    run.watch(lambda: not probe.alive(), lambda: f"probe: {doing} offline (JAX compiles first)", 60.0)
    if probe.popen.wait() != 0:
        raise StepFailed(f"the probe ended with {probe.popen.returncode}; its last lines:\n{probe.last_lines()}")
    run.result(f"critic probe done in {run.elapsed()}; its figures: {run.rel(out)}")
    run.summary.update(outputs=[run.rel(out)])


def seed_of(run: Run, kind: str, index: int) -> int:
    return run.args.seed * 100_000 + SEEDS[kind] + index


class Pause:
    """An evaluation during training, on the first world: every actor parks between two episodes (its env waits
    while the pause file exists), then the learner and the experts are stopped (SIGSTOP) and the training clock with
    them; on leaving they go on (SIGCONT), the file goes and each actor resets into its next episode."""

    def __init__(self, run: Run, clock: learning_record.Clock, timeout: float = 180.0) -> None:
        self.run, self.clock, self.timeout = run, clock, timeout
        self.stopped = [p for p in (run.learner, *(s.episodes.expert for s in run.slots)) if p is not None]

    def __enter__(self) -> Pause:
        slots = self.run.slots  # every actor parks (one pause file), so that all training stops
        for slot in slots:
            slot.episodes.parked.clear()
        self.run.episodes.pause_file.touch()
        deadline = time.monotonic() + self.timeout
        while not all(slot.episodes.parked.wait(0.5 / len(slots)) for slot in slots):
            self.run.parts.check()
            if time.monotonic() > deadline:
                self._leave()
                raise StepFailed(f"the actors did not park between two episodes within {self.timeout:.0f} s")
        self.clock.pause()
        for part in self.stopped:
            part.signal(signal.SIGSTOP)
        deadline = time.monotonic() + 5.0
        while not all(part.stopped() for part in self.stopped) and time.monotonic() < deadline:
            time.sleep(0.01)
        return self

    def _leave(self) -> None:
        for part in self.stopped:
            part.signal(signal.SIGCONT)
        self.clock.resume()
        self.run.episodes.pause_file.unlink(missing_ok=True)

    def __exit__(self, *exc: object) -> None:
        self._leave()


@dataclass
class Loop:
    """The evaluations of a loop and its record (scripts/learning_record.py says what each part means)."""

    run: Run
    path: Path  # the checkpoint path
    clock: learning_record.Clock
    record: dict = field(default_factory=dict)
    found: dict[int, dict] = field(default_factory=dict)  # checkpoint step -> when it appeared
    checkpoints: list[dict] = field(default_factory=list)  # selection evaluations
    confirmations: list[dict] = field(default_factory=list)  # fresh evaluations
    stop: bool = False
    untold: bool = False  # the patience grew and the experts have not been told yet (tell_patience)
    _evaluator: Evaluator | None = None

    def watch(self, env_steps: int) -> None:
        """Note each new checkpoint: its training minute and the actor's env steps when it appeared."""
        for folder in self.path.glob("checkpoint_*"):
            suffix = folder.name.removeprefix("checkpoint_")
            if suffix.isdigit() and (step := int(suffix)) not in self.found:
                self.found[step] = {"step": step, "minutes": round(self.clock.minutes(), 2), "env_steps": env_steps}

    def evaluator(self) -> Evaluator:
        """The loop's evaluator, started at its first evaluation (in a pause: its start-up is not training time)."""
        if self._evaluator is None:
            self._evaluator = Evaluator(self.run, self.path)
        return self._evaluator

    def close(self) -> None:
        if self._evaluator is not None:
            self._evaluator.close()
            self._evaluator = None

    def select(self, step: int) -> dict:
        """`step` on --select-episodes selection episodes (each evaluation its own seed)."""
        args, index = self.run.args, len(self.checkpoints)
        seed = seed_of(self.run, "selection", index)
        out = self.run.exp.logs / f"select-{index:02d}-{step}.json"
        (result,) = self.evaluator()(str(step), out, args.select_episodes, seed, name=" (selection)")
        entry = {**self.found[step], "seed": seed, **learning_record.rate(result["episodes"]),
                 "patience_s": self.run.patience, "episodes": result["episodes"]}  # fmt: skip
        self.checkpoints.append(entry)
        return entry

    def confirm(self, step: int, argmax: bool = False, episodes: int = 0) -> dict:
        """`step` on fresh episodes (seeds no selection used), --fresh-episodes of them."""
        args, index = self.run.args, len(self.confirmations)
        kind = "mode" if argmax else "fresh"
        seed = seed_of(self.run, kind, index)
        out = self.run.exp.logs / f"{kind}-{index:02d}-{step}.json"
        n = episodes or args.fresh_episodes
        (result,) = self.evaluator()(str(step), out, n, seed, argmax, name=f" ({kind} episodes)")
        entry = {**self.found[step], "seed": seed, "argmax": argmax, **learning_record.rate(result["episodes"]),
                 "episodes": result["episodes"]}  # fmt: skip
        if not argmax:
            self.confirmations.append(entry)
        return entry

    def confirmed(self, step: int) -> dict | None:
        return next((c for c in self.confirmations if c["step"] == step), None)

    def evaluate_newest(self, why: str = "") -> None:
        """During training: the newest checkpoint on selection episodes; where it reaches the goal, on fresh ones
        at once until one is confirmed at the goal (the run's minutes_to_goal; with --until, until the fresh
        episodes confirm --until, where the loop stops). Later checkpoints at the goal wait for the end, where the
        named and the last are confirmed: 50 fresh episodes take 6-7 minutes of the training's pause each."""
        args = self.run.args
        step = max(self.found)
        if any(c["step"] == step for c in self.checkpoints):
            return
        if why:
            say(f"evaluating checkpoint {step} now{why}")
        entry = self.select(step)
        self.grow_patience(entry)
        if entry["rate"] >= args.goal and (self.minutes_to_goal() is None or args.until):
            fresh = self.confirm(step)
            if args.until and fresh["rate"] >= args.until:
                confirmed = f"{100 * fresh['rate']:.0f} % >= --until {100 * args.until:.0f} %"
                say(f"checkpoint {step} is confirmed on fresh episodes at {confirmed}: training stops")
                self.stop = True
        self.write()

    def grow_patience(self, entry: dict) -> None:
        """--patience-grows: where a checkpoint's selection rate reaches a stage's, the experts wait that stage's
        seconds from their next episode on (never less again: a person who has seen the policy do it alone), told
        after the pause (tell_patience). Each selection entry keeps the patience its training ran with."""
        run = self.run
        grown = max((seconds for rate, seconds in run.args.patience_grows if entry["rate"] >= rate), default=0.0)
        if grown > run.patience:
            run.patience, self.untold = grown, True
            change = {"minutes": round(self.clock.minutes(), 2), "step": entry["step"], "rate": entry["rate"],
                      "patience_s": grown}  # fmt: skip
            self.record.setdefault("patience_changes", []).append(change)
            say(
                f"checkpoint {entry['step']} succeeded alone in {100 * entry['rate']:.0f} % of its selection "
                f"episodes: the expert now leaves each episode to the policy for {grown:g} s (--patience-grows)"
            )

    def tell_patience(self) -> None:
        """After a pause in which the patience grew: each running expert gets it for its next episode (one started
        later starts with it: start_expert)."""
        if self.untold:
            for slot in self.run.slots:
                if (expert := slot.episodes.expert) is not None and expert.alive():
                    expert.answer(f"patience {self.run.patience:g}")
            self.untold = False

    def minutes_to_goal(self, goal: float | None = None) -> float | None:
        """Training minutes to the first checkpoint whose selection rate reached `goal` (default --goal) and whose
        fresh episodes then confirmed it (None: none did)."""
        goal = self.run.args.goal if goal is None else goal
        for entry in sorted(self.checkpoints, key=lambda c: c["minutes"]):
            fresh = self.confirmed(entry["step"])
            if entry["rate"] >= goal and fresh is not None and fresh["rate"] >= goal:
                return entry["minutes"]
        return None

    def write(self, final: dict | None = None) -> None:
        """loop.json (as it goes: after each evaluation) and the learning curve beside it."""
        logs = self.run.exp.logs
        records = learning_record.read_metrics(logs / "learner_metrics.jsonl")
        self.record.update(
            checkpoints=self.checkpoints,
            confirmations=self.confirmations,
            minutes_to_goal=self.minutes_to_goal(),
            minutes_to_90=self.minutes_to_goal(0.9),
            training=learning_record.training_bins(records, self.clock),
            learner_steps_per_s=learning_record.learner_rate(records, self.clock),
            pauses=[
                {"minutes": round(self.clock.minutes(a), 2), "seconds": round(b - a, 1), "wall": [a, b]}
                for a, b in self.clock.pauses
            ],  # fmt: skip
            **(final or {}),
        )
        (logs / "loop.json").write_text(json.dumps(self.record, indent=1, default=str) + "\n")
        curve(self.run, logs / "loop.json")


PACE = re.compile(
    r"\[step period\] pace after (\d+) resets: ([\d.]+) env steps/s within episodes \(step period p50 (\d+) ms, "
    r"p99 (\d+) ms.*?reset p50 ([\d.]+) s; a step's parts, ms p50: (.*)$",
    re.M,
)


def actor_pace(log: str) -> dict:
    """The actor's last pace report (hil_serl_experiments/step_period.py: over its last 2000 steps)."""
    found = PACE.findall(log)
    if not found:
        return {}
    resets, rate, p50, p99, reset, parts = found[-1]
    parts_ms = {k.strip(): float(v) for k, v in re.findall(r"([^,]+?) ([\d.]+)(?:,|$)", parts)}
    return {"resets": int(resets), "env_steps_per_s": float(rate), "period_p50_ms": int(p50),
            "period_p99_ms": int(p99), "reset_p50_s": float(reset), "parts_p50_ms": parts_ms}  # fmt: skip


def step_loop(run: Run) -> None:
    """The whole loop, unattended: demos by the expert, then learner and actor with the expert after --patience
    (from each episode's first step) for --minutes of training from the first demo, evaluating the newest
    checkpoint every --eval-every minutes on selection episodes (training paused), confirming on fresh episodes
    each that reaches --goal; at the end it names a checkpoint, chosen on selection episodes, confirmed on fresh
    ones, and evaluates the last checkpoint on fresh ones too. The record and the curve grow as it goes."""
    own_only(run)
    exp, args = run.exp, run.args
    path = exp.directory / args.checkpoint_path
    if path.exists():
        raise StepFailed(f"{run.rel(path)} exists: the loop trains from nothing (remove it, or another --dir)", 2)
    record_demos(run, {})
    demos = [exp.directory / run.progress.saved["demos"][1]]
    first_at = run.progress.bar.one_at or time.monotonic()
    clock = learning_record.Clock(time.time() - (time.monotonic() - first_at))
    loop = Loop(run, path, clock)
    loop.record.update(
        experiment=exp.task,
        world=exp.world,
        seed=args.seed,
        machine=learning_record.machine(),
        minutes=args.minutes,
        goal=args.goal,
        until=args.until,
        patience_s=args.patience,
        patience_grows=args.patience_grows,
        hand_back_s=args.hand_back,
        stalled_s=args.stalled,
        holding_s=args.holding,
        agent=json.loads(args.agent or "{}"),
        train_config=json.loads(args.train_config or "{}"),
        select_episodes=args.select_episodes,
        fresh_episodes=args.fresh_episodes,
        eval_every_minutes=args.eval_every,
        demos=run.progress.bar.n,
        first_demo_s=round(first_at - run.started, 1),
        first_demo_wall=clock.first_demo,
        checkpoint_path=str(path),
        started=datetime.now().isoformat(timespec="seconds"),
    )
    run.parts.stop({"record_demos", "expert"})
    run.progress = progress = Progress()
    say(f"training for {args.minutes:g} minutes from the first demo, the evaluations' pauses not counted; the newest "
        f"checkpoint evaluated every {args.eval_every:g} min on {args.select_episodes} selection episodes, confirmed "
        f"on {args.fresh_episodes} fresh ones where it is the first to reach {100 * args.goal:.0f} %")  # fmt: skip
    next_eval, last_eval, episodes_then = args.eval_every, 0.0, 0

    def done() -> bool:
        nonlocal next_eval, last_eval, episodes_then
        loop.watch(progress.actors.n)
        expert, now = progress.expert, clock.minutes()
        # besides every --eval-every minutes: as soon as the policy finishes 8 of the expert's last 10 episodes
        # alone (10 new since the last evaluation, a minute after it), as a person would try it then; until a
        # checkpoint is confirmed at the goal (after that the policy does it all the time: --eval-every)
        doing_it = len(expert.alone) == 10 and sum(expert.alone) >= 8 and expert.episodes - episodes_then >= 10
        doing_it = doing_it and loop.minutes_to_goal() is None
        if run.learner is not None and loop.found and (now >= next_eval or (doing_it and now - last_eval >= 1.0)):
            with Pause(run, clock):
                loop.evaluate_newest(why="" if now >= next_eval else " (the policy did 8 of its last 10 alone)")
            loop.tell_patience()  # the experts run again: they read it
            last_eval, episodes_then = clock.minutes(), expert.episodes
            next_eval = last_eval + args.eval_every
        return loop.stop or clock.minutes() >= args.minutes

    train(run, path, demos, {}, done)
    train_summary = dict(run.summary)
    run.parts.stop({"learner", *(slot.exp.name(kind) for slot in run.slots for kind in ("actor", "expert"))})
    loop.watch(progress.actors.n)  # a checkpoint written as the learner stopped

    def log_text(part: str) -> str:  # a part's log of this run ('' where it wrote none)
        path = exp.logs / f"{part}.log"
        return path.read_text(errors="replace") if path.is_file() else ""

    actor_logs = [log_text(slot.exp.name("actor")) for slot in run.slots]
    actor_log = actor_logs[0]
    # ground_truth.GroundTruth's line, each time, in every actor's log
    put_back = sum(log.count(": put back (POST /task/reset)") for log in actor_logs)
    say(f"the object was put back {put_back} time(s) between training episodes (POST /task/reset)")
    pace = actor_pace(actor_log)
    paces = [actor_pace(log) for log in actor_logs] if len(actor_logs) > 1 else []
    learner_values(loop.record, log_text("learner"))
    if pace:
        say(f"the actor beside its learner: {pace['env_steps_per_s']} env steps/s within episodes (step period p50 "
            f"{pace['period_p50_ms']} ms, p99 {pace['period_p99_ms']} ms)")  # fmt: skip
    if not loop.found:
        raise StepFailed(f"the learner wrote no checkpoint in {args.minutes:g} minutes (every checkpoint_period steps)")
    last = max(loop.found)
    if not any(c["step"] == last for c in loop.checkpoints):
        loop.select(last)
    named = learning_record.choose(loop.checkpoints)
    fresh = loop.confirmed(named["step"]) or loop.confirm(named["step"])
    last_fresh = loop.confirmed(last) or loop.confirm(last)
    mode = loop.confirm(named["step"], argmax=True, episodes=args.mode_episodes) if args.mode_episodes else None
    loop.close()

    def counted(entry: dict) -> dict:
        return {"episodes": len(entry["episodes"]), **{k: entry[k] for k in ("successes", "rate", "interval", "seed")}}

    final = {
        "named": {
            "step": named["step"],
            "minutes": named["minutes"],
            "selection": learning_record.rate(named["episodes"]),
        },  # fmt: skip
        "fresh": counted(fresh),
        "last": {"step": last, "minutes": loop.found[last]["minutes"]},
        "last_fresh": counted(last_fresh),
        "mode": {**counted(mode), "episode_records": mode["episodes"]} if mode else None,
        "put_back": put_back,
        "actor": pace,
        **({"actors": paces} if paces else {}),
        "train": train_summary,
        "wall_minutes": round((time.time() - clock.first_demo) / 60.0, 2),
    }
    loop.write(final)
    low, high = fresh["interval"]
    run.result(
        f"the loop names checkpoint_{named['step']} (minute {named['minutes']:.1f}, {named['env_steps']} env steps; "
        f"chosen on {len(named['episodes'])} selection episodes: {named['successes']}): it succeeds in "
        f"{fresh['successes']} of {len(fresh['episodes'])} fresh episodes (95 % interval {100 * low:.0f}-"
        f"{100 * high:.0f} %); the last checkpoint ({last}): {last_fresh['successes']} of "
        f"{len(last_fresh['episodes'])}"
        + (f"; the named one's mode (argmax): {mode['successes']} of {len(mode['episodes'])}" if mode else "")
    )
    run.summary = {**train_summary, "loop": run.rel(exp.logs / "loop.json"), "named": final["named"],
                   "fresh": final["fresh"], "last_fresh": final["last_fresh"], "minutes_to_goal":
                   loop.record["minutes_to_goal"]}  # fmt: skip


def curve(run: Run, loop: Path) -> None:
    """hil_serl_experiments/curve.py: the learning curve (PNG) and its points (JSON) beside loop.json."""
    argv = [str(VENV_PYTHON), str(OWN_EXPERIMENTS / "curve.py"), str(loop)]
    done = subprocess.run(argv, env=hil_serl_env(run.exp), capture_output=True, text=True)
    if done.returncode != 0:
        raise StepFailed(f"the learning curve could not be drawn: {done.stdout}{done.stderr}")
    for line in done.stdout.splitlines():
        say(line)


STEP_FUNCTIONS: dict[str, Callable[[Run], None]] = {
    "successes": step_successes,
    "classifier": step_classifier,
    "demos": step_demos,
    "train": step_train,
    "evaluate": step_evaluate,
    "loop": step_loop,
    "probe": step_probe,
}


# ------------------------------------------------------------------------------------------------- command line
def learner_values(record: dict, learner_log: str) -> None:
    """What the learner says it was made with (state_agent's lines), into the loop's record: the agent's
    hyperparameters (the config's agent_kwargs and --agent over them) as `agent`, and its pace (the config's or
    --train-config's max_updates_per_transition) in `train_config`."""
    used = re.search(r"\[state agent\] the experiment's hyperparameters: (\{.*\})", learner_log)
    if used:
        record["agent"] = ast.literal_eval(used[1])
    paced = re.search(r"\[state agent\] the learner draws at most (\d+) batches", learner_log)
    if paced:
        record["train_config"].setdefault("max_updates_per_transition", int(paced[1]))


def patience_stage(text: str) -> tuple[float, float]:
    """--patience-grows RATE:SECONDS (RATE in [0, 1], 0: at the first evaluation; SECONDS > 0)."""
    try:
        rate, seconds = (float(part) for part in text.split(":"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not RATE:SECONDS (e.g. 0.5:5)") from None
    if not (0.0 <= rate <= 1.0 and 0.0 < seconds < math.inf):
        raise argparse.ArgumentTypeError(f"{text!r}: RATE in [0, 1] and SECONDS > 0")
    return rate, seconds


def parse(argv: list[str] | None) -> argparse.Namespace:
    doc = __doc__.split("\n\n")
    parser = argparse.ArgumentParser(
        prog="scripts/hil_serl.py",
        description="\n\n".join(doc[1:6]),
        epilog="A new user: make experiment TASK=ram_insertion_state STEP=loop (HIL-SERL learning on this CPU, about "
        'an hour); or make sim ARGS="task:=ram_insertion" in one terminal, then in another, one step after the other: '
        "make experiment TASK=ram_insertion STEP=successes (then classifier, demos, train).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    checkout = Path(os.environ.get("HIL_SERL_DIR") or ROOT.parent / "shared" / "hil-serl")
    tasks = ", ".join(known_tasks(checkout)) or "(none found: no HIL-SERL checkout at the default path)"
    parser.add_argument("task", help=f"the experiment: {tasks}")
    parser.add_argument("step", choices=STEPS, help="the step (above)")
    parser.add_argument("--dir", type=Path, help="the experiment directory (default runs/TASK/ in this repository)")
    parser.add_argument(
        "--expert",
        choices=("scripted", "person"),
        default="scripted",
        help="who drives: the scripted expert (default) or a person at the teleop page",
    )
    parser.add_argument("--successes", type=int, default=200, help="successes: success transitions (default 200)")
    parser.add_argument("--hold", type=float, default=2.0, help="successes: seconds the expert holds a success")
    parser.add_argument("--epochs", type=int, default=0, help="classifier: epochs (default HIL-SERL's, 150)")
    parser.add_argument("--batch-size", type=int, default=0, help="classifier: batch size (default HIL-SERL's, 256)")
    parser.add_argument("--demos", type=int, default=20, help="demos: demonstrations to record (default 20)")
    parser.add_argument(
        "--steps", type=int, default=0, help="train: actor steps, then stop; 0 until Ctrl-C (default); probe: "
        "learner steps (default the probe's)"
    )  # fmt: skip
    parser.add_argument(
        "--state-scale", default="", help='probe: {column: factor} (JSON) applied to the kept state, e.g. '
        '\'{"4": 0.01}\''
    )  # fmt: skip
    parser.add_argument(
        "--probe-checkpoint", type=int, default=0, help="probe: instead of training, the learner's checkpoint of "
        "this step on the states of the expert's demos: how its policy, grasp critic and critic stand to the "
        "expert's actions there"
    )  # fmt: skip
    parser.add_argument(
        "--patience",
        type=float,
        default=5.0,
        help="train: seconds the expert leaves each episode to the policy (default 5; an experiment's config may "
        "name its own with --patience-grows and --stalled, EXPERT_ARGS, as usb_pickup_insertion_state's does)",
    )
    parser.add_argument(
        "--patience-grows", type=patience_stage, action="append", default=[], metavar="RATE:SECONDS", help="loop: "
        "once a checkpoint succeeds alone in RATE of its selection episodes, the expert leaves each episode to the "
        "policy for SECONDS from then on (a person who waits longer once the policy can do it; e.g. 0.5:5; "
        "repeatable; RATE 0: from the first evaluation on; default: --patience throughout)"
    )  # fmt: skip
    parser.add_argument(
        "--hand-back", type=float, default=0.0, help="train: seconds the expert drives before it hands the episode "
        "back to the policy for --patience seconds more, and so on (a person who corrects and lets go); 0: it "
        "drives to success once it stepped in (default)"
    )  # fmt: skip
    parser.add_argument(
        "--stalled", type=float, default=0.0, help="train, loop: the expert steps in before its patience is out "
        "once the policy has held the arms still for this many seconds (each hand within 2 mm, each gripper "
        "within 0.05; a person who sees the robot stuck, e.g. a plug pressed beside its hole), so that the policy "
        "meets its own stalls and the expert's correction from them; 0: the patience only (default)"
    )  # fmt: skip
    parser.add_argument(
        "--holding", type=float, default=0.0, help="train, loop: while the policy holds the task's object off "
        "everything else (the ground truth has it touching grippers only), the expert's patience waits, up to this "
        "many seconds in all (a person who does not take over from a robot carrying the object), so that the "
        "policy meets its own carry and what its grippers do there; 0: the patience counts on (default)"
    )  # fmt: skip
    parser.add_argument(
        "--checkpoint-path", default="first_run", help="train, probe: under the directory (default first_run)"
    )
    parser.add_argument(
        "--minutes", type=float, default=60.0, help="loop: training minutes from the first demo, evaluations not "
        "counted (default 60)"
    )  # fmt: skip
    parser.add_argument("--eval-every", type=float, default=5.0, help="loop: training minutes between evaluations")
    parser.add_argument(
        "--select-episodes", type=int, default=10, help="loop: selection episodes per evaluated checkpoint (they "
        "choose the checkpoint the loop names; default 10)"
    )  # fmt: skip
    parser.add_argument(
        "--fresh-episodes", type=int, default=50, help="loop: fresh episodes that confirm a checkpoint (default 50)"
    )
    parser.add_argument(
        "--goal", type=float, default=0.9, help="loop: a selection rate that gets a checkpoint confirmed at once, "
        "the first one to reach it (default 0.9)"
    )  # fmt: skip
    parser.add_argument(
        "--until", type=float, default=0.0, help="loop: stop training once fresh episodes confirm a checkpoint at "
        "this rate (e.g. 0.9; default 0: train --minutes)"
    )  # fmt: skip
    parser.add_argument(
        "--mode-episodes", type=int, default=20, help="loop: fresh episodes of the named checkpoint's mode "
        "(argmax), reported beside its sampled actions (default 20; 0: none)"
    )  # fmt: skip
    parser.add_argument("--episodes", type=int, default=20, help="evaluate: episodes per policy (default 20)")
    parser.add_argument("--eval-steps", default="latest", help="evaluate: checkpoints (steps, comma-separated; all)")
    parser.add_argument(
        "--argmax",
        action="store_true",
        help="evaluate, loop: the policy's mode (default: sampled, as train_rlpd.py's own evaluation)",
    )
    parser.add_argument(
        "--policy",
        choices=("checkpoint", "expert", "zero"),
        default="checkpoint",
        help="evaluate: the learner's checkpoints (default), the scripted expert as a policy, or no motion",
    )
    parser.add_argument(
        "--demo-path", action="append", default=[], help="train, probe: a demos file (default all demo_data/)"
    )
    parser.add_argument(
        "--worlds", type=int, default=1, help="train, loop: worlds, each with its actor, feeding one learner (this "
        "repository's one-arm experiments: world K at the server's address + K - 1, e.g. 127.0.0.2, 127.0.0.3; "
        "default 1)"
    )  # fmt: skip
    parser.add_argument(
        "--learner-nice", type=int, default=LEARNER_NICE, choices=range(20), metavar="0-19", help="train, loop: the "
        f"learner's niceness (default {LEARNER_NICE}): the worlds and actors, which keep the robot's 10 Hz, come first "
        "on a shared machine and the learner takes the CPU they leave; 0: as any process"
    )  # fmt: skip
    parser.add_argument(
        "--ip", default="", help="train, loop: the learner's address for the actors (train_rlpd.py's --ip; default "
        "its localhost): the learner listens on every address"
    )  # fmt: skip
    parser.add_argument(
        "--seed", type=int, default=42, help="train, loop: train_rlpd.py's --seed (default its 42); loop, evaluate: "
        "also chooses the evaluations' episodes"
    )  # fmt: skip
    parser.add_argument(
        "--agent", default="", help='train, loop, evaluate, probe: the agent\'s hyperparameters over the config\'s, '
        'as JSON (this repository\'s experiments: state_agent.configure), e.g. \'{"target_entropy": -6}\''
    )  # fmt: skip
    parser.add_argument(
        "--train-config", default="", help="train, loop, evaluate, probe: the TrainConfig's attributes over the "
        'config\'s, as JSON (this repository\'s experiments), e.g. \'{"checkpoint_period": 1000}\''
    )  # fmt: skip
    parser.add_argument("--wandb", action="store_true", help="train: log to wandb (default --debug: no wandb login)")
    parser.add_argument(
        "--random-encoder-weights",
        action="store_true",
        help="where SERL's ResNet-10 cannot be downloaded: go on with random encoder weights (from a "
        "private HOME, this step only; every result labelled)",
    )
    parser.add_argument(
        "--hil-serl-dir",
        type=Path,
        default=checkout,
        help="HIL-SERL's checkout (default $HIL_SERL_DIR, else ../shared/hil-serl)",
    )
    args = parser.parse_args(argv)
    if defaults := expert_defaults(parser, args, argv):
        args = parser.parse_args(argv, namespace=argparse.Namespace(**defaults))
        args.expert_defaults = defaults
    if args.hand_back < 0 or (args.hand_back > 0 and args.patience <= 0):
        parser.error("--hand-back needs --patience > 0 (the policy's turns between the expert's) and is >= 0")
    if not (args.stalled >= 0 and math.isfinite(args.stalled)) or (args.stalled > 0 and args.patience <= 0):
        parser.error("--stalled needs --patience > 0 (it ends the policy's turn early) and is >= 0")
    if not (args.holding >= 0 and math.isfinite(args.holding)) or (args.holding > 0 and args.patience <= 0):
        parser.error("--holding needs --patience > 0 (it lengthens the policy's turn) and is >= 0")
    if args.patience_grows and args.step != "loop":
        parser.error("--patience-grows is the loop's: it follows the loop's selection evaluations")
    return args


EXPERT_FLAGS = {
    "patience": "--patience",
    "patience_grows": "--patience-grows",
    "stalled": "--stalled",
    "holding": "--holding",
}


def expert_defaults(parser: argparse.ArgumentParser, args: argparse.Namespace, argv: list[str] | None) -> dict:
    """The scripted expert's defaults that one of this repository's experiments names (its config's EXPERT_ARGS,
    e.g. "--patience 2 --patience-grows 0:4 --stalled 1": the schedule its learning runs were measured with), for the
    flags the command line does not give; --patience-grows only for the loop, whose flag it is."""
    config = OWN_EXPERIMENTS / "experiments" / args.task / "config.py"
    named = re.search(r'^EXPERT_ARGS\s*=\s*"([^"]*)"', config.read_text(), re.M) if config.is_file() else None
    if named is None:
        return {}
    given = sys.argv[1:] if argv is None else argv
    taken = vars(parser.parse_args([args.task, args.step, *shlex.split(named[1])]))
    return {
        dest: taken[dest]
        for dest, flag in EXPERT_FLAGS.items()
        if not any(a == flag or a.startswith(f"{flag}=") for a in given)
        and taken[dest] != parser.get_default(dest)
        and (dest != "patience_grows" or args.step == "loop")
    }


def run_step(args: argparse.Namespace) -> int:
    hil_serl = args.hil_serl_dir.resolve()
    build_env(hil_serl)
    if args.step == "env":
        return 0
    directory = (args.dir or ROOT / "runs" / args.task).resolve()
    directory.mkdir(parents=True, exist_ok=True)
    exp = load_experiment(hil_serl, args.task, directory, args.step)
    exp.agent, exp.train_config = args.agent, args.train_config
    if args.worlds < 1:
        raise StepFailed(f"--worlds {args.worlds}: one world at least", 2)
    if args.worlds > 1:
        world_of(exp, 2)  # refused before anything starts where the experiment cannot have several
    for flag, value in (
        ("--agent", args.agent),
        ("--train-config", args.train_config),
        ("--state-scale", args.state_scale),
    ):
        try:
            if not isinstance(given := json.loads(value or "{}"), dict):
                raise ValueError("not an object")
            if flag == "--agent" and (taken := sorted(set(given) & TRAIN_CONFIG_AGENT_ARGS)):
                say(f"\033[1;31mstopped:\033[0m --agent {', '.join(taken)}: train_rlpd.py passes the agent its "
                    f"TrainConfig's value, which would win: give it with --train-config")  # fmt: skip
                return 2
        except ValueError as exc:
            say(f"\033[1;31mstopped:\033[0m {flag} {value!r} is no JSON object of names and values ({exc})")
            return 2
    say(f"experiment directory {directory} (HIL-SERL's scripts run there); this step's logs: {exp.logs}")
    if defaults := getattr(args, "expert_defaults", None):
        stages = " ".join(f"--patience-grows {a:g}:{b:g}" for a, b in defaults.get("patience_grows", ()))
        shown = " ".join([*(f"{EXPERT_FLAGS[d]} {v:g}" for d, v in defaults.items() if d != "patience_grows"), stages])
        say(f"the experiment's own expert schedule (its config's EXPERT_ARGS): {shown}; a flag given here wins")
    code, status = 0, "done"
    with Parts() as parts:
        run = Run(exp, args, parts)
        try:
            STEP_FUNCTIONS[args.step](run)
        except StepFailed as exc:
            code, status = exc.code, str(exc)
            say(f"\033[1;31mstopped:\033[0m {exc}")
        except KeyboardInterrupt:
            code, status = 130, "interrupted"
            say("interrupted")
        finally:  # a second Ctrl-C or a SIGTERM must not cut the stopping short
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
    write_summary(run, status, code)
    return code


def write_summary(run: Run, status: str, code: int) -> None:
    summary = {
        "task": run.exp.task,
        "step": run.args.step,
        "status": status,
        "exit_status": code,
        "wall_s": round(time.monotonic() - run.started, 1),
        "random_encoder_weights": bool(run.exp.label),
        **run.summary,
        **({"restarts": run.parts.restarted} if run.parts.restarted else {}),  # the supervisor's, however it ended
    }
    (run.exp.logs / "summary.json").write_text(json.dumps(summary, indent=1, default=str) + "\n")
    say(
        f"{'every process of the step stopped; ' if code != 2 else ''}summary: {run.exp.logs / 'summary.json'}"
        f"{run.exp.label}"
    )


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):  # SIGINT too: a shell may start us with it ignored
        signal.signal(sig, interrupt)
    try:
        return run_step(args)
    except StepFailed as exc:
        say(f"\033[1;31mstopped:\033[0m {exc}")
        return exc.code
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
