"""python -m scripted_expert --task ram_insertion [--url http://127.0.0.2:5000/] [--episodes 0] ...

Drives the task's virtual SpaceMouse (POST /spacemouse on the task's servers) from the simulator's ground
truth, episode after episode, while HIL-SERL's scripts run with FRANKA_SIM_SPACEMOUSE=1 (and, for the keys,
FRANKA_SIM_KEYS=1). Each episode: wait until the task is not a success (the env's reset has undone the last
one), let the policy act for `--patience` seconds if asked (a person who steps in only when the policy does not get
there; with `--stalled`, sooner once the policy has held the arms still that long: a person who sees it stuck;
with `--holding`, later while the policy carries the object: a person who lets a robot carry on that holds it),
drive to success (with `--hand-back`, that many seconds at a time with the policy's `--patience` seconds
between: a person who corrects and lets go again), then optionally keep pressing space (record_success_fail marks
those steps as successes) and press Esc (FrankaEnv ends the episode). Exit status 0 when every episode succeeded,
1 when one did not, 2 when the task has no expert or the expert is blocked.

With `--episode-starts stdin` the episodes are the env's own: each line on standard input marks an episode's first
step after its reset (scripts/hil_serl.py writes one when the experiment's env says so), as a person watching the
arm sees the policy begin. The patience counts from there, not through the reset; the expert leaves an episode
the env ended before success (its step limit) at the next line, and waits for a line before each episode. A line
"patience SECONDS" sets the patience from the next episode on (the runner's --patience-grows: a person who waits
longer once the policy has shown it can do the task alone).
"""

from __future__ import annotations

import argparse
import math
import sys
import threading
import time
from dataclasses import dataclass

import numpy as np

from .client import ServerError
from .experts import EXPERTS, ExpertBlocked, touched


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m scripted_expert", description=__doc__.split("\n\n")[1])
    parser.add_argument("--task", required=True, choices=sorted(EXPERTS), help="the task (config/tasks/<task>.yaml)")
    parser.add_argument(
        "--url",
        action="append",
        help="a server of the task's world, once per arm in the experiment's order (object_handover: left, "
        "right); default: the experiment's SERVER_URLs",
    )
    parser.add_argument("--episodes", type=int, default=1, help="episodes to drive; 0: until stopped (default 1)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per episode before giving up")
    parser.add_argument("--rate", type=float, default=10.0, help="SpaceMouse states posted per second (default 10)")
    parser.add_argument(
        "--reopen-robotiq",
        action="store_true",
        help="only for a simulator run with robotiq_open_position:=175 (the published server's open, which reads "
        "0.31, below the env's 0.85): open a Robotiq fully (/move_gripper 0) where the stock env can no longer "
        "close it, and let go of a plugged-in USB stick after a success so that USBEnv's next reset can take it: "
        "the steps no SpaceMouse can take. Not needed with the default full open",
    )
    parser.add_argument(
        "--success-key", action="store_true", help="press space every tick while the task is a success (for "
        "record_success_fail.py)"
    )  # fmt: skip
    parser.add_argument(
        "--patience", type=float, default=0.0, help="seconds to leave the episode to the policy (cap at rest) "
        "before intervening, as a person does in training; 0: intervene at once (default)"
    )  # fmt: skip
    parser.add_argument(
        "--stalled", type=float, default=0.0, help="with --patience: step in before the patience is out once the "
        "policy has held the arms still (each hand within 2 mm, each gripper within 0.05) for this many seconds, as "
        "a person steps in when the robot is stuck (a plug pressed beside its hole); 0: wait out the patience "
        "(default)"
    )  # fmt: skip
    parser.add_argument(
        "--holding", type=float, default=0.0, help="with --patience: while the policy holds the task's object off "
        "everything else (the ground truth has it touching grippers only), its patience waits, for up to this many "
        "seconds in all, as a person does not take over from a robot carrying the object; 0: the patience counts "
        "on (default)"
    )  # fmt: skip
    parser.add_argument(
        "--hand-back", type=float, default=0.0, help="with --patience: seconds the expert drives before it hands "
        "the episode back to the policy for --patience seconds more, and so on until success; 0: drive to success "
        "once it stepped in (default)"
    )  # fmt: skip
    parser.add_argument(
        "--episode-starts", choices=("success", "stdin"), default="success", help="what starts an episode: the "
        "task no longer a success (default: the env's reset has undone the last one), or a line on standard input "
        "at the env's first step after each reset (the patience counts from it)"
    )  # fmt: skip
    parser.add_argument("--hold", type=float, default=0.0, help="seconds to stay at a success before the next step")
    parser.add_argument("--esc", action="store_true", help="press Esc after each episode (FrankaEnv ends it)")
    parser.add_argument("--quiet", action="store_true", help="print only the outcome of each episode")
    args = parser.parse_args(argv)
    if args.hand_back < 0 or (args.hand_back > 0 and args.patience <= 0):
        parser.error("--hand-back needs --patience: the policy's turns between the expert's (and is >= 0)")
    if not (args.stalled >= 0 and math.isfinite(args.stalled)) or (args.stalled > 0 and args.patience <= 0):
        parser.error("--stalled needs --patience: it ends the policy's turn early (and is >= 0)")
    if not (args.holding >= 0 and math.isfinite(args.holding)) or (args.holding > 0 and args.patience <= 0):
        parser.error("--holding needs --patience: it lengthens the policy's turn (and is >= 0)")
    return args


class EnvEpisodes:
    """The env's episodes, from standard input: a line "start" at an episode's first step after its reset, "end" at
    its last step ("end success" where the ground truth ended it, "end" at the env's step limit). A reader thread
    keeps the lines; the episode the expert took is over at the next line, which sets `abandon` (the running
    expert's `stopped`: it rests at once). "patience SECONDS" is no episode's line: it sets `patience` for the
    episodes that start after it (each keeps the one it started with: `patiences`)."""

    def __init__(self, patience: float) -> None:
        self.patience = patience
        self.lines: list[str] = []
        self.patiences: list[float] = []  # the patience as each line came
        self.taken = -1  # index of the "start" of the episode the expert is in
        self.changed = threading.Condition()
        self.closed = False
        self.abandon: threading.Event | None = None
        threading.Thread(target=self._read, name="env-episodes", daemon=True).start()

    def _read(self) -> None:
        for line in sys.stdin:
            if line.startswith("patience "):
                self._set_patience(line.removeprefix("patience ").strip())
                continue
            with self.changed:
                self.lines.append(line.strip())
                self.patiences.append(self.patience)
                if self.abandon is not None and self.over():
                    self.abandon.set()
                self.changed.notify_all()
        with self.changed:
            self.closed = True  # no more episodes: the one taken ends too
            if self.abandon is not None:
                self.abandon.set()
            self.changed.notify_all()

    def _set_patience(self, text: str) -> None:
        try:
            patience = float(text)
        except ValueError:
            patience = float("nan")
        if not (math.isfinite(patience) and patience > 0):
            print(f"scripted_expert: 'patience {text}' ignored: the patience is a number of seconds > 0 (it stays "
                  f"{self.patience:g} s)", file=sys.stderr, flush=True)  # fmt: skip
            return
        self.patience = patience
        print(f"[patience] {patience:g} s from the next episode on", flush=True)

    def next(self) -> bool:
        """Wait for an episode that started after the one taken and has not ended yet; take it (False: standard
        input closed)."""
        with self.changed:
            while not self.closed and not (len(self.lines) - 1 > self.taken and self.lines[-1] == "start"):
                self.changed.wait()
            if self.closed:
                return False
            self.taken = len(self.lines) - 1
            return True

    def taken_patience(self) -> float:
        """The patience of the episode taken (as it was when the episode started)."""
        return self.patiences[self.taken]

    def over(self) -> bool:
        """Whether the episode taken has ended (a line after its start)."""
        return len(self.lines) - 1 > self.taken

    def succeeded(self) -> bool:
        """Whether the episode taken ended in success."""
        return self.over() and self.lines[self.taken + 1] == "end success"


STILL_M = 0.002  # [m] a hand that stays within this of where it was holds still (--stalled)
STILL_GRIPPER = 0.05  # and its gripper within this (a closing gripper is no stall)


class Stillness:
    """Since when the policy has held the arms still: each hand within STILL_M of where it was when they last
    moved, each gripper within STILL_GRIPPER."""

    def __init__(self) -> None:
        self.since: float | None = None
        self.where: list[tuple[np.ndarray, float]] = []

    def seconds(self, arms, now: float) -> float:
        here = [(arm.hand.pos.copy(), arm.gripper) for arm in arms]
        moved = len(here) != len(self.where) or any(
            float(np.linalg.norm(pos - was)) > STILL_M or abs(gripper - gripped) > STILL_GRIPPER
            for (pos, gripper), (was, gripped) in zip(here, self.where, strict=True)
        )
        if moved:
            self.since, self.where = now, here
        return now - self.since


def carried(truth: dict) -> bool:
    """The task's object held off everything else: the ground truth has it touching grippers only."""
    touching = touched(truth)
    return bool(touching) and all(part.endswith("gripper") for part in touching)


def policy_succeeds(
    expert, patience: float, rate: float, episodes: EnvEpisodes | None = None, stalled: float = 0.0,
    holding: float = 0.0,
) -> bool | None:  # fmt: skip
    """Leave the arms to the policy (the SpaceMouse at rest) for `patience` s: whether the task succeeded (with
    `episodes`: False as soon as the env ends the episode, whether by success or by its step limit). With
    `stalled` > 0: None as soon as the policy has held the arms still that long (the expert steps in early). With
    `holding` > 0: the patience waits while the policy carries the object (`carried`), for up to `holding` s."""
    expert.rest()
    end = time.monotonic() + patience
    still, waited, last = Stillness(), 0.0, time.monotonic()
    while time.monotonic() < end:
        truth, now = expert.truth(), time.monotonic()
        if truth["success"]:
            return True
        if holding > 0 and waited < holding and carried(truth):
            grace = min(now - last, holding - waited)  # the time since the last look, the object held
            waited, end = waited + grace, end + grace
        last = now
        if episodes is not None and episodes.over():
            return episodes.succeeded()
        if stalled > 0:
            for arm in expert.arms:
                arm.read()
            if still.seconds(expert.arms, time.monotonic()) >= stalled:
                return None
        time.sleep(1.0 / rate)
    return False


@dataclass
class Turns:
    """Who drove an episode: whether the policy or the expert reached the success, when the expert first stepped in
    (seconds from the episode's start, None: never, the policy alone), the seconds it drove, and its turns."""

    success: bool = False
    stepped_in: float | None = None
    drove: float = 0.0
    turns: int = 0
    stalls: int = 0  # --stalled: the policy's turns that ended early, the arms held still

    def how(self, ticks: int, patience: float) -> str:
        if self.stepped_in is None:
            return "by the policy, no intervention"
        how = f"{ticks} ticks of intervention"
        if patience > 0:
            how += f" from {self.stepped_in:.1f} s on"
        if self.stalls:
            how += f" (the policy held the arms still in {self.stalls} of its turns)"
        if self.turns > 1:
            how += f", in {self.turns} turns of the policy's and the expert's, the expert driving {self.drove:.1f} s"
        return how


def take_turns(expert, args: argparse.Namespace, episodes: EnvEpisodes | None, patience: float) -> Turns:
    """One episode: the policy for `patience` s, then the expert to success, or (--hand-back) for that long and then
    the policy's again, until success, the env's end of the episode, or --timeout s (a success the env saw at its
    end is the caller's to read: EnvEpisodes.succeeded)."""
    start, turns = time.monotonic(), Turns()
    # with the env's episodes, the env ends each at the ground truth's success: so does the expert
    until = (lambda truth: bool(truth["success"])) if episodes is not None else None
    while True:
        alone = (
            policy_succeeds(expert, patience, args.rate, episodes, args.stalled, args.holding)
            if patience > 0
            else False
        )
        if alone:
            turns.success = True
            return turns
        turns.stalls += alone is None
        left = args.timeout - (time.monotonic() - start)
        if expert.stopped.is_set() or left <= 0 or (episodes is not None and episodes.over()):
            break
        turns.stepped_in = time.monotonic() - start if turns.stepped_in is None else turns.stepped_in
        turns.turns += 1
        began = time.monotonic()
        turns.success = expert.run(min(left, args.hand_back) if args.hand_back > 0 else left, args.rate, until)
        turns.drove += time.monotonic() - began
        if turns.success or args.hand_back <= 0:
            break
    return turns


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    log = (lambda message: None) if args.quiet else (lambda message: print(message, flush=True))
    try:
        make = lambda: EXPERTS[args.task](args.url, reopen_robotiq=args.reopen_robotiq, log=log)  # noqa: E731
        expert = make()
    except (ExpertBlocked, ValueError) as exc:
        print(f"scripted_expert: {exc}", file=sys.stderr)
        return 2
    failures, episode = 0, 0
    episodes = EnvEpisodes(args.patience) if args.episode_starts == "stdin" else None
    try:
        while args.episodes == 0 or episode < args.episodes:
            episode += 1
            if episodes is not None:  # the env's own episode: from its first step
                expert.rest()
                log(f"[{args.task}] waiting for the env's next episode to start")
                if not episodes.next():
                    break
                with episodes.changed:
                    episodes.abandon = expert.stopped
                    if episodes.over():
                        expert.stopped.set()
            elif expert.truth()["success"]:
                log(f"[{args.task}] episode {episode}: waiting for the env's reset (the task is a success now)")
                while expert.truth()["success"]:
                    time.sleep(0.2)
            start, patience = time.monotonic(), args.patience if episodes is None else episodes.taken_patience()
            turns = take_turns(expert, args, episodes, patience)
            ok = turns.success or (episodes is not None and episodes.succeeded())
            if episodes is not None and not ok:  # the env ended it first (its step limit)
                how = "ended by the env" + (
                    "" if turns.stepped_in is None else f" after {turns.how(expert.ticks, patience)}"
                )
                print(f"[{args.task}] episode {episode}: no success after {time.monotonic() - start:.1f} s, {how}; "
                      f"it stood at {expert.standing()}", flush=True)  # fmt: skip
                failures += 1
                expert = make()
                continue
            print(
                f"[{args.task}] episode {episode}: {'success' if ok else 'no success'} after "
                f"{time.monotonic() - start:.1f} s, {turns.how(expert.ticks, patience)}",
                flush=True,
            )
            failures += not ok
            end = time.monotonic() + args.hold
            while ok and time.monotonic() < end:  # the cap at rest; space for each step that is a success
                if args.success_key and expert.truth()["success"]:
                    expert.arms[0].server.key("space")
                time.sleep(1.0 / args.rate)
            if ok:
                expert.after_success()
            if args.esc:
                expert.arms[0].server.key("esc")
            expert = make()  # a fresh one for the next episode
    except ExpertBlocked as exc:
        print(f"scripted_expert: {exc}", file=sys.stderr)
        return 2
    except ServerError as exc:
        print(f"scripted_expert: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        expert.rest()
        return 130
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
