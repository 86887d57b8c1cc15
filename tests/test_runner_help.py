"""`scripts/hil_serl.py --help` names every step and every experiment the runner accepts (fast: no world, no
HIL-SERL environment needed)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import hil_serl as tests_hil_serl  # the tests' module of that name

ROOT = Path(__file__).resolve().parent.parent
hil_serl = tests_hil_serl.runner()  # scripts/hil_serl.py


def test_help_names_every_step_and_every_task():
    shown = subprocess.run([sys.executable, str(ROOT / "scripts" / "hil_serl.py"), "--help"], capture_output=True,
                           text=True, check=True).stdout  # fmt: skip
    flat = " ".join(shown.split())
    for step in hil_serl.STEPS:
        assert f"\n    {step} " in shown or f"{{{step}," in flat or f",{step}}}" in flat, step
        assert f"    {step}" in shown, f"step {step} is not described"
    tasks = hil_serl.known_tasks(hil_serl.ROOT.parent / "shared" / "hil-serl")
    assert {"ram_insertion", "usb_pickup_insertion", "object_handover", "egg_flip", "ram_insertion_state"} <= set(tasks)
    for task in tasks:
        assert task in flat, task


def test_an_agent_value_that_train_rlpd_sets_from_its_config_is_refused_with_the_flag_to_use(tmp_path):
    """--agent '{"discount": 0.95}' was silently overridden by the TrainConfig's 0.97 (train_rlpd.py passes it)."""
    ran = subprocess.run([sys.executable, str(ROOT / "scripts" / "hil_serl.py"), "ram_insertion_state", "train",
                          "--dir", str(tmp_path), "--agent", '{"discount": 0.95}'], capture_output=True, text=True,
                         timeout=600)  # fmt: skip
    assert ran.returncode == 2 and "--agent discount" in ran.stdout and "--train-config" in ran.stdout, ran.stdout


def test_patience_grows_takes_rate_colon_seconds_for_the_loop_and_refuses_anything_else():
    """--patience-grows RATE:SECONDS (repeatable; RATE in [0, 1], SECONDS > 0) is the loop's: refused with the reason
    for another step or a malformed stage, before anything starts."""
    args = hil_serl.parse(["ram_insertion_state", "loop", "--patience-grows", "0.5:5", "--patience-grows", "0:3"])
    assert args.patience_grows == [(0.5, 5.0), (0.0, 3.0)]
    assert hil_serl.parse(["ram_insertion_state", "loop"]).patience_grows == []
    for bad, why in (("5", "is not RATE:SECONDS"), ("0.5:nan", "SECONDS > 0"), ("1.5:5", "RATE in [0, 1]"),
                     ("0.5:0", "SECONDS > 0"), ("a:b", "is not RATE:SECONDS")):  # fmt: skip
        ran = subprocess.run([sys.executable, str(ROOT / "scripts" / "hil_serl.py"), "ram_insertion_state", "loop",
                              "--patience-grows", bad], capture_output=True, text=True, timeout=60)  # fmt: skip
        assert ran.returncode == 2 and why in ran.stderr, (bad, ran.stderr)
    ran = subprocess.run([sys.executable, str(ROOT / "scripts" / "hil_serl.py"), "ram_insertion_state", "train",
                          "--patience-grows", "0.5:5"], capture_output=True, text=True, timeout=60)  # fmt: skip
    assert ran.returncode == 2 and "--patience-grows is the loop's" in ran.stderr, ran.stderr


def test_an_experiment_names_its_experts_schedule_and_a_flag_on_the_command_line_wins():
    """usb_pickup_insertion_state's config names the scripted expert's schedule its goal was met with (EXPERT_ARGS:
    2 s, 4 s from the loop's first evaluation, stepping in after 1 s of stillness): the loop and train take it where
    the command line gives no such flag (train without --patience-grows, the loop's flag); a flag given wins, a
    --patience-grows given replaces the config's stages; an experiment without EXPERT_ARGS keeps the runner's."""
    loop = hil_serl.parse(["usb_pickup_insertion_state", "loop"])
    assert (loop.patience, loop.patience_grows, loop.stalled) == (2.0, [(0.0, 4.0)], 1.0)
    train = hil_serl.parse(["usb_pickup_insertion_state", "train"])
    assert (train.patience, train.patience_grows, train.stalled) == (2.0, [], 1.0)
    own = hil_serl.parse(["usb_pickup_insertion_state", "loop", "--patience", "3", "--patience-grows=0.5:6"])
    assert (own.patience, own.patience_grows, own.stalled) == (3.0, [(0.5, 6.0)], 1.0)
    assert hil_serl.parse(["usb_pickup_insertion_state", "loop", "--stalled", "0"]).stalled == 0.0
    plain = hil_serl.parse(["ram_insertion_state", "loop"])
    assert (plain.patience, plain.patience_grows, plain.stalled) == (5.0, [], 0.0)


def test_the_loops_record_keeps_the_agent_and_the_pace_the_learner_was_made_with():
    """A config's own values (usb_pickup_insertion_state's agent_kwargs and max_updates_per_transition) reach the
    record from the learner's lines, as --agent's and --train-config's do; a value given for the run stays."""
    log = (
        "[state agent] the experiment's hyperparameters: {'target_entropy': -6.0, 'critic_ensemble_size': 10}\n"
        "[state agent] the learner draws at most 2 batches per online transition\n"
    )
    record = {"agent": {}, "train_config": {}}
    hil_serl.learner_values(record, log)
    assert record == {"agent": {"target_entropy": -6.0, "critic_ensemble_size": 10},
                      "train_config": {"max_updates_per_transition": 2}}  # fmt: skip
    given = {"agent": {}, "train_config": {"max_updates_per_transition": 4}}
    hil_serl.learner_values(given, log)
    assert given["train_config"] == {"max_updates_per_transition": 4}
    plain = {"agent": {"x": 1}, "train_config": {}}
    hil_serl.learner_values(plain, "nothing said\n")
    assert plain == {"agent": {"x": 1}, "train_config": {}}
