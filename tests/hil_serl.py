"""HIL-SERL's own code in the tests: its environment (.venv-hil-serl/, built by scripts/hil_serl_env.sh from the
checkout at ../shared/hil-serl, or HIL_SERL_DIR) and a way to run a snippet or a script of HIL-SERL's in it.
A missing checkout fails the test that needs it; nothing here skips."""

from __future__ import annotations

import contextlib
import functools
import os
import select
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
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


def environment(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment without what belongs to the tests' own Python (scripts/run.sh's PYTHONPATH
    of ROS 2 for Python 3.12, its libraries) and without FRANKA_SIM_*, plus `env`."""
    dropped = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "LD_LIBRARY_PATH")
    clean = {k: v for k, v in os.environ.items() if k not in dropped and not k.startswith("FRANKA_SIM_")}
    clean["PATH"] = f"{Path(python()).parent}{os.pathsep}{clean.get('PATH', '')}"
    clean["PYTHONUNBUFFERED"] = "1"
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

    def expect(self, text: str, timeout: float) -> str:
        """Everything printed until `text` (a prompt need not end its line); fails the test past `timeout` s or
        when the process ends first, showing what it printed."""
        deadline = time.monotonic() + timeout
        fd = self.process.stdout.fileno()
        while text not in self.output:
            left = deadline - time.monotonic()
            ready = select.select([fd], [], [], max(0.0, left))[0] if left > 0 else []
            chunk = os.read(fd, 4096).decode(errors="replace") if ready else ""
            if not chunk:
                ended = "ended" if ready else f"printed no {text!r} within {timeout} s"
                pytest.fail(f"HIL-SERL's code {ended}; its output:\n{self.output}", pytrace=False)
            self.output += chunk
        return self.output

    def answer(self, line: str = "") -> None:
        self.process.stdin.write((line + "\n").encode())
        self.process.stdin.flush()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()


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
