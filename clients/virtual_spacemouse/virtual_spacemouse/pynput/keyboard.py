"""A stand-in for `pynput.keyboard` whose listeners hear the key presses posted to the simulation's server
(`POST /keys`, from the teleop page or a script) instead of the machine's keyboard, which a remote or
headless host does not have.

`from pynput import keyboard` gives this module when `FRANKA_SIM_KEYS=1` (virtual_spacemouse_hook). What
HIL-SERL's scripts use behaves as pynput's: `keyboard.Listener(on_press=..., on_release=...)` (a daemon
thread: `start()`, `stop()`, `join()`, `wait()`, `running`, a context manager; a callback returning False
or raising `Listener.StopException` stops it, another exception stops it and is raised again by `join()`),
`keyboard.Key` (an Enum: `key == keyboard.Key.esc`, `str(key) == "Key.f1"`) and `keyboard.KeyCode`
(`str(KeyCode.from_char("a")) == "'a'"`). Each posted key is one press followed by its release.

A listener hears the keys posted after it started (`GET /keys` long poll on the server's sequence number),
from `$FRANKA_SIM_URL`'s server.
"""

from __future__ import annotations

import enum
import threading

from ..server import Server, ServerUnavailable, server_url, warn

__all__ = ["Key", "KeyCode", "Listener"]

POLL_S = 1.0  # [s] long-poll timeout of GET /keys (a stop() is noticed within it)
RETRY_S = (0.05, 1.0)  # [s] first and longest wait between attempts to reach an unreachable server


class KeyCode:
    """A key by its character (`char`) or virtual key code (`vk`), as pynput's."""

    def __init__(self, vk: int | None = None, char: str | None = None, is_dead: bool = False, **kwargs) -> None:
        self.vk = vk
        self.char = char
        self.is_dead = is_dead
        self.combining = None
        self._kwargs = kwargs

    def __repr__(self) -> str:
        if self.is_dead:
            return f"[{self.char!r}]"
        if self.char is not None:
            return repr(self.char)
        return f"<{self.vk}>"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, KeyCode):
            return False
        if self.char is not None and other.char is not None:
            return self.char == other.char and self.is_dead == other.is_dead
        return self.vk == other.vk

    def __hash__(self) -> int:
        return hash(repr(self))

    @classmethod
    def from_vk(cls, vk: int, **kwargs) -> KeyCode:
        return cls(vk=vk, **kwargs)

    @classmethod
    def from_char(cls, char: str, **kwargs) -> KeyCode:
        return cls(char=char, **kwargs)

    @classmethod
    def from_dead(cls, char: str, **kwargs) -> KeyCode:
        return cls(char=char, is_dead=True, **kwargs)


# pynput's Key names; franka_server_ros2/teleop.py accepts the same (tests/test_virtual_spacemouse.py checks)
KEY_NAMES = (
    "alt", "alt_l", "alt_r", "alt_gr", "backspace", "caps_lock", "cmd", "cmd_l", "cmd_r", "ctrl", "ctrl_l",
    "ctrl_r", "delete", "down", "end", "enter", "esc", "home", "left", "page_down", "page_up", "right",
    "shift", "shift_l", "shift_r", "space", "tab", "up", "media_play_pause", "media_volume_mute",
    "media_volume_down", "media_volume_up", "media_previous", "media_next", "insert", "menu", "num_lock",
    "pause", "print_screen", "scroll_lock",
    *(f"f{i}" for i in range(1, 21)),
)  # fmt: skip

# Each member's value is a KeyCode with a code of its own (not the platform's: no keyboard is read), so that
# no two names are aliases of one member and str(Key.alt_l) is "Key.alt_l".
Key = enum.Enum("Key", [(name, KeyCode.from_vk(0x10000 + i)) for i, name in enumerate(KEY_NAMES)], module=__name__)
Key.__doc__ = "The special keys, as pynput.keyboard.Key."


def key_from_name(name: str) -> Key | KeyCode | None:
    """A key of GET /keys ("esc", "f1", "a", ...) as pynput reports it; None if it is neither."""
    if name in Key.__members__:
        return Key[name]
    if isinstance(name, str) and len(name) == 1:
        return Key.space if name == " " else KeyCode.from_char(name)
    return None


class Listener(threading.Thread):
    """Calls `on_press(key)` and then `on_release(key)` for each key posted to the server after `start()`."""

    class StopException(Exception):
        """Raised by a callback to stop the listener."""

    def __init__(self, on_press=None, on_release=None, suppress: bool = False, **kwargs) -> None:
        super().__init__(name="virtual-keyboard-listener", daemon=True)
        self.on_press = on_press
        self.on_release = on_release
        self.suppress = suppress  # nothing to suppress: no real keyboard is read
        self.url = kwargs.pop("url", None) or server_url()
        self._stopped = threading.Event()
        self._ready = threading.Event()
        self._running = False
        self._error: BaseException | None = None

    @property
    def running(self) -> bool:
        return self._running

    def stop(self) -> None:
        """Stops the listener (within POLL_S: the pending long poll ends); callable from any thread."""
        self._running = False
        self._stopped.set()

    def wait(self) -> None:
        """Until the listener has asked the server where its key sequence stands (or could not reach it)."""
        self._ready.wait()

    def __enter__(self) -> Listener:
        self.start()
        self.wait()
        return self

    def __exit__(self, exc_type, value, traceback) -> None:
        self.stop()
        self.join()

    def join(self, timeout: float | None = None) -> None:
        super().join(timeout)
        if self._error is not None and not self.is_alive():
            error, self._error = self._error, None
            raise error

    def _call(self, callback, key) -> bool:
        """Runs a callback; False once the listener must stop."""
        if callback is None:
            return True
        try:
            return callback(key) is not False
        except Listener.StopException:
            return False
        except BaseException as exc:  # pynput: stops, and join() raises it again
            self._error = exc
            return False

    def run(self) -> None:
        self._running = True
        server = Server(self.url)
        after: int | None = None
        backoff = RETRY_S[0]
        reachable = True
        try:
            while not self._stopped.is_set():
                try:
                    if after is None:  # where the key sequence stands: only keys posted from now on count
                        after = int(server.keys(0, 0.0)["seq"])
                        self._ready.set()
                        continue
                    answer = server.keys(after, POLL_S)
                except (ServerUnavailable, KeyError, TypeError, ValueError) as exc:
                    if reachable:
                        warn(f"no keys from {self.url} ({exc}); retrying")
                    reachable = False
                    self._ready.set()
                    self._stopped.wait(backoff)
                    backoff = min(backoff * 2, RETRY_S[1])
                    continue
                reachable, backoff = True, RETRY_S[0]
                if int(answer.get("seq", after)) < after:  # a restarted server counts from 0 again
                    after = int(answer["seq"])
                for event in answer.get("events", []):
                    after = max(after, int(event.get("seq", after)))
                    key = key_from_name(event.get("key"))
                    if key is None or self._stopped.is_set():
                        continue
                    if not self._call(self.on_press, key) or not self._call(self.on_release, key):
                        self.stop()
                        break
                after = max(after, int(answer.get("seq", after)))
        finally:
            self._running = False
            self._ready.set()
            server.close()
