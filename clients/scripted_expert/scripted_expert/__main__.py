"""python -m scripted_expert --task ram_insertion [--url http://127.0.0.2:5000/] [--episodes 0] ...

Drives the task's virtual SpaceMouse (POST /spacemouse on the task's servers) from the simulator's ground
truth, episode after episode, while HIL-SERL's scripts run with FRANKA_SIM_SPACEMOUSE=1 (and, for the keys,
FRANKA_SIM_KEYS=1). Each episode: wait until the task is not a success (the env's reset has undone the last
one), let the policy act for `--patience` seconds if asked (a person who steps in only when the policy
does not get there), drive to success, then optionally keep pressing space (record_success_fail marks those steps as
successes) and press Esc (FrankaEnv ends the episode). Exit status 0 when every episode succeeded, 1 when
one did not, 2 when the task has no expert or the expert is blocked.
"""

from __future__ import annotations

import argparse
import sys
import time

from .client import ServerError
from .experts import EXPERTS, ExpertBlocked


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
    parser.add_argument("--hold", type=float, default=0.0, help="seconds to stay at a success before the next step")
    parser.add_argument("--esc", action="store_true", help="press Esc after each episode (FrankaEnv ends it)")
    parser.add_argument("--quiet", action="store_true", help="print only the outcome of each episode")
    return parser.parse_args(argv)


def policy_succeeds(expert, patience: float, rate: float) -> bool:
    """Leave the arms to the policy (the SpaceMouse at rest) for `patience` s: whether the task succeeded."""
    expert.rest()
    end = time.monotonic() + patience
    while time.monotonic() < end:
        if expert.truth()["success"]:
            return True
        time.sleep(1.0 / rate)
    return False


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
    try:
        while args.episodes == 0 or episode < args.episodes:
            episode += 1
            if expert.truth()["success"]:
                log(f"[{args.task}] episode {episode}: waiting for the env's reset (the task is a success now)")
                while expert.truth()["success"]:
                    time.sleep(0.2)
            start = time.monotonic()
            by_policy = args.patience > 0 and policy_succeeds(expert, args.patience, args.rate)
            intervened = time.monotonic()
            ok = by_policy or expert.run(timeout=args.timeout, rate=args.rate)
            how = "by the policy, no intervention" if by_policy else f"{expert.ticks} ticks of intervention"
            if args.patience > 0 and not by_policy:
                how += f" from {intervened - start:.1f} s on"
            print(
                f"[{args.task}] episode {episode}: {'success' if ok else 'no success'} after "
                f"{time.monotonic() - start:.1f} s, {how}",
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
