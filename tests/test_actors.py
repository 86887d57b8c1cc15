"""hil_serl_experiments/actors.py: several actors feeding one learner through agentlace, each actor's transitions
received once. Fast, in HIL-SERL's environment: agentlace's own TrainerServer and TrainerClient over loopback, as
train_rlpd.py makes them (the stores "actor_env" and "actor_env_intvn"), with agentlace's QueuedDataStore on both
ends (the learner's replay buffer is not what is tested here; the runs with worlds are tests/test_worlds.py)."""

from __future__ import annotations

import json
import socket
import subprocess
from pathlib import Path

import hil_serl
import psutil

OWN = Path(__file__).resolve().parent.parent / "hil_serl_experiments"

ROLE = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
import actors
actors.install()
from agentlace.data.data_store import QueuedDataStore
from agentlace.trainer import TrainerClient, TrainerConfig, TrainerServer

role, ports, out = sys.argv[2], [int(p) for p in sys.argv[3].split(",")], sys.argv[4]
config = TrainerConfig(port_number=ports[0], broadcast_port=ports[1], request_types=[])
if role == "learner":
    stores = {name: QueuedDataStore(100000) for name in ("actor_env", "actor_env_intvn")}
    server = TrainerServer(config)
    for name, store in stores.items():
        server.register_data_store(name, store)  # as train_rlpd.py's learner does
    server.start(threaded=True)
    print("ready", flush=True)
    sys.stdin.readline()  # the test says when the actors are done
    time.sleep(0.5)
    json.dump({name: store.latest_data_id() + 1 for name, store in stores.items()}, open(out, "w"))
else:  # an actor: 200 transitions, 50 of them interventions, sent every 10 as train_rlpd.py's actor does
    stores = {"actor_env": QueuedDataStore(50000), "actor_env_intvn": QueuedDataStore(50000)}
    client = TrainerClient("actor_env", "127.0.0.1", config, data_stores=stores, wait_for_server=True, timeout_ms=3000)
    for step in range(200):
        stores["actor_env"].insert({"actor": role, "step": step})
        if step % 4 == 0:
            stores["actor_env_intvn"].insert({"actor": role, "step": step})
        if step % 10 == 9:
            client.update()
    client.update()
    time.sleep(0.5)
    client.stop()
"""


def free_ports() -> str:
    """Two free TCP ports, "REQUEST,BROADCAST" (agentlace's two)."""
    sockets = [socket.socket() for _ in range(2)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = ",".join(str(s.getsockname()[1]) for s in sockets)
    for s in sockets:
        s.close()
    return ports


def learner_and_actors(tmp_path: Path, actors: list[str | None], counted: bool) -> tuple[dict, dict, list[dict]]:
    """A learner and `actors` one after the other (an id each, None: HIL-SERL's names): what the learner's stores
    hold, what it counted per name, and what each actor counted as sent."""
    ports, python = free_ports(), hil_serl.python()
    learner_env = {"HIL_SERL_ACTORS": str(len(actors)), "HIL_SERL_ACTOR_COUNTS": str(tmp_path / "received.json")}
    learner = subprocess.Popen(
        [python, "-c", ROLE, str(OWN), "learner", ports, str(tmp_path / "held.json")],
        env=hil_serl.environment(learner_env if counted else {}),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        while (line := learner.stdout.readline()) and line.strip() != "ready":
            print(line, end="")
        assert line, "the learner ended before it was ready"
        for index, actor in enumerate(actors):
            counts = tmp_path / f"sent-{index}.json"
            env = {"HIL_SERL_ACTOR": actor, "HIL_SERL_ACTOR_COUNTS": str(counts)} if actor else {}
            code, output = hil_serl.run(["-c", ROLE, str(OWN), str(actor), ports, ""], env=env, timeout=120)
            assert code == 0, output
        learner.stdin.write("\n")
        learner.stdin.flush()
        learner.wait(timeout=30)
    finally:
        learner.kill()
    held = json.loads((tmp_path / "held.json").read_text())
    received = json.loads((tmp_path / "received.json").read_text())["received"] if counted else {}
    sent = [json.loads(p.read_text())["sent"] for p in sorted(tmp_path.glob("sent-*.json"))]
    return held, received, sent


@hil_serl.may_build
def test_each_actor_and_each_restart_reaches_the_learner_once_under_names_of_its_own(tmp_path):
    # actors 1 and 2, then actor 1 started again (a fresh store: its ids from 0 again)
    held, received, sent = learner_and_actors(tmp_path, ["1", "2", "1"], counted=True)
    assert held == {"actor_env": 600, "actor_env_intvn": 150}, held
    assert len(received) == 6 and sorted(received.values()) == [50] * 3 + [200] * 3, received
    for counts in sent:  # what each actor sent is what the learner counted under that actor's names
        assert sorted(counts.values()) == [50, 200] and all(received[name] == n for name, n in counts.items())
    assert {name.split("@")[1].split(".")[0] for name in received} == {"1", "2"}


@hil_serl.may_build
def test_without_own_names_a_second_actor_is_lost_behind_the_firsts_update_id(tmp_path):
    """HIL-SERL's names for every actor, as train_rlpd.py has them: the learner keeps one last update id per name,
    so that an actor whose store starts from 0 sends nothing until it passes the first actor's id."""
    held, _, _ = learner_and_actors(tmp_path, [None, None], counted=False)
    assert held == {"actor_env": 200, "actor_env_intvn": 50}, held  # 400 and 100 were sent


def test_a_script_whose_main_thread_raises_ends_though_its_other_threads_run(tmp_path: Path):
    """hil_serl_experiments/launch.py ends the process when the script's main thread raises (train_rlpd.py's actor
    leaves non-daemon threads, which kept a dead actor alive where the runner's supervisor restarts what ends), and
    ends what the script forked, as Python's exit would (HIL-SERL's SpaceMouse reader and its Manager, which a dead
    actor once left running after the step)."""
    script, forked = tmp_path / "dies.py", tmp_path / "forked"
    script.write_text(
        "import multiprocessing, os, threading, time\n"
        "threading.Thread(target=time.sleep, args=(600,)).start()  # not a daemon: Python would wait for it\n"
        "reader = multiprocessing.Process(target=time.sleep, args=(600,), daemon=True)  # as SpaceMouseExpert's\n"
        "reader.start()\n"
        f"open({str(forked)!r}, 'w').write(str(reader.pid))\n"
        "raise KeyError('pose')  # FrankaEnv's ps['pose'] on a 503\n"
    )
    code, output = hil_serl.run([str(OWN / "launch.py"), str(script)], timeout=120)
    assert code == 1 and "KeyError: 'pose'" in output, output
    assert not psutil.pid_exists(pid := int(forked.read_text())) or psutil.Process(pid).status() == "zombie"
