"""Several actors feeding one learner through agentlace, unaltered (runs in HIL-SERL's environment).

train_rlpd.py's actor sends its transitions through agentlace's TrainerClient under the data-store names
"actor_env" and "actor_env_intvn", whichever actor it is; agentlace's TrainerServer keeps one "last update id" per
store name, which each client asks for before it sends what came after it. Two actors under one name overwrite
each other's id, so that transitions are dropped (an actor behind the other's id) or sent twice. An actor that
starts again (a fresh store, its ids from 0) under its old name sends nothing until it passes its old id.

`install()` (hil_serl_experiments/launch.py, before train_rlpd.py runs) is the smallest change round that, in the
two agentlace classes train_rlpd.py uses, HIL-SERL's and agentlace's code untouched:
- an actor (`$HIL_SERL_ACTOR`, e.g. "2" for the second world's) sends under names of its own: TrainerClient's
  data-store names become "actor_env@2.<start>", "actor_env_intvn@2.<start>", `<start>` the process's start (a
  restarted actor is a new sender, its ids from 0);
- the learner's TrainerServer (`$HIL_SERL_ACTORS` set: several actors may come) takes a name "NAME@..." for the
  store it registered as NAME the first time that name asks, with its own last update id, and counts what each
  name brings. The counts go to `$HIL_SERL_ACTOR_COUNTS` (JSON, rewritten at each batch) where that is set; an
  actor keeps there what it sent under each name, so that both ends can be compared.

Without the variables nothing changes (one actor, HIL-SERL's names).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections import Counter

ACTOR = "HIL_SERL_ACTOR"  # an actor's id (its world's); its store names get "@<id>.<start>"
ACTORS = "HIL_SERL_ACTORS"  # set for a learner that several actors feed
COUNTS = "HIL_SERL_ACTOR_COUNTS"  # where the learner keeps its counts per store name (JSON)
SEPARATOR = "@"


def own_name(name: str, actor: str, start: int) -> str:
    """An actor's name for HIL-SERL's store `name`."""
    return f"{name}{SEPARATOR}{actor}.{start}"


def base_name(name: str) -> str:
    """HIL-SERL's store name of an actor's own name (itself for HIL-SERL's)."""
    return name.split(SEPARATOR, 1)[0]


class Counted:
    """A learner's store as one actor's name reaches it: inserts counted (by `counts[name]`), all else the store's."""

    def __init__(self, store, name: str, counts: ActorCounts) -> None:
        self._store, self._name, self._counts = store, name, counts

    def batch_insert(self, batch_data) -> None:
        self._store.batch_insert(batch_data)
        self._counts.add(self._name, len(batch_data))

    def __getattr__(self, attribute: str):
        return getattr(self._store, attribute)


class ActorCounts:
    """Transitions per store name (what each name brought the learner, or what an actor sent), kept in a JSON file
    under `kind`."""

    def __init__(self, path: str | None, kind: str = "received") -> None:
        self.path, self.kind, self.counts, self.lock = path, kind, Counter(), threading.Lock()

    def add(self, name: str, count: int) -> None:
        with self.lock:
            self.counts[name] += count
            if self.path:
                temporary = f"{self.path}.tmp"
                with open(temporary, "w") as out:
                    json.dump({"time": round(time.time(), 3), self.kind: dict(self.counts)}, out)
                os.replace(temporary, self.path)


class Stores(dict):
    """TrainerServer's data stores: a name "NAME@..." not seen before is the store registered as NAME, counted, with
    its own last update id (-1) in `ids`, from the first time it is asked for."""

    def __init__(self, ids: dict, counts: ActorCounts) -> None:
        super().__init__()
        self.ids, self.counts = ids, counts

    def __contains__(self, name) -> bool:
        if not dict.__contains__(self, name) and isinstance(name, str) and SEPARATOR in name:
            base = base_name(name)
            if dict.__contains__(self, base):
                dict.__setitem__(self, name, Counted(dict.__getitem__(self, base), name, self.counts))
                self.ids.setdefault(name, -1)
        return dict.__contains__(self, name)


def install() -> None:
    """Per-actor store names for this process: as an actor ($HIL_SERL_ACTOR) or as a learner ($HIL_SERL_ACTORS)."""
    from agentlace import trainer

    actor = os.environ.get(ACTOR)
    if actor and not getattr(trainer.TrainerClient.__init__, "own_names", False):
        original_client = trainer.TrainerClient.__init__
        start = int(time.time() * 1000)

        sent = ActorCounts(os.environ.get(COUNTS), "sent")
        original_update_ds = trainer.TrainerClient._update_ds

        def client_init(self, name, server_ip, config, data_store=None, data_stores=None, **kwargs):
            stores = {own_name(key, actor, start): store for key, store in (data_stores or {}).items()}
            print(f"[actors] actor {actor} sends as {', '.join(stores) or own_name(name, actor, start)}", flush=True)
            original_client(self, own_name(name, actor, start), server_ip, config, data_store=data_store,
                            data_stores=stores, **kwargs)  # fmt: skip

        def update_ds(self, name, data):
            answer = original_update_ds(self, name, data)
            if answer is not None:  # sent (agentlace does not wait for the learner's answer)
                sent.add(name, len(data["data"]))
            return answer

        client_init.own_names = True
        trainer.TrainerClient.__init__ = client_init
        trainer.TrainerClient._update_ds = update_ds
    if os.environ.get(ACTORS) and not getattr(trainer.TrainerServer.__init__, "own_names", False):
        original_server = trainer.TrainerServer.__init__
        counts = ActorCounts(os.environ.get(COUNTS))

        def server_init(self, *args, **kwargs):
            original_server(self, *args, **kwargs)
            self.data_stores = Stores(self.last_update_id_map, counts)  # before any store is registered
            print(f"[actors] the learner takes each actor's own store names ({os.environ[ACTORS]} actor(s))",
                  flush=True)  # fmt: skip

        server_init.own_names = True
        trainer.TrainerServer.__init__ = server_init
