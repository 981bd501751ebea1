"""HCCL's rank table (``RANK_TABLE_FILE``), versions 1.0 and 1.2, parsed and checked once.

Format (CANN HCCL user guide, "rank table配置资源信息"): a JSON object with ``status`` ("completed"
when usable, "initializing" when not), ``version`` ("1.0"; "1.2" for Atlas A3 super-pod networks),
``server_count`` (a string) and ``server_list``: per AI server a ``server_id`` (unique, under 64
characters), in 1.2 a ``host_ip``, and ``device``: per NPU ``device_id`` (the physical id, as in
``/dev/davinci<id>``), ``device_ip`` (the NPU's own NIC address, unique in the cluster), ``rank_id``
(unique, counted from 0) and in 1.2 ``super_device_id``; 1.2 adds ``super_pod_list``. All numbers
are JSON strings. :func:`parse` returns the table and every problem found, worded for a user.
"""
from __future__ import annotations

import ipaddress
import json
from dataclasses import dataclass, field
from typing import Optional

VERSIONS = ("1.0", "1.2")


@dataclass(frozen=True)
class Device:
    device_id: int
    device_ip: str
    rank_id: int


@dataclass(frozen=True)
class Server:
    server_id: str
    devices: tuple[Device, ...]
    host_ip: Optional[str] = None


@dataclass(frozen=True)
class RankTable:
    version: str
    status: str
    servers: tuple[Server, ...]
    problems: tuple[str, ...] = field(default=())

    @property
    def world_size(self) -> int:
        return sum(len(s.devices) for s in self.servers)

    def server_of_rank(self, rank: int) -> Optional[Server]:
        return next((s for s in self.servers if any(d.rank_id == rank for d in s.devices)), None)


def _int(value, what: str, problems: list) -> Optional[int]:
    try:
        number = int(str(value).strip())
    except (TypeError, ValueError):
        problems.append(f"{what} {value!r} is not a number")
        return None
    if number < 0:
        problems.append(f"{what} {number} is negative")
        return None
    return number


def _ip(value, what: str, problems: list) -> Optional[str]:
    try:
        return str(ipaddress.ip_address(str(value).strip()))
    except ValueError:
        problems.append(f"{what} {value!r} is not an IPv4 or IPv6 address")
        return None


def _server(entry, index: int, problems: list) -> Optional[Server]:
    if not isinstance(entry, dict):
        problems.append(f"server_list[{index}] is not an object")
        return None
    sid = str(entry.get("server_id", "")).strip()
    if not sid:
        problems.append(f"server_list[{index}] has no server_id")
    elif len(sid) > 64:
        problems.append(f"server_id {sid[:20]!r}... is longer than 64 characters")
    host_ip = _ip(entry["host_ip"], f"server {sid} host_ip", problems) if "host_ip" in entry else None
    raw = entry.get("device")
    if not isinstance(raw, list) or not raw:
        problems.append(f"server {sid or index} has no device list")
        return Server(sid, (), host_ip)
    devices = []
    for k, dev in enumerate(raw):
        where = f"server {sid or index} device[{k}]"
        if not isinstance(dev, dict):
            problems.append(f"{where} is not an object")
            continue
        missing = [key for key in ("device_id", "device_ip", "rank_id") if key not in dev]
        if missing:
            problems.append(f"{where} lacks {', '.join(missing)}")
            continue
        did = _int(dev["device_id"], f"{where} device_id", problems)
        rid = _int(dev["rank_id"], f"{where} rank_id", problems)
        dip = _ip(dev["device_ip"], f"{where} device_ip", problems)
        if None not in (did, rid, dip):
            devices.append(Device(did, dip, rid))
    return Server(sid, tuple(devices), host_ip)


def _cross_checks(servers: list, declared_count, problems: list) -> None:
    count = _int(declared_count, "server_count", problems) if declared_count is not None else None
    if declared_count is None:
        problems.append("server_count is missing")
    elif count is not None and count != len(servers):
        problems.append(f"server_count is {count} but server_list has {len(servers)} server(s)")
    seen_ids, seen_ips, seen_ranks = {}, {}, {}
    for s in servers:
        if s.server_id in seen_ids:
            problems.append(f"server_id {s.server_id} appears twice")
        seen_ids[s.server_id] = s
        local = set()
        for d in s.devices:
            if d.device_id in local:
                problems.append(f"server {s.server_id} lists device_id {d.device_id} twice")
            local.add(d.device_id)
            if d.device_ip in seen_ips:
                problems.append(f"device_ip {d.device_ip} is used by server {seen_ips[d.device_ip]} and "
                                f"server {s.server_id}")
            seen_ips[d.device_ip] = s.server_id
            if d.rank_id in seen_ranks:
                problems.append(f"rank_id {d.rank_id} is given to server {seen_ranks[d.rank_id]} and "
                                f"server {s.server_id}")
            seen_ranks[d.rank_id] = s.server_id
    expected = set(range(len(seen_ranks)))
    if seen_ranks and set(seen_ranks) != expected:
        gaps = sorted(expected - set(seen_ranks))
        problems.append(f"rank_id values must be 0..{len(seen_ranks) - 1} without gaps"
                        + (f" (missing {', '.join(map(str, gaps[:8]))})" if gaps else ""))


def parse(text: str) -> RankTable:
    """The rank table in ``text`` with ``problems`` listing everything HCCL would reject (empty: valid)."""
    problems: list[str] = []
    try:
        data = json.loads(text)
    except ValueError as exc:
        return RankTable("", "", (), (f"not valid JSON ({exc})",))
    if not isinstance(data, dict):
        return RankTable("", "", (), ("the top level is not a JSON object",))
    version = str(data.get("version", ""))
    if version not in VERSIONS:
        problems.append(f"version {version!r} is not one HCCL reads ({', '.join(VERSIONS)})" if version
                        else "version is missing")
    status = str(data.get("status", ""))
    if status != "completed":
        problems.append(f"status is {status!r}: HCCL uses a rank table only when it is 'completed'" if status
                        else "status is missing (it must be 'completed')")
    raw = data.get("server_list")
    if not isinstance(raw, list) or not raw:
        problems.append("server_list is missing or empty")
        raw = []
    servers = [s for s in (_server(entry, i, problems) for i, entry in enumerate(raw)) if s is not None]
    _cross_checks(servers, data.get("server_count"), problems)
    if version == "1.2" and "super_pod_list" not in data:
        problems.append("version 1.2 (super-pod networking) needs a super_pod_list")
    return RankTable(version, status, tuple(servers), tuple(problems))


def load(path: str) -> RankTable:
    """:func:`parse` of the file at ``path``; OSError when it cannot be read."""
    with open(path, encoding="utf-8") as fh:
        return parse(fh.read())
