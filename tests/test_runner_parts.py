"""Parts of the runner (scripts/hil_serl.py) tested alone, with real processes and pipes: its answers to HIL-SERL's
prompts, and each step's own logs folder.

The runner answers HIL-SERL's prompts as a person at its terminal does (its Prompter and Part).

object_handover's HandOffEnv asks "Press Enter to continue..." in each arm's reset, and DualFrankaEnv resets the
two arms in two threads, so two prompts wait in input() at once. A loop of object_handover_state stopped after 93
episodes (2026-11-27) because the runner typed both Enters together and one thread's readline took both: the other
arm waited for ever and the actor never parked. Here a real process asks twice at once, round after round, on a
real pipe, and the runner's own Prompter answers while the process waits for a core (stopped for 50 ms at each
prompt: the loaded machine that made the two Enters arrive together, made certain). The old Part.answer failed
this test; the new one passes it. A small HTTP server stands in for the world's POST /task/reset (the bar put back
before each answer) and POST /getvel (the arms at rest: the runner answers a reset's prompt once they are), the
routes the prompt needs."""

from __future__ import annotations

import json
import math
import os
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace

import hil_serl
from hil_serl import CHECKOUT

runner = hil_serl.runner()

ROUNDS = 150
TWO_ARMS = f"""
import threading
def arm():
    input("Press Enter to continue...")
for n in range({ROUNDS}):
    arms = [threading.Thread(target=arm) for _ in range(2)]
    for a in arms:
        a.start()
    for a in arms:
        a.join()
    print(f"round {{n}}: both arms reset", flush=True)
"""


class Resets(BaseHTTPRequestHandler):
    count = 0
    moving_until = 0.0  # time.monotonic() until which the hand moves (POST /getvel)

    def do_POST(self):  # noqa: N802 (http.server's name)
        Resets.count += self.path == "/task/reset"
        speed = 0.15 if time.monotonic() < Resets.moving_until else 0.0  # m/s: an arm on its way to its reset pose
        self.send_response(200)
        self.end_headers()
        self.wfile.write(json.dumps({"vel": [speed, 0, 0, 0, 0, 0]} if self.path == "/getvel" else {}).encode())

    def log_message(self, *args):
        pass


def test_two_prompts_at_once_are_both_answered_every_round(tmp_path, monkeypatch):
    monkeypatch.setattr(runner, "REST_EVERY_S", 0.01)  # the arms at rest at once: 300 answers in a few seconds
    server = ThreadingHTTPServer(("127.0.0.1", 0), Resets)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    world = SimpleNamespace(servers=[f"http://127.0.0.1:{server.server_address[1]}/"])
    prompter = runner.Prompter(world, runner.Progress())

    def busy_machine(part, text: str) -> None:
        """The Prompter, while the process waits 50 ms for a core (as the actor on two loaded cores): what it
        types meanwhile reaches the pipe together."""
        part.signal(signal.SIGSTOP)
        threading.Timer(0.05, part.signal, (signal.SIGCONT,)).start()
        prompter(part, text)

    part = runner.Part("two_arms", [sys.executable, "-c", TWO_ARMS], tmp_path, dict(os.environ), on_text=busy_machine)
    try:
        deadline = time.monotonic() + 60
        while part.alive() and time.monotonic() < deadline:
            time.sleep(0.1)
        part.drain(timeout=10.0)  # the process can end before its last lines are read (CI, 2026-11-27: 148 of 150)
        rounds = [r for r in part.records if "both arms reset" in r]
        assert not part.alive(), f"an arm still waits for Enter after {len(rounds)} of {ROUNDS} rounds"
        assert len(rounds) == ROUNDS
        assert Resets.count == 2 * ROUNDS  # the bar put back before each answer, as at each arm's reset
    finally:
        if part.alive():
            part.popen.kill()
        server.shutdown()


def test_a_resets_prompt_is_answered_once_the_arms_are_at_rest(monkeypatch):
    """HandOffEnv's reset asks for Enter 1 s after it began moving the hand to its reset pose; a person puts the bar
    back meanwhile, and the arm gets there. The runner waits for the arm at rest (`at_rest`), at most REST_WITHIN_S:
    an arm that still moves then is noted, and answered all the same."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), Resets)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    arms = [f"http://127.0.0.1:{server.server_address[1]}/"] * 2
    try:
        started = time.monotonic()
        Resets.moving_until = started + 0.8
        assert runner.at_rest(arms)
        assert time.monotonic() - started >= 0.8 + 2 * runner.REST_EVERY_S  # three reads in a row at rest
        monkeypatch.setattr(runner, "REST_WITHIN_S", 0.5)
        Resets.moving_until = time.monotonic() + 60
        started = time.monotonic()
        assert not runner.at_rest(arms)
        assert time.monotonic() - started < 2.0
        assert runner.hand_speed(f"http://127.0.0.1:{server.server_address[1]}/task/") == (math.inf, math.inf)
    finally:
        Resets.moving_until = 0.0
        server.shutdown()


def test_two_steps_started_in_one_second_keep_their_logs_apart(tmp_path):
    """Two probes of one run, started side by side, once wrote one probe.log (the folder named by the second)."""
    folders = {runner.load_experiment(CHECKOUT, "ram_insertion_state", tmp_path, "probe").logs for _ in range(3)}
    assert len(folders) == 3 and all(f.is_dir() and not any(f.iterdir()) for f in folders)


ORPHANS = """
import multiprocessing, time
def read():
    time.sleep(600)
multiprocessing.Process(target=read, daemon=True).start()
time.sleep(0.5)
import os
os._exit(1)  # dies as a crash does, without the atexit that would end its daemonic child
"""


def test_a_part_that_died_and_is_started_again_leaves_nothing_of_it_running(tmp_path):
    """HIL-SERL's actor forks its SpaceMouse reader and a multiprocessing Manager (spacemouse_expert.py); an actor
    that died at a reset and was started again once left both running after the step (CI, 2026-11-27)."""
    argv = [sys.executable, "-c", ORPHANS]
    parts, started = runner.Parts(), []

    def start(_part=None) -> None:
        started.append(parts.add(runner.Part("actor", argv, tmp_path, dict(os.environ))))

    with parts:
        parts.restarts["actor"] = start
        start()
        first = started[0]
        deadline = time.monotonic() + 30
        while first.alive() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not first.alive()
        parts.check()
        assert len(started) == 2 and parts.restarted[0]["part"] == "actor"
        assert not first._group_alive(), "what the dead actor forked was left running"
