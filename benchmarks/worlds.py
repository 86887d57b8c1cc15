"""Several worlds feeding one learner, and a training run that survives its faults: measured as a user runs it.

    make bench-worlds                         # N = 1, 2, 3 worlds, 10 training minutes each (about 40 minutes)
    make bench-worlds ARGS="--faults"         # a 40-minute ram_insertion_state loop with faults injected (~75 min)

Scaling (`--worlds 1 2 3`): `scripts/hil_serl.py ram_insertion_state train --worlds N` on one experiment
directory's demos (recorded first where it has none), stopped with Ctrl-C after `--minutes` of training (from the
learner's first update). Over that window: the aggregate env steps/s of all actors (resets included) and the
learner's updates/s, from the runner's progress lines; each actor's pace within episodes (its [step period]
line); every transition the actors sent and the learner received (hil_serl_experiments/actors.py's counts); the
CPU each part used (psutil, every process the step started) and how busy the machine was.

Faults (`--faults`): `scripts/hil_serl.py ram_insertion_state loop --minutes 40`, and during its training the
world killed twice, the actor once and the expert once (SIGKILL to the part's process group), at random times
(`--fault-seed`) at least 3 minutes apart, never while an evaluation holds the actors parked. Each fault: when,
what, how long until the runner said the part runs again. Then the loop's own outcome (its named checkpoint on
50 fresh episodes), the learner's update counts in order, and the transitions sent and received.

Records: benchmarks/worlds.json (scaling), benchmarks/learning/<experiment>-faults-<seed>.json (faults); each
as a section of benchmarks/results.md (`--table`: both sections again from the committed records).
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

import psutil

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parent.parent / "scripts")]
from runner_module import runner  # noqa: E402 (scripts/hil_serl.py as a module)
from watched import ROOT, Watched  # noqa: E402

LEARNER_NICE = runner().LEARNER_NICE  # the runner's default

BENCHMARKS = ROOT / "benchmarks"
SCALING_RECORD = BENCHMARKS / "worlds.json"
PACE = re.compile(r"\[step period\] pace after \d+ resets: ([\d.]+) env steps/s within episodes")
FAULTS = ("world", "world", "actor", "expert")
FAULT_PROCESS = {"world": "world launch", "actor": "actor", "expert": "expert"}  # the process killed (its group)
FAULT_SPACING_S = 180.0
STEPPING_NOTE = (
    "stepping_after_s: from the kill to the first of the runner's progress lines (every 2-15 s) whose env step count "
    "rose above the count of the first line after the restart (what the dead parts left), less evaluation_pause_s "
    "(the part of an evaluation's pause that came between, from loop.json's pauses); resolution about 1 s plus the "
    "lines' period"
)


def machine_busy() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine so far."""
    t = psutil.cpu_times()
    return t.user + t.nice + t.system + t.irq + t.softirq + getattr(t, "steal", 0.0), sum(t)


def ensure_demos(task: str, directory: Path, log_dir: Path) -> None:
    if list((directory / "demo_data").glob("*.pkl")):
        return
    step = Watched(task, "demos", directory, [], log_dir / "demos.log")
    if step.finish(1800) != 0:
        raise RuntimeError(f"the demos step failed; see {log_dir / 'demos.log'}")


def paces(logs: Path) -> list[float]:
    """Each actor's last pace within episodes (its [step period] line) in a step's logs."""
    found = []
    for log in sorted(logs.glob("actor*.log")):
        matches = PACE.findall(log.read_text(errors="replace"))
        if matches:
            found.append(float(matches[-1]))
    return found


def counted(logs: Path) -> dict:
    """What the actors sent and the learner received, from their count files (hil_serl_experiments/actors.py): a step
    stopped with Ctrl-C leaves them, not its summary's `transitions`."""
    read = lambda path, kind: json.loads(path.read_text()).get(kind, {}) if path.is_file() else {}  # noqa: E731
    received = read(logs / "learner-received.json", "received")
    sent = {}
    for path in sorted(logs.glob("actor*-sent.json")):
        sent.update(read(path, "sent"))
    names = sorted({*sent, *received})
    by_name = {n: {"sent": sent.get(n, 0), "received": received.get(n, 0)} for n in names}
    return {"sent": sum(sent.values()), "received": sum(received.values()), "by_name": by_name}


def scaling_run(task: str, directory: Path, worlds: int, minutes: float, log_dir: Path, nice: int) -> dict:
    """`train --worlds N --learner-nice NICE` for `minutes` of training, measured over that window."""
    flags = ["--worlds", str(worlds), "--steps", "10000000", "--checkpoint-path", f"scaling-{worlds}"]
    flags += ["--learner-nice", str(nice)]
    shutil.rmtree(directory / f"scaling-{worlds}", ignore_errors=True)  # a rerun's: train_rlpd.py cannot resume it
    step = Watched(task, "train", directory, flags, log_dir / f"train-{worlds}.log")
    try:
        step.wait_for(" updates; ", 900)  # the learner updates: every actor is stepping
        time.sleep(30.0)  # past the start-up of every actor (its first episode's reset)
        start, cpu_start, busy_start = time.monotonic(), step.cpu(), machine_busy()
        progress_start = step.progress[-1]
        while time.monotonic() - start < 60.0 * minutes:
            if step.popen.poll() is not None:
                raise RuntimeError(f"the train step ended early; see {step.log.name}")
            time.sleep(5.0)
        end, cpu_end, busy_end = time.monotonic(), step.cpu(), machine_busy()
        progress_end = step.progress[-1]
    finally:
        step.interrupt()
        code = step.finish(300)
    seconds = end - start
    span = progress_end[0] - progress_start[0]
    summary = step.summary("train")
    logs = Path(sorted((directory / "logs").glob("train-*"))[-1])
    cpu = step.cpu_by_part(cpu_start, cpu_end, seconds)
    return {
        "worlds": worlds,
        "learner_nice": nice,
        "minutes": round(seconds / 60.0, 2),
        "exit_status": code,
        "env_steps_per_s": round((progress_end[1] - progress_start[1]) / span, 2),
        "learner_updates_per_s": round((progress_end[2] - progress_start[2]) / span, 2),
        "pace_within_episodes": paces(logs),
        "transitions": summary.get("transitions") or counted(logs),
        "restarts": summary.get("restarts", []),
        "cpu_percent_of_a_core": cpu,
        "machine_busy_percent": round(100.0 * (busy_end[0] - busy_start[0]) / (busy_end[1] - busy_start[1]), 1),
        "cores": psutil.cpu_count(),
        "logs": str(logs),
    }


def scaling(args) -> dict:
    from run import machine, utc_stamp  # noqa: PLC0415 (its imports are heavy: only for what it writes)

    directory = Path(args.dir or tempfile.mkdtemp(prefix="worlds-"))
    log_dir = Path(tempfile.mkdtemp(prefix="worlds-logs-"))
    ensure_demos(args.task, directory, log_dir)
    runs = []
    for n in args.worlds:
        runs.append(scaling_run(args.task, directory, n, args.minutes, log_dir, args.learner_nice))
        runs[-1]["date"] = utc_stamp()
        print(json.dumps(runs[-1]), flush=True)
        time.sleep(20.0)  # the worlds' ports free again
    record = {"task": args.task, "machine": machine(), "runs": runs}
    if SCALING_RECORD.exists():  # the record's other N kept (a rerun of some N replaces only theirs)
        before = json.loads(SCALING_RECORD.read_text())
        if before["task"] == args.task and before["machine"] == record["machine"]:
            kept = [r for r in before["runs"] if r["worlds"] not in args.worlds]
            record["runs"] = sorted(kept + runs, key=lambda r: r["worlds"])
    if not args.no_write:
        SCALING_RECORD.write_text(json.dumps(record, indent=1) + "\n")
        print(f"written to {SCALING_RECORD}")
    return record


def schedule(rng: random.Random, minutes: float) -> list[tuple[float, str]]:
    """(seconds after the learner's first update, part) for each fault: random, FAULT_SPACING_S apart at least."""
    latest = 60.0 * minutes - 300.0  # the last a few minutes before the end, so its recovery shows in training
    while True:
        times = sorted(rng.uniform(120.0, latest) for _ in FAULTS)
        if all(b - a >= FAULT_SPACING_S for a, b in itertools.pairwise(times)):
            parts = list(FAULTS)
            rng.shuffle(parts)
            return list(zip(times, parts, strict=True))


def actor_steps_again(step: Watched, since: float) -> float:
    """When the actors' env steps went on after `since` (a part said running again): the runner's first progress
    line after it holds the count the parts that died left (their last output was read before the restart), the
    first higher count after that is a step of a running actor. Resolution: the runner's progress lines (2 s)."""
    step.wait_until(lambda: step.progress[-1][0] > since, 600)
    left = next(n for t, n, _ in step.progress if t > since)
    step.wait_until(lambda: step.progress[-1][1] > left, 600)
    return next(t for t, n, _ in step.progress if t > since and n > left)


def wall(monotonic: float) -> float:
    """time.time() of a time.monotonic() reading (the loop's pauses are in time.time())."""
    return round(time.time() - (time.monotonic() - monotonic), 1)


def without_pauses(injected: list[dict], pauses: list[dict]) -> None:
    """Each fault's time to the actor stepping again less the evaluations' pauses between (an evaluation that
    started right after a kill parks the actor, which is not the recovery's time)."""
    for fault in injected:
        killed, stepping = fault["wall"]
        seconds = sum(max(0.0, min(stepping, b) - max(killed, a)) for a, b in (p["wall"] for p in pauses))
        fault["evaluation_pause_s"] = round(seconds, 1)
        fault["stepping_after_s"] = round(fault["stepping_after_s"] - seconds, 1)


def faults(args) -> dict:
    from run import utc_stamp  # noqa: PLC0415 (its imports are heavy: only for what it writes)

    directory = Path(args.dir or tempfile.mkdtemp(prefix="faults-"))
    log_dir = Path(tempfile.mkdtemp(prefix="faults-logs-"))
    rng = random.Random(args.fault_seed)
    plan = schedule(rng, args.fault_minutes)
    print("faults planned (s after the learner's first update): " + ", ".join(f"{p} {t:.0f}" for t, p in plan))
    flags = ["--minutes", str(args.fault_minutes), "--eval-every", str(args.eval_every), "--seed", str(args.seed)]
    step = Watched(args.task, "loop", directory, flags, log_dir / "loop.log")
    injected = []
    try:
        first_update = step.wait_for(" updates; ", 1800)
        for at, part in plan:
            while time.monotonic() < first_update + at or any((directory / "logs").glob("loop-*/pause")):
                if step.popen.poll() is not None:
                    raise RuntimeError(f"the loop ended before its faults; see {step.log.name}")
                time.sleep(1.0)
            seen = len(step.lines)
            killed = step.kill(FAULT_PROCESS[part])
            minute = (killed - first_update) / 60.0
            print(f"fault: {part} killed at {minute:.1f} min of training", flush=True)
            running = step.wait_for(f"{part} is running again after", 600, since=seen)
            stepping = actor_steps_again(step, running)
            back, training = round(running - killed, 1), round(stepping - killed, 1)
            injected.append({"part": part, "killed_at_min": round(minute, 2), "back_after_s": back,
                             "stepping_after_s": training, "wall": [wall(killed), wall(stepping)]})  # fmt: skip
            print(f"fault: {part} running again {back} s after it was killed, the actor stepping after {training} s "
                  "(an evaluation's pause included, if one came between)")  # fmt: skip
        code = step.finish(3 * 3600)
    finally:
        if step.popen.poll() is None:
            step.interrupt()
            step.finish(300)
    updates = [u for _, _, u in step.progress]
    loop = json.loads(sorted((directory / "logs").glob("loop-*/loop.json"))[-1].read_text())
    without_pauses(injected, loop.get("pauses") or [])
    summary = step.summary("loop")
    record = {
        "experiment": args.task,
        "seed": args.seed,
        "fault_seed": args.fault_seed,
        "date": utc_stamp(),
        "exit_status": code,
        "faults": injected,
        "restarts": summary.get("restarts") or loop.get("train", {}).get("restarts"),
        "learner_updates_never_went_back": all(b >= a for a, b in itertools.pairwise(updates)),
        "learner_updates_seen": [updates[0], updates[-1]] if updates else [],
        "progress": [(round((t - first_update) / 60.0, 2), n, u) for t, n, u in step.progress],
        "transitions": loop.get("train", {}).get("transitions"),
        "loop": {k: loop.get(k) for k in ("minutes", "eval_every_minutes", "minutes_to_goal", "named", "fresh",
                                          "last", "last_fresh", "put_back", "learner_steps_per_s", "machine")},
        "logs": str(log_dir),
        "stepping_note": STEPPING_NOTE,
    }  # fmt: skip
    out = BENCHMARKS / "learning" / f"{args.task}-faults-{args.seed}.json"
    if not args.no_write:
        out.write_text(json.dumps(record, indent=1, default=str) + "\n")
        print(f"written to {out}")
    return record


SCALING_SECTION = "## Several worlds, one learner"
FAULTS_SECTION = "## A training run with faults injected"
PARTS_SHOWN = ("sim", "server", "world launch", "actor", "expert", "learner", "runner")


def scaling_rows(record: dict) -> list[tuple[str, str]]:
    rows = []
    for run in record["runs"]:
        n, cpu, sent = run["worlds"], run["cpu_percent_of_a_core"], run["transitions"] or {}
        restarts = ", ".join(f"{r['part']} ({r['recovery_s']} s)" for r in run["restarts"]) or "none"
        per_world = " / ".join(f"{cpu.get(part, 0.0) / n:.0f}" for part in ("sim", "server", "actor", "expert"))
        rows += [
            (f"{n} world(s): training minutes measured (when)", f"{run['minutes']:g} ({run.get('date', '-')})"),
            (f"{n} world(s): restarts by the supervisor", restarts),
            (f"{n} world(s): the learner's niceness", str(run.get("learner_nice", 0))),
            (f"{n} world(s): env steps/s of all actors, resets included / learner updates/s",
             f"{run['env_steps_per_s']:.2f} / {run['learner_updates_per_s']:.2f}"),
            (f"{n} world(s): each actor's env steps/s within its episodes",
             " / ".join(f"{p:.2f}" for p in run["pace_within_episodes"]) or "-"),
            (f"{n} world(s): transitions the actors sent / the learner received",
             f"{sent.get('sent', '-')} / {sent.get('received', '-')}"),
            (f"{n} world(s): CPU, % of a core: " + ", ".join(PARTS_SHOWN),
             " / ".join(f"{cpu.get(part, 0.0):.0f}" for part in PARTS_SHOWN)),
            (f"{n} world(s): CPU per world, % of a core: sim, server, actor, expert", per_world),
            (f"{n} world(s): the machine busy ({run['cores']} cores)", f"{run['machine_busy_percent']:.0f} %"),
        ]  # fmt: skip
    return rows


def paused(fault: dict) -> str:
    seconds = fault.get("evaluation_pause_s", 0.0)
    return f" (and {seconds:.0f} s of an evaluation's pause between)" if seconds else ""


def fault_rows(record: dict) -> list[tuple[str, str]]:
    from learning_record import interval  # noqa: PLC0415 (scripts/)

    rows = [(f"fault {i}: {f['part']} killed at training minute {f['killed_at_min']:.1f}: running again / the actor "
             "stepping again after", f"{f['back_after_s']:.0f} s / {f['stepping_after_s']:.0f} s" + paused(f))
            for i, f in enumerate(record["faults"], start=1)]  # fmt: skip
    sent = record["transitions"] or {}
    first, last = record["learner_updates_seen"] or ["-", "-"]
    fresh, named = record["loop"]["fresh"], record["loop"]["named"]
    low, high = interval(fresh["successes"], fresh["episodes"])
    rows += [
        ("the learner's update count never went back (first / last seen)",
         f"{'yes' if record['learner_updates_never_went_back'] else 'NO'} ({first} / {last})"),
        ("transitions the actors sent / the learner received (every actor start counted)",
         f"{sent.get('sent', '-')} / {sent.get('received', '-')}"),
        (f"the named checkpoint ({named['step']}, minute {named['minutes']:.1f}) on fresh episodes (95 % interval)",
         f"{fresh['successes']}/{fresh['episodes']} ({100 * low:.0f}-{100 * high:.0f} %)"),
        ("training minutes to a checkpoint confirmed at the goal", f"{record['loop']['minutes_to_goal']}"),
    ]  # fmt: skip
    return rows


def fault_free(experiment: str) -> str:
    """The fault-free records' named checkpoints on fresh episodes, and their minutes to the goal."""
    found = []
    for path in sorted((BENCHMARKS / "learning").glob(f"{experiment}-[0-9]*.json")):
        record = json.loads(path.read_text())
        fresh, minutes = record["fresh"], record["minutes_to_goal"]
        found.append(f"seed {record['seed']} {fresh['successes']}/{fresh['episodes']} ({minutes} min to the goal)")
    return ", ".join(found) or "none recorded"


def write_tables(args, sections: tuple[str, ...] = ("scaling", "faults")) -> None:
    """results.md's sections of `sections` from the committed records (a scaling run rewrites only its own: each
    section is stamped with the time and machine it is written on)."""
    from run import markdown_table, write_section  # noqa: PLC0415 (its imports are heavy: only for what it writes)

    if "scaling" in sections and SCALING_RECORD.exists():
        record = json.loads(SCALING_RECORD.read_text())
        rows = scaling_rows(record)
        print(markdown_table(rows))
        intro = (
            f"`scripts/hil_serl.py {record['task']} train --worlds N`, one learner and an actor per world, the "
            f"scripted expert on every world, each N measured over the training minutes its rows say "
            f"({record['machine']}; record: benchmarks/worlds.json). docs/scaling.md reads these figures."
        )
        missing, notes = record.get("not_recorded"), record.get("notes")
        after = (f"\nNot recorded: {missing}\n" if missing else "") + (f"\nNotes: {notes}\n" if notes else "")
        stamp = max((run.get("date", "") for run in record["runs"]), default="")
        write_section(SCALING_SECTION, "make bench-worlds", intro, rows, after, stamp=stamp, on=record["machine"])
    records = [(p.name, json.loads(p.read_text())) for p in sorted((BENCHMARKS / "learning").glob("*-faults-*.json"))]
    if "faults" in sections and records:  # one section for every fault run (a section per run would keep only the last)
        label = {name: f"seed {r['seed']}, fault seed {r['fault_seed']}" for name, r in records}
        rows = [(f"{label[name]}: {figure}", value) for name, r in records for figure, value in fault_rows(r)]
        print(markdown_table(rows))
        first = records[0][1]
        intro = (
            f"`scripts/hil_serl.py {first['experiment']} loop --minutes {first['loop']['minutes']:g} --seed S` with "
            "the world killed twice, the actor once and the expert once (SIGKILL, random times from the fault seed); "
            f"the supervisor restarts each (records: {', '.join(f'benchmarks/learning/{n}' for n, _ in records)}). "
            f"Fault-free runs of the same loop: {fault_free(first['experiment'])}."
        )
        on = "; ".join(f"{label[n]}: {r['loop']['machine']['cpu']}, {r['loop']['machine']['cores']} cores"
                       for n, r in records)  # fmt: skip
        stamp = ", ".join(r.get("date", "-") for _, r in records)
        write_section(FAULTS_SECTION, "make bench-worlds ARGS=--faults", intro, rows, stamp=stamp, on=on)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", default="ram_insertion_state", help="the experiment (default ram_insertion_state)")
    parser.add_argument("--dir", help="the experiment directory (default: a new temporary one)")
    parser.add_argument("--worlds", type=int, nargs="+", default=[1, 2, 3], help="scaling: the numbers of worlds")
    parser.add_argument("--minutes", type=float, default=10.0, help="scaling: training minutes measured per N")
    parser.add_argument(
        "--learner-nice",
        type=int,
        default=LEARNER_NICE,
        help=f"scaling: the runner's --learner-nice (default its {LEARNER_NICE})",
    )
    parser.add_argument("--faults", action="store_true", help="the loop with faults injected, not the scaling")
    parser.add_argument("--fault-minutes", type=float, default=40.0, help="faults: the loop's training minutes")
    parser.add_argument("--eval-every", type=float, default=10.0, help="faults: the loop's --eval-every")
    parser.add_argument("--seed", type=int, default=1, help="faults: the loop's --seed")
    parser.add_argument("--fault-seed", type=int, default=1, help="faults: the seed of the faults' times")
    parser.add_argument("--no-write", action="store_true", help="print, write no record")
    parser.add_argument("--table", action="store_true", help="results.md's sections again from the records")
    args = parser.parse_args()
    if args.table:
        write_tables(args)
        return 0
    record = faults(args) if args.faults else scaling(args)
    print(json.dumps(record, indent=1, default=str))
    if not args.no_write:
        write_tables(args, ("faults",) if args.faults else ("scaling",))
    return 0


if __name__ == "__main__":
    sys.exit(main())
