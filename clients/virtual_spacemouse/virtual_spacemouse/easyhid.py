"""A stand-in for `easyhid` (the hidapi binding HIL-SERL's pyspacemouse uses) that finds one SpaceMouse
Wireless per simulated server and reads its state from the server (`GET /spacemouse`).

`import easyhid` gives this module when `FRANKA_SIM_SPACEMOUSE=1` (virtual_spacemouse_hook). The API is
easyhid's: `Enumeration(vid=0, pid=0)` with `.device_list`, `.find(...)`, `.show()`; `HIDDevice` with
`path`, `vendor_id`, `product_id`, `release_number`, `manufacturer_string`, `product_string`,
`serial_number`, `usage_page`, `usage`, `interface_number`, `open()`, `close()`, `read(size, timeout)`,
`write()`, `set_nonblocking()`, `is_open()`, `is_connected()`, `description()`; `HIDException`.

An open device reads the server's state in a thread (started by `open()`, and again by the first `read`
in a forked process: HIL-SERL's SpaceMouseExpert opens the device in its main process and reads it in a
forked one, where the opener's threads do not exist). Each new state becomes the device's reports
(report.py): a motion report while the cap is deflected or when it comes to rest, a button report when
the buttons change, queued as the device's driver queues them (the oldest dropped beyond
`QUEUE_LENGTH`). The server's state goes to rest when nobody posts for 0.5 s; an unreachable server
reads as a SpaceMouse at rest too (never a stale motion).
"""

from __future__ import annotations

import os
import threading
from collections import deque

from . import report
from .server import Server, ServerUnavailable, device_urls, warn

__all__ = ["Enumeration", "HIDDevice", "HIDException"]

POLL_S = 0.25  # [s] long-poll timeout of GET /spacemouse: how soon a state gone to rest is seen
IDLE_WAIT_S = 0.01  # [s] a non-blocking read with no report waits this long for one (see read())
QUEUE_LENGTH = 32  # reports kept for a reader that falls behind
RETRY_S = (0.05, 1.0)  # [s] first and longest wait between attempts to reach an unreachable server


class HIDException(Exception):
    """As easyhid's: opening or reading a device failed."""


class _Reader:
    """The reports of one open device in one process: a thread turning the server's states into reports."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.changed = threading.Condition()
        self.reports: deque[bytes] = deque(maxlen=QUEUE_LENGTH)
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, name=f"virtual-spacemouse {url}", daemon=True)
        self.thread.start()

    def _queue(self, *reports: bytes) -> None:
        with self.changed:
            self.reports.extend(reports)
            self.changed.notify_all()

    def _run(self) -> None:
        server = Server(self.url)
        axes: list[float] = [0.0] * 6
        buttons: list[int] = [0, 0]
        seq: int | None = None
        backoff = RETRY_S[0]
        reachable = True
        while not self.stopped.is_set():
            try:
                state = server.spacemouse(seq, POLL_S if seq is not None else 0.0)
                new_axes = [float(v) for v in state["axes"]]
                new_buttons = [1 if v else 0 for v in state["buttons"]]
                seq = int(state["seq"])  # (a restarted server counts from 0 again: follow it down too)
                if not reachable:
                    warn(f"{self.url} answers again")
                reachable, backoff = True, RETRY_S[0]
            except (ServerUnavailable, KeyError, TypeError, ValueError) as exc:
                if reachable:
                    warn(f"no SpaceMouse state from {self.url} ({exc}); the device reads at rest until it answers")
                reachable, seq = False, None
                new_axes, new_buttons = [0.0] * 6, [0, 0]
                self.stopped.wait(backoff)
                backoff = min(backoff * 2, RETRY_S[1])
            out = []
            if new_axes != axes or any(new_axes):  # streams while deflected, one report on coming to rest
                out.append(report.motion_report(new_axes))
            if new_buttons != buttons:
                out.append(report.button_report(new_buttons))
            if out and not self.stopped.is_set():
                self._queue(*out)
            axes, buttons = new_axes, new_buttons
        server.close()

    def next_report(self, wait: float | None) -> bytes | None:
        """The oldest queued report, waiting up to `wait` s (None: until one comes)."""
        with self.changed:
            self.changed.wait_for(lambda: self.reports or self.stopped.is_set(), wait)
            return self.reports.popleft() if self.reports else None

    def stop(self) -> None:
        self.stopped.set()
        with self.changed:
            self.changed.notify_all()


class HIDDevice:
    """A SpaceMouse Wireless whose cap is moved through the server at `url`."""

    def __init__(self, url: str, index: int = 0) -> None:
        self.url = url
        self.path = f"virtual-spacemouse:{url}"
        self.vendor_id = report.VENDOR_ID
        self.product_id = report.PRODUCT_ID
        self.release_number = 0x0100
        self.manufacturer_string = report.MANUFACTURER
        self.product_string = report.PRODUCT
        self.serial_number = f"SIM{index}"
        self.usage_page = report.USAGE_PAGE
        self.usage = report.USAGE
        self.interface_number = 0
        self._is_open = False
        self._nonblocking = False
        self._reader: _Reader | None = None
        self._lock = threading.Lock()
        self._pid = os.getpid()

    def __del__(self) -> None:
        try:
            self.close()  # as easyhid's: a device let go of is closed (its reader thread ends)
        except Exception:
            pass

    def __enter__(self):
        self.open()
        return self

    def __exit__(self, err_type, err_value, traceback) -> None:
        self.close()

    def open(self) -> None:
        if self._is_open:
            raise HIDException("Failed to open device: HIDDevice already open")
        self._is_open = True
        self._current_reader()  # reports queue from now on, as a real device's do once it is open

    def _forked(self) -> None:
        """In a process forked after this device was used: its reader thread stayed in the parent, and its
        locks may have been copied held; start afresh."""
        if self._pid != os.getpid():
            self._pid, self._lock, self._reader = os.getpid(), threading.Lock(), None

    def close(self) -> None:
        if self._is_open:
            self._is_open = False
            self._forked()
            with self._lock:
                if self._reader is not None:
                    self._reader.stop()
                    self._reader = None

    def is_open(self) -> bool:
        return self._is_open

    def is_connected(self) -> bool:
        return True

    def set_nonblocking(self, enable_nonblocking: bool) -> None:
        if not self._is_open:
            raise HIDException("HIDDevice not open")
        if type(enable_nonblocking) is not bool:
            raise TypeError
        self._nonblocking = enable_nonblocking

    def _current_reader(self) -> _Reader:
        self._forked()
        with self._lock:
            if self._reader is None:
                self._reader = _Reader(self.url)
            return self._reader

    def read(self, size: int = 64, timeout: int | None = None) -> bytearray | None:
        """The next report, padded with zeros to `size` bytes (cut to it if longer), or None if none came:
        `timeout` in ms (None: until one comes when blocking). A non-blocking read with nothing queued
        waits up to IDLE_WAIT_S for a report rather than returning at once, so that SpaceMouseExpert's
        reading loop does not take a whole CPU core (a real device's returns at once)."""
        if not self._is_open:
            raise HIDException("HIDDevice not open")
        if timeout is not None and timeout >= 0:
            wait = timeout / 1000.0
        else:
            wait = IDLE_WAIT_S if self._nonblocking else None
        data = self._current_reader().next_report(wait)
        if data is None:
            return None
        return bytearray(data[:size]) + bytearray(max(0, size - len(data)))

    def write(self, data, report_id: int = 0) -> int:
        """Output reports (a SpaceMouse's LED) are accepted and ignored."""
        if not self._is_open:
            raise HIDException("HIDDevice not open")
        return len(bytes(data)) + 1

    def get_error(self) -> None:
        return None

    def get_manufacture_string(self) -> str:
        return self.manufacturer_string

    def get_product_string(self) -> str:
        return self.product_string

    def get_serial_number(self) -> str:
        return self.serial_number

    def get_indexed_string(self, index: int) -> None:
        return None

    def description(self) -> str:
        return (
            f"HIDDevice:\n    {self.path} | {self.vendor_id:x}:{self.product_id:x} | {self.manufacturer_string} | "
            f"{self.product_string} | {self.serial_number}\n    release_number: {self.release_number}\n"
            f"    usage_page: {self.usage_page}\n    usage: {self.usage}\n    interface_number: {self.interface_number}"
        )

    def __repr__(self) -> str:
        return f"<virtual HIDDevice {self.vendor_id:04x}:{self.product_id:04x} {self.url}>"


class Enumeration:
    """The connected devices: one SpaceMouse per server of `device_urls()`."""

    def __init__(self, vid: int = 0, pid: int = 0) -> None:
        devices = [HIDDevice(url, i) for i, url in enumerate(device_urls())]
        self.device_list = [d for d in devices if vid in (0, None, d.vendor_id) and pid in (0, None, d.product_id)]

    def show(self) -> None:
        for dev in self.device_list:
            print(dev.description())

    def find(
        self,
        vid=None,
        pid=None,
        serial=None,
        interface=None,
        path=None,
        release_number=None,
        manufacturer=None,
        product=None,
        usage=None,
        usage_page=None,
    ) -> list[HIDDevice]:
        """The devices matching every filter given (as easyhid: 0 or None matches any vid/pid)."""
        result = []
        for dev in self.device_list:
            if vid not in (0, None) and dev.vendor_id != vid:
                continue
            if pid not in (0, None) and dev.product_id != pid:
                continue
            if serial and dev.serial_number != serial:
                continue
            if path and dev.path != path:
                continue
            if manufacturer and dev.manufacturer_string != manufacturer:
                continue
            if product and dev.product_string != product:
                continue
            if release_number is not None and dev.release_number != release_number:
                continue
            if interface is not None and dev.interface_number != interface:
                continue
            if usage is not None and dev.usage != usage:
                continue
            if usage_page is not None and dev.usage_page != usage_page:
                continue
            result.append(dev)
        return result
