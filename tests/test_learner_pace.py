"""state_agent.pace, the learner held to at most N batches per online transition (`--train-config
'{"max_updates_per_transition": N}'`), on the state replay buffers themselves in HIL-SERL's environment (no world,
no learner: the loop run paced end to end, its learner steps against the transitions it received, is
tests/test_learning_loop.py's).

- The first buffer made after `pace` (train_rlpd.py's online buffer) gives N batches per transition put in it, then
  waits until the actors put in another; the next buffer (the demo buffer) never waits; a download by index (how a
  buffer is read whole) never waits.
- `pace(None)`, the default, is train_rlpd.py's learner as it is: nothing waits; zero, a negative count and NaN are
  refused.
"""

from __future__ import annotations

import hil_serl

CHECK = r"""
import json, sys, threading
sys.path.insert(0, sys.argv[1])
import gymnasium as gym, numpy as np
import state_agent

space = gym.spaces.Dict({"state": gym.spaces.Box(-1, 1, (1, 3))})
actions = gym.spaces.Box(-1, 1, (2,))
one = {"observations": {"state": np.zeros((1, 3), np.float32)}, "next_observations": {"state": np.zeros((1, 3),
       np.float32)}, "actions": np.zeros(2, np.float32), "rewards": 0.0, "masks": 1.0, "dones": False}
report = {"refused": []}
for wrong in (0, -1, float("nan")):
    try:
        state_agent.pace(wrong)
    except ValueError as error:
        report["refused"].append(str(error))


def waits(buffer, **kwargs):
    # whether a draw from `buffer` waits (it is given 2 s); the waiting draw goes on in its thread
    drawn = threading.Event()
    threading.Thread(target=lambda: (buffer.sample(2, **kwargs), drawn.set()), daemon=True).start()
    return not drawn.wait(2.0), drawn


state_agent.pace(2)
online = state_agent.StateReplayBufferDataStore(space, actions, 100)
demo = state_agent.StateReplayBufferDataStore(space, actions, 100)
for _ in range(3):
    online.insert(one)
    demo.insert(one)
for _ in range(6):  # 2 batches for each of 3 transitions
    online.sample(4, pack_obs_and_next_obs=True)
report["seventh_waits"], drawn = waits(online)
online.insert(one)  # the actors send a transition: the waiting draw goes on
report["then_drawn"] = drawn.wait(10.0)
report["eighth_at_once"] = not waits(online)[0]
report["ninth_waits"] = waits(online)[0]
report["download_waits"] = waits(online, indx=np.arange(2))[0]
report["demo_waits"] = any(waits(demo)[0] for _ in range(20))
state_agent.pace(None)
unpaced = state_agent.StateReplayBufferDataStore(space, actions, 100)
unpaced.insert(one)
report["unpaced_waits"] = any(waits(unpaced)[0] for _ in range(10))
print("@@ " + json.dumps(report), flush=True)
"""


@hil_serl.may_build
def test_the_online_buffer_gives_the_learner_at_most_its_pace_and_the_demo_buffer_never_waits():
    report = hil_serl.check(CHECK, timeout=300)
    assert len(report["refused"]) == 3 and all("a positive number" in r for r in report["refused"]), report
    assert report["seventh_waits"] and report["then_drawn"], report
    assert report["eighth_at_once"] and report["ninth_waits"], report  # 4 transitions: 8 batches, the ninth waits
    assert not report["download_waits"] and not report["demo_waits"] and not report["unpaced_waits"], report
