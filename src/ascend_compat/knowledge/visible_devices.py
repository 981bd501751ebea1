"""How ``CUDA_VISIBLE_DEVICES`` and ``ASCEND_RT_VISIBLE_DEVICES`` are read: the one parser of each.

* ``ASCEND_RT_VISIBLE_DEVICES``, as torch_npu reads it (``torch_npu/npu/__init__.py``:
  ``_parse_visible_devices`` and ``_device_count_ascend_hal``): reading stops at the first character
  that is neither a digit nor a comma (``"0, 1"`` is device 0 only), an empty element ends the list,
  the ids must be strictly ascending (otherwise no device is visible) and the list is cut at the
  first id the node does not have. Unset: every device.
* ``CUDA_VISIBLE_DEVICES``, as CUDA reads it (torch mirrors the driver in
  ``torch.cuda._parse_visible_devices``): elements are stripped and read like ``strtoul``
  (``"1gpu"`` is 1); a negative or invalid element hides the devices from there on (``"-1"``: no
  device); a repeated id makes the whole set empty; ``GPU-``/``MIG-`` UUIDs name devices by UUID.
* :func:`to_ascend`: the ``ASCEND_RT_VISIBLE_DEVICES`` value that shows the NPUs CUDA would show
  (sorted ascending, as torch_npu requires; UUIDs match no NPU, so none).

Readers: the shim's environment translation, the simulator's device count, doctor.
"""
from __future__ import annotations

from typing import List, NamedTuple, Optional, Union

ASCEND = "ASCEND_RT_VISIBLE_DEVICES"
CUDA = "CUDA_VISIBLE_DEVICES"


# ---------------------------------------------------------------------------- ASCEND_RT_VISIBLE_DEVICES
def ascend_read_part(value: str) -> str:
    """The leading part of ``value`` torch_npu reads: digits and commas up to the first other character."""
    end = 0
    while end < len(value) and (value[end].isdigit() and value[end].isascii() or value[end] == ","):
        end += 1
    return value[:end]


def ascend_ids(value: Optional[str]) -> Optional[List[int]]:
    """Device ids an ``ASCEND_RT_VISIBLE_DEVICES`` value lists, as torch_npu parses it; None when unset
    (every device). An empty element ends the list: ``"0,,1"`` is ``[0]``."""
    if value is None:
        return None
    ids: List[int] = []
    read = ascend_read_part(value)
    if not read:
        return ids
    for elem in read.split(","):
        if not elem:
            break
        ids.append(int(elem))
    return ids


def ascend_count(value: Optional[str], physical: int) -> int:
    """How many NPUs a process sees on a node with ``physical`` of them: ``physical`` when unset; 0 when
    the ids are not strictly ascending; otherwise the ids before the first one the node does not have."""
    ids = ascend_ids(value)
    if ids is None:
        return physical
    for pos, dev in enumerate(ids):
        if pos > 0 and dev <= ids[pos - 1]:
            return 0
        if dev >= physical:
            return pos
    return len(ids)


# ---------------------------------------------------------------------------- CUDA_VISIBLE_DEVICES
def _strtoul(text: str) -> int:
    """The integer ``text`` starts with (an optional sign, then digits), else -1."""
    end = 0
    while end < len(text) and (text[end].isdigit() and text[end].isascii() or end == 0 and text[end] in "+-"):
        end += 1
    try:
        return int(text[:end]) if end else -1
    except ValueError:  # a lone sign
        return -1


def cuda_ids(value: Optional[str]) -> Optional[Union[List[int], List[str]]]:
    """Device ids a ``CUDA_VISIBLE_DEVICES`` value shows, as CUDA reads it: ints, or ``GPU-``/``MIG-``
    UUID strings; None when unset (every device); ``[]`` when it hides every device."""
    return None if value is None else _cuda_parse(value)[0]


def _cuda_parse(value: str):
    """(ids, True when a repeated id emptied the set)."""
    for prefix in ("GPU-", "MIG-"):
        if value.startswith(prefix):
            uuids: List[str] = []
            for elem in value.split(","):
                if elem in uuids:
                    return [], True
                if not elem.startswith(prefix):
                    break
                uuids.append(elem)
            return uuids, False
    ids: List[int] = []
    for elem in value.split(","):
        x = _strtoul(elem.strip())
        if x in ids:  # a repeated id: no device at all
            return [], True
        if x < 0:  # a negative or invalid id hides the devices from here on
            break
        ids.append(x)
    return ids, False


class Translation(NamedTuple):
    """``ASCEND_RT_VISIBLE_DEVICES`` for a ``CUDA_VISIBLE_DEVICES`` value, and a note when the NPUs shown
    differ from what the value asks for on CUDA (None when they do not)."""

    value: str
    note: Optional[str]


def to_ascend(value: str) -> Translation:
    """The ``ASCEND_RT_VISIBLE_DEVICES`` value showing the NPUs ``CUDA_VISIBLE_DEVICES=value`` shows on CUDA.

    ``"3,1"`` -> ``"1,3"`` (torch_npu needs ascending ids; the note says logical device 0 changes);
    ``"-1"``, ``""`` -> ``""`` (no NPU, as CUDA shows no GPU); ``"0,-1,1"`` -> ``"0"``; ``"0,0"`` -> ``""``
    (with a note); UUIDs -> ``""`` with a note (no NPU has a GPU's UUID).
    """
    ids, repeated = _cuda_parse(value)
    if ids and isinstance(ids[0], str):
        return Translation("", f"{CUDA}={value!r} names GPUs by UUID, which no NPU has, so no NPU is visible "
                               f"(as CUDA shows no device for unknown UUIDs); set {ASCEND} to NPU ids, e.g. "
                               f"{ASCEND}=0,1")
    if repeated:
        return Translation("", f"{CUDA}={value!r} lists a device twice, which CUDA reads as no device at all, "
                               f"so no NPU is visible ({ASCEND}=''); list each device once")
    numbers = [int(i) for i in ids]
    ordered = sorted(numbers)
    joined = ",".join(map(str, ordered))
    if ordered != numbers:
        return Translation(joined, f"{CUDA}={value!r} is not ascending; torch_npu requires ascending ids, so "
                                   f"{ASCEND}={joined} is used (logical device order changes)")
    return Translation(joined, None)
