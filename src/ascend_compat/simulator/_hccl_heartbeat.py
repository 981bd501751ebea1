"""The simulated HCCL's heartbeat: how ranks learn which peer died and which is stuck.

HCCL keeps maintenance links between ranks: a rank that sends no heartbeat for 30 s is "Heartbeat
Lost" (the process exited), one whose collectives stop advancing is "Stuck" (checked every third of
``HCCL_EXEC_TIMEOUT``), and every rank names them when its own collective times out (HCCL user guide,
"定位思路"). Here one thread per process (ending with the main thread) publishes, about twice a second, each communicator's
state to its store: ``hb/<rank>`` = ``"<time> <seq> <in|out> <address>/<device>"`` (the collective it
last entered and whether it is inside it). A peer is lost when its entry is older than
:func:`lost_after` (HCCL's 30 s, shortened to half the collective timeout so that rehearsals with short
timeouts still tell a dead rank from a stuck one), stuck when it is fresh but behind.
"""
from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass
from typing import Optional

INTERVAL = 0.5
_comms: "weakref.WeakSet" = weakref.WeakSet()
_lock = threading.Lock()
_thread: Optional[threading.Thread] = None
_stop = threading.Event()


@dataclass(frozen=True)
class Peer:
    rank: int
    time: float
    seq: int
    inside: bool
    location: str  # "<address>/<device>"


def lost_after(limit: float) -> float:
    """Seconds without a heartbeat after which a peer counts as lost, for a collective time limit ``limit``."""
    return min(30.0, max(2.0, limit / 2))


def register(comm) -> None:
    """Publish ``comm``'s state (``comm.heartbeat()`` -> the ``hb/<rank>`` value) until it is collected."""
    global _thread
    with _lock:
        _comms.add(comm)
        if _thread is None or not _thread.is_alive():
            _stop.clear()
            # not a daemon: a daemon thread caught inside a store call while the interpreter shuts down is
            # ended in C++ code (std::terminate, SIGABRT); this one stops by itself once the main thread ends
            _thread = threading.Thread(target=_loop, name="hccl-sim-heartbeat", daemon=False)
            _thread.start()


def stop() -> None:
    """End the heartbeat thread."""
    _stop.set()
    thread = _thread
    if thread is not None and thread is not threading.current_thread():
        thread.join(timeout=5)


def _loop() -> None:
    main = threading.main_thread()
    while not _stop.is_set() and main.is_alive():
        for comm in list(_comms):
            comm.publish()
        _stop.wait(INTERVAL)


def read(store, rank: int) -> Optional[Peer]:
    """The last heartbeat of ``rank`` in ``store``, None when there is none (or the store is gone)."""
    key = f"hb/{rank}"
    try:
        if not store.check([key]):
            return None
        t, seq, state, location = store.get(key).decode().split(" ", 3)
        return Peer(rank, float(t), int(seq), state == "in", location)
    except Exception:  # the store went away with its host: nothing more can be learnt
        return None
