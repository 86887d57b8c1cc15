"""scripts/hil_serl.py, the one command per step of a HIL-SERL experiment: ram_insertion end to end on a fresh
experiment directory, with small counts, each step as a user runs it (the runner starts the world, the scripted
expert, an Xvfb for the config's DISPLAY_IMAGE, HIL-SERL's unaltered script in its own environment).

After each step: its output files are there, its summary says what it did, and no process it started is left
(every descendant of the runner seen while it ran, by psutil, is gone when it has ended). Also: a part that dies
stops the step, and Ctrl-C stops it, each leaving nothing behind; no ResNet-10 weights and no opt-in stops the
step with one line. The runner's lines of each step go to the test's output (pytest -s shows them).

Slow (marked `slow`: about 7 minutes on the 2-core test machine, most of it HIL-SERL's start-ups and the
classifier's training); `make test` runs it, `-m "not slow"` leaves it out. The steps depend on each other,
in file order, through one experiment directory. Each step's timeout only guards against a hang: it allows
about four times the step's time on an AMD EPYC 2-core VM (successes 60 s, classifier 197 s, demos 37 s, train
98 s), as CI's machines have been more than twice as slow (the classifier at batch 128 ran past 840 s there).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

import conftest
from conftest import other_domain

ROOT = Path(__file__).resolve().parent.parent
RUNNER = ROOT / "scripts" / "hil_serl.py"
TASK = "ram_insertion"
WEIGHTS = Path("~/.serl/resnet10_params.pkl").expanduser()
LABEL = "[RANDOM ENCODER WEIGHTS"
pytestmark = pytest.mark.slow


STARTED: list[Runner] = []  # every runner of the module, killed with what is left of it after each test


@pytest.fixture(autouse=True)
def _no_leftovers():
    yield
    while STARTED:
        STARTED.pop().kill()


class Runner:
    """scripts/hil_serl.py as a user runs it, its output kept, its descendants watched."""

    def __init__(self, directory: Path, *args: str, env: dict[str, str] | None = None, task: str = TASK) -> None:
        STARTED.append(self)
        self.popen = subprocess.Popen(
            [sys.executable, str(RUNNER), task, *args, "--dir", str(directory)],
            cwd=ROOT,
            env={**os.environ, **other_domain(), **(env or {})},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        self.lines: list[str] = []
        self.seen: dict[int, psutil.Process] = {}
        self.ended = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._watch, daemon=True).start()

    def _read(self) -> None:
        for line in self.popen.stdout:
            print(line, end="", flush=True)
            self.lines.append(line)
        self.ended.set()

    def _watch(self) -> None:
        with _quiet():
            runner = psutil.Process(self.popen.pid)
            while self.popen.poll() is None:
                with _quiet():
                    for child in runner.children(recursive=True):
                        self.seen.setdefault(child.pid, child)
                time.sleep(0.2)

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def wait_for(self, text: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.output:
            assert self.popen.poll() is None, f"the runner ended before {text!r}:\n{self.output}"
            assert time.monotonic() < deadline, f"no {text!r} within {timeout} s:\n{self.output}"
            time.sleep(0.2)

    def finish(self, timeout: float) -> int:
        try:
            code = self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.popen.pid, signal.SIGINT)
            code = self.popen.wait(60)
            pytest.fail(f"the runner ran past {timeout} s (stopped with SIGINT, status {code}):\n{self.output}")
        self.ended.wait(10)
        return code

    def started(self, text: str) -> psutil.Process:
        """The running process the runner started whose command line has `text` (those that ended are skipped:
        psutil cannot read their command lines)."""
        for process in list(self.seen.values()):
            with _quiet():
                if _running(process) and text in " ".join(process.cmdline()):
                    return process
        raise AssertionError(f"no running process of the runner with {text!r} in its command line")

    def kill(self) -> None:
        """What is left of the runner and of everything it started, killed (a failed test's clean-up: the
        world, the expert and HIL-SERL's scripts must not stay behind to load the tests after it)."""
        if self.popen.poll() is None:
            with contextlib.suppress(OSError):
                os.killpg(self.popen.pid, signal.SIGKILL)
        for process in self.seen.values():  # still the process seen (psutil checks its start time), not a reuse
            if _running(process):
                with contextlib.suppress(OSError):
                    os.killpg(process.pid, signal.SIGKILL)  # a part's group (each part leads its own)
                with contextlib.suppress(OSError, psutil.Error):
                    process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(10)

    def left_running(self) -> list[str]:
        """What the runner started and is still running, a few seconds after it ended."""
        deadline = time.monotonic() + 5.0
        while (alive := [p for p in self.seen.values() if _running(p)]) and time.monotonic() < deadline:
            time.sleep(0.2)
        return [f"{p.pid} {' '.join(p.cmdline())[:160]}" for p in alive]


class _quiet:
    def __enter__(self) -> None:
        return None

    def __exit__(self, kind, value, traceback) -> bool:
        return kind is not None and issubclass(kind, (psutil.Error, OSError))


def _running(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def summary(directory: Path, step: str) -> dict:
    """The summary.json of the step's last run."""
    runs = sorted((directory / "logs").glob(f"{step}-*"))
    assert runs, f"no logs/{step}-* in {directory}"
    return json.loads((runs[-1] / "summary.json").read_text())


# Each step's timeout (s): about four times its time here (the module's docstring); its test's pytest mark allows
# MARK_MARGIN_S more, so that the step's own timeout, which stops the runner and says what it printed, fires first.
STEP_TIMEOUT_S = {"successes": 900, "classifier": 1500, "demos": 1200, "train": 1200}
MARK_MARGIN_S = 60


def step_timeout(step: str):
    """The pytest timeout mark of the test that runs `step` (run_step's timeout + MARK_MARGIN_S)."""
    return pytest.mark.timeout(STEP_TIMEOUT_S[step] + MARK_MARGIN_S)


def run_step(directory: Path, step: str, *args: str) -> tuple[Runner, dict]:
    """One step to its end within STEP_TIMEOUT_S[step]: status 0, nothing left running; (the runner, its summary)."""
    started = time.monotonic()
    runner = Runner(directory, step, *args)
    code = runner.finish(STEP_TIMEOUT_S[step])
    print(f"\n[test] step {step} took {time.monotonic() - started:.0f} s", flush=True)
    assert code == 0, runner.output
    assert runner.left_running() == []
    assert runner.seen, "the runner started nothing?"
    result = summary(directory, step)
    assert result["status"] == "done" and result["exit_status"] == 0
    labelled = LABEL in runner.output
    assert labelled == (not WEIGHTS.is_file() and step != "successes"), "results must be labelled iff random weights"
    return runner, result


@pytest.fixture(scope="module")
def experiment(tmp_path_factory) -> Path:
    """One experiment directory for the steps of this file; the session's world paused (this file launches the
    experiment's own world, at the config's address, on a ROS domain of its own)."""
    if conftest._session_sim is not None:
        conftest._session_sim.pause()
    return tmp_path_factory.mktemp("hil_serl_runner")


@step_timeout("successes")
def test_successes_records_the_classifiers_data(experiment):
    runner, result = run_step(experiment, "successes", "--successes", "60")
    files = sorted((experiment / "classifier_data").glob("*.pkl"))
    assert len(files) == 2, files
    assert any("success" in f.name for f in files) and any("failure" in f.name for f in files)
    assert result["successes"] == 60 and result["failures"] > 0 and result["env_steps_per_s"] > 0
    assert "private Xvfb" in runner.output or "your display" in runner.output  # DISPLAY_IMAGE, said once
    assert runner.output.count("does not exit after saving") == 1


@pytest.mark.timeout(60)
def test_without_resnet_weights_and_without_the_opt_in_it_stops_with_one_line(experiment):
    if WEIGHTS.is_file():
        pytest.skip(f"SERL's ResNet-10 is at {WEIGHTS} on this machine")
    runner = Runner(experiment, "classifier")
    assert runner.finish(60) == 2, runner.output
    stop = [line for line in runner.lines if "stopped:" in line]
    assert len(stop) == 1 and "resnet10_params.pkl" in stop[0] and "--random-encoder-weights" in stop[0], stop
    assert "https://github.com/rail-berkeley/serl/releases/download/resnet10/resnet10_params.pkl" in stop[0]
    assert runner.left_running() == []


@step_timeout("classifier")
def test_classifier_trains_on_them(experiment):
    runner, result = run_step(
        experiment, "classifier", "--random-encoder-weights", "--epochs", "100", "--batch-size", "64"
    )
    assert (experiment / "classifier_ckpt" / "checkpoint_100").exists()
    assert [Path(p).name for p in result["outputs"]] == ["checkpoint_100"]


@step_timeout("demos")
def test_demos_are_recorded_with_the_classifier(experiment):
    runner, result = run_step(experiment, "demos", "--random-encoder-weights", "--demos", "2")
    demos = list((experiment / "demo_data").glob("*.pkl"))
    assert len(demos) == 1 and result["demos"] == 2, demos
    assert result["first_demo_s"] > 0 and result["env_steps_per_s"] > 0


@step_timeout("train")
def test_train_runs_the_learner_then_the_actor(experiment):
    runner, result = run_step(experiment, "train", "--random-encoder-weights", "--steps", "100")
    assert result["actor_steps"] >= 100 and result["env_steps_per_s"] > 0
    logs = sorted((experiment / "logs").glob("train-*"))[-1]
    assert (logs / "learner.log").stat().st_size > 0 and (logs / "actor.log").stat().st_size > 0
    assert runner.output.index("the learner listens") < runner.output.index("--actor")
    assert "train_rlpd.py --debug" in runner.output  # wandb without a login, said once


@pytest.mark.timeout(300)
def test_a_part_that_dies_stops_the_step_and_ctrl_c_stops_it(experiment):
    runner = Runner(experiment, "successes", "--successes", "100000")
    runner.wait_for("running HIL-SERL's record_success_fail.py", 240)
    time.sleep(1.0)  # the watcher has seen the expert
    expert = runner.started("scripted_expert")
    os.killpg(expert.pid, signal.SIGKILL)
    assert runner.finish(120) == 1, runner.output
    assert "expert ended (exit status -9)" in runner.output
    assert runner.left_running() == []

    runner = Runner(experiment, "successes", "--successes", "100000")
    runner.wait_for("running HIL-SERL's record_success_fail.py", 240)
    os.kill(runner.popen.pid, signal.SIGINT)
    assert runner.finish(120) == 130, runner.output
    assert "interrupted" in runner.output
    assert runner.left_running() == []
