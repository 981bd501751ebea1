"""The simulated HCCL's heartbeat: how ranks learn which peer died and which is stuck.

HCCL keeps maintenance links between ranks: a rank that sends no heartbeat for 30 s is "Heartbeat
Lost" (the process exited), one whose collectives stop advancing is "Stuck" (checked every third of
``HCCL_EXEC_TIMEOUT``), and every rank names them when its own collective times out (HCCL user guide,
"定位思路"). Here one daemon thread per process publishes, about twice a second, each communicator's
state to its store: ``hb/<rank>`` = ``"<time> <seq> <in|out> <address>/<device>"`` (the collective it
last entered and whether it is inside it). A peer is lost when its entry is older than
:func:`lost_after` (HCCL's 30 s, shortened to half the collective timeout so that rehearsals with short
timeouts still tell a dead rank from a stuck one), stuck when it is fresh but behind.
"""
from __future__ import annotations

import threading
import time
import weakref
from dataclasses import dataclass
from typing import Optional

INTERVAL = 0.5
_comms: "weakref.WeakSet" = weakref.WeakSet()
_lock = threading.Lock()
_thread: Optional[threading.Thread] = None


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
            _thread = threading.Thread(target=_loop, name="hccl-sim-heartbeat", daemon=True)
            _thread.start()


def _loop() -> None:
    while True:
        for comm in list(_comms):
            comm.publish()
        time.sleep(INTERVAL)


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
