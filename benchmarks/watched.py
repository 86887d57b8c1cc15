"""A step of scripts/hil_serl.py run by a benchmark as a user runs it, watched from beside: its lines with the time
each came, the processes it started by part (world's simulator and server, actor, learner, expert), what each part
cost in CPU, and a part killed on purpose (benchmarks/worlds.py's fault injection).

Runs in this repository's environment (scripts/run.sh); needs nothing of the step's own code.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
# a process of the step, by what its command line holds (the first match wins); the rest is "runner"
PARTS = (
    ("sim", "sim_bridge"),  # the world's simulator node
    ("server", "franka_server"),  # the world's franka_server_ros2
    ("world launch", "sim.launch.py"),  # ros2 launch of the world
    ("learner", "--learner"),
    ("actor", "--actor"),
    ("expert", "scripted_expert"),
    ("evaluator", "evaluate.py"),
)
PROGRESS = re.compile(r"(\d+) env steps \([\d.]+/s\); learner (\d+) updates")


def part_of(cmdline: list[str]) -> str:
    text = " ".join(cmdline)
    return next((part for part, needle in PARTS if needle in text), "runner")


class Watched:
    """`scripts/hil_serl.py TASK STEP --dir DIRECTORY FLAGS` in a session of its own, its output kept in `log`."""

    def __init__(self, task: str, step: str, directory: Path, flags: list[str], log: Path) -> None:
        argv = [sys.executable, str(ROOT / "scripts" / "hil_serl.py"), task, step, "--dir", str(directory), *flags]
        print(f"scripts/hil_serl.py {task} {step} --dir {directory} {' '.join(flags)} (its lines: {log})", flush=True)
        self.directory = directory
        self.log = open(log, "w")  # noqa: SIM115 (closed by finish)
        self.popen = subprocess.Popen(
            argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
        )
        self.lines: list[tuple[float, str]] = []  # (time.monotonic(), line)
        self.progress: list[tuple[float, int, int]] = []  # (time, env steps, learner updates) of its progress lines
        self.seen: dict[int, tuple[psutil.Process, str]] = {}  # pid -> (process, part)
        self.cpu_seen: dict[int, float] = {}  # pid -> CPU seconds when last read
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._sampler_stop = threading.Event()
        self._sampler = threading.Thread(target=self._sample, daemon=True)
        self._sampler.start()

    def _read(self) -> None:
        for line in self.popen.stdout:
            now = time.monotonic()
            self.lines.append((now, line.rstrip("\n")))
            self.log.write(line)
            self.log.flush()
            match = PROGRESS.search(line)
            if match:
                self.progress.append((now, int(match[1]), int(match[2])))

    def _sample(self) -> None:
        """Every second: the step's processes (new ones classified) and the CPU each has used so far, so that a
        process that ends keeps what it used."""
        while not self._sampler_stop.wait(1.0):
            self.sample()

    def sample(self) -> None:
        with contextlib.suppress(psutil.Error):
            root = psutil.Process(self.popen.pid)
            for process in [root, *root.children(recursive=True)]:
                with contextlib.suppress(psutil.Error):
                    if process.pid not in self.seen:
                        self.seen[process.pid] = (process, part_of(process.cmdline()))
                    times = process.cpu_times()
                    self.cpu_seen[process.pid] = times.user + times.system

    def cpu(self) -> dict[int, float]:
        """CPU seconds of each process seen so far (its last reading for one that ended)."""
        self.sample()
        return dict(self.cpu_seen)

    def cpu_by_part(self, before: dict[int, float], after: dict[int, float], seconds: float) -> dict[str, float]:
        """% of one core each part used between two readings of `cpu()`."""
        used: dict[str, float] = {}
        for pid, total in after.items():
            part = self.seen[pid][1]
            used[part] = used.get(part, 0.0) + total - before.get(pid, 0.0)
        return {part: round(100.0 * value / seconds, 1) for part, value in sorted(used.items())}

    def wait_for(self, text: str, timeout: float, since: int = 0) -> float:
        """The time of the first line (from line `since`) holding `text`; RuntimeError when the step ends first or
        after `timeout` s."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for when, line in self.lines[since:]:
                if text in line:
                    return when
            if self.popen.poll() is not None:
                time.sleep(0.5)  # its last lines
                if not any(text in line for _, line in self.lines[since:]):
                    raise RuntimeError(f"the step ended ({self.popen.returncode}) before {text!r}; see {self.log.name}")
            time.sleep(0.5)
        raise RuntimeError(f"no {text!r} within {timeout:.0f} s; see {self.log.name}")

    def wait_until(self, condition, timeout: float) -> float:
        """The time `condition()` first held (checked every 0.5 s); RuntimeError after `timeout` s."""
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline or self.popen.poll() is not None:
                raise RuntimeError(f"not within {timeout:.0f} s (or the step ended); see {self.log.name}")
            time.sleep(0.5)
        return time.monotonic()

    def running(self, part: str) -> psutil.Process | None:
        """A running process of `part` (the newest started)."""
        self.sample()
        alive = [p for p, name in self.seen.values() if name == part and p.is_running() and p.status() != "zombie"]
        return max(alive, key=lambda p: p.create_time(), default=None)

    def kill(self, part: str) -> float:
        """SIGKILL to the process group of `part`'s newest process (a part's processes form one group); the time."""
        process = self.running(part)
        if process is None:
            raise RuntimeError(f"no {part} running")
        os.killpg(os.getpgid(process.pid), signal.SIGKILL)
        return time.monotonic()

    def interrupt(self) -> None:
        """Ctrl-C, as a user stops a step."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.popen.pid, signal.SIGINT)

    def finish(self, timeout: float) -> int:
        try:
            code = self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.popen.pid, signal.SIGKILL)
            code = self.popen.wait()
        self._sampler_stop.set()
        self._reader.join(timeout=5.0)
        self.log.close()
        return code

    def summary(self, step: str) -> dict:
        import json

        runs = sorted((self.directory / "logs").glob(f"{step}-*"))
        return json.loads((runs[-1] / "summary.json").read_text()) if runs else {}
