"""``ascend-compat doctor --cluster``: a multi-node job's set-up, checked before launch from one machine.

Inputs: the rank table (``RANK_TABLE_FILE`` format, :mod:`ascend_compat.knowledge.rank_table`), each
node's environment (this machine's, or ``env`` dumps saved on the nodes), each node's versions (the
``versions`` of ``ascend-compat doctor --format json`` run there), the job's world size, processes per
node and expected step time. Output: one :class:`Check` per problem, with its fix:

* the rank table itself, and against the world size, the nodes and the devices each node will see;
* each node's HCCL variables (:mod:`ascend_compat.knowledge.hccl_env`: what torch_npu and HCCL do with them);
* addresses and interfaces: the rendezvous (``MASTER_ADDR``/``MASTER_PORT``, ``WORLD_SIZE``) equal on every
  node, ``HCCL_IF_IP`` unique per node, on the nodes' common network and the node's own address in the
  rank table, ``HCCL_SOCKET_IFNAME`` alike;
* timeouts against the step time, and equal on every node;
* the version matrix: torch, torch_npu, CANN, driver and Python equal on every node.
"""
from __future__ import annotations

import ipaddress
import os
from collections import Counter
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional

from ascend_compat.doctor.environment import Check, Status
from ascend_compat.knowledge import hccl_env, rank_table

OK, WARN, FAIL, INFO = Status.OK, Status.WARN, Status.FAIL, Status.INFO
_SEVERITY = {hccl_env.ERROR: FAIL, hccl_env.WARNING: WARN, hccl_env.INFO: INFO}
#: versions compared across nodes (keys of ``doctor --format json``'s ``versions``)
VERSION_KEYS = ("python", "torch", "torch_npu", "cann", "driver")


@dataclass
class Node:
    name: str
    env: Mapping[str, str]
    versions: Optional[Dict[str, Optional[str]]] = None
    source: str = "this machine"
    hccl: hccl_env.HcclEnv = field(init=False)

    def __post_init__(self) -> None:
        self.hccl = hccl_env.read(self.env)


def _int(value: Optional[str]) -> Optional[int]:
    value = (value or "").strip()
    return int(value) if value.isdigit() else None


def _visible(value: Optional[str]) -> Optional[List[int]]:
    """The device ids torch_npu reads from ``ASCEND_RT_VISIBLE_DEVICES`` (None: unset = all)."""
    from ascend_compat.knowledge.visible_devices import ascend_ids  # the one parser, as torch_npu reads it

    return ascend_ids(value)


def _servers_of(nodes: List[Node], table: rank_table.RankTable) -> Dict[str, Optional[rank_table.Server]]:
    """Which rank-table server each node is: by HCCL_IF_IP (host_ip or an address server_id), by name,
    by NODE_RANK, else by order."""
    out: Dict[str, Optional[rank_table.Server]] = {}
    for i, node in enumerate(nodes):
        ip, match = node.hccl.if_ip, None
        for s in table.servers:
            if ip and (s.host_ip == ip or s.server_id == ip) or s.server_id == node.name:
                match = s
        rank = _int(node.env.get("NODE_RANK") or node.env.get("GROUP_RANK"))
        if match is None and rank is not None and rank < len(table.servers):
            match = table.servers[rank]
        if match is None and i < len(table.servers) and not ip:
            match = table.servers[i]
        out[node.name] = match
    return out


def _is_address(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
        return True
    except ValueError:
        return False


def check_rank_table(path: Optional[str], nodes: List[Node], world: Optional[int], nproc: Optional[int]) -> List[Check]:
    name = "cluster_rank_table"
    if not path:
        return [Check(name, INFO, "no rank table (RANK_TABLE_FILE unset, none given): HCCL builds the communicator "
                                  "through the root rank (MASTER_ADDR)")]
    why = hccl_env.rank_table_usable(path)
    if why is not None:
        return [Check(name, FAIL if why == "does not exist" else WARN,
                      f"{path} {why}: torch_npu ignores it and negotiates through the root rank instead",
                      "point RANK_TABLE_FILE at the rank table file itself (a regular, readable file, not a link)")]
    try:
        table = rank_table.load(path)
    except OSError as exc:
        return [Check(name, FAIL, f"{path}: cannot read it ({exc.strerror})", "make the file readable")]
    out = [Check(name, FAIL, f"{path}: {problem}", "fix the rank table: HCCL refuses it when the job starts (EI0004)")
           for problem in table.problems]
    if world is not None and table.servers and table.world_size != world:
        out.append(Check(name, FAIL, f"{path} lists {table.world_size} rank(s) but the job's WORLD_SIZE is {world}",
                         "list one device entry per rank in the rank table, or launch the job with that world size"))
    if nodes and len(nodes) > 1 and table.servers and len(table.servers) != len(nodes):
        out.append(Check(name, FAIL, f"{path} lists {len(table.servers)} server(s) but {len(nodes)} node(s) were given",
                         "give one server_list entry per node"))
    for s in table.servers:
        if nproc is not None and len(s.devices) != nproc:
            out.append(Check(name, FAIL, f"server {s.server_id} lists {len(s.devices)} device(s) but each node runs "
                                         f"{nproc} process(es)", "list exactly the devices each node's processes use"))
    servers = _servers_of(nodes, table) if table.servers else {}
    for node in nodes:
        server = servers.get(node.name)
        visible = _visible(node.env.get("ASCEND_RT_VISIBLE_DEVICES"))
        if server is None or visible is None:
            continue
        hidden = sorted(d.device_id for d in server.devices if d.device_id not in visible)
        if hidden:
            out.append(Check(name, FAIL, f"node {node.name}: the rank table gives server {server.server_id} device(s) "
                                         f"{hidden}, but ASCEND_RT_VISIBLE_DEVICES={node.env['ASCEND_RT_VISIBLE_DEVICES']}"
                                         " hides them", "make ASCEND_RT_VISIBLE_DEVICES list the rank table's device ids"))
    if not out:
        out.append(Check(name, OK, f"{path}: version {table.version}, {len(table.servers)} server(s), "
                                   f"{table.world_size} rank(s)"))
    return out


def check_nodes(nodes: List[Node]) -> List[Check]:
    out = []
    for node in nodes:
        for p in node.hccl.problems:
            out.append(Check(f"cluster_env[{node.name}]", _SEVERITY[p.severity], f"{node.name}: {p.message}", p.fix))
    return out


def check_addresses(nodes: List[Node], path: Optional[str]) -> List[Check]:
    name = "cluster_addresses"
    out = []
    for var in ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "HCCL_SOCKET_IFNAME", "HCCL_BUFFSIZE"):
        values = {n.name: n.env.get(var) for n in nodes}
        if len(nodes) > 1 and len(set(values.values())) > 1:
            status = FAIL if var in ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "HCCL_BUFFSIZE") else WARN
            shown = ", ".join(f"{k}={v if v is not None else '(unset)'}" for k, v in values.items())
            out.append(Check(name, status, f"{var} differs between nodes: {shown}",
                             f"set the same {var} on every node"))
    ranks = [(n.name, n.env.get("NODE_RANK")) for n in nodes if n.env.get("NODE_RANK") is not None]
    dup = [r for r, c in Counter(r for _, r in ranks).items() if c > 1]
    if dup:
        out.append(Check(name, FAIL, f"NODE_RANK {', '.join(dup)} is set on several nodes",
                         "give each node its own NODE_RANK (0..nodes-1)"))
    ips = {n.name: n.hccl.if_ip for n in nodes if n.hccl.if_ip}
    for ip, count in Counter(ips.values()).items():
        if count > 1:
            who = ", ".join(k for k, v in ips.items() if v == ip)
            out.append(Check(name, FAIL, f"HCCL_IF_IP={ip} is set on {who}: only one node has that address; the "
                                         "others would announce a NIC they do not have", "set HCCL_IF_IP on each node to "
                                         "that node's own host NIC address (ip addr on the node shows it)"))
    if ips and len(ips) < len(nodes):
        unset = ", ".join(n.name for n in nodes if not n.hccl.if_ip)
        out.append(Check(name, WARN, f"HCCL_IF_IP is set on some nodes but not on {unset}: those pick a NIC by name "
                                     "order", "set HCCL_IF_IP (or HCCL_SOCKET_IFNAME) on every node"))
    out.extend(_networks(ips))
    if path and not hccl_env.rank_table_usable(path):
        try:
            table = rank_table.load(path)
        except OSError:
            table = None
        known = {a for s in (table.servers if table else ()) for a in (s.host_ip, s.server_id) if a and _is_address(a)}
        for node, ip in ips.items():
            if known and ip not in known:
                out.append(Check(name, FAIL, f"node {node}: HCCL_IF_IP={ip} is not the address of any server in the "
                                             f"rank table ({', '.join(sorted(known))})",
                                 "set HCCL_IF_IP to the node's address as the rank table lists it, or fix the table"))
    if not out:
        out.append(Check(name, OK, "rendezvous, NIC addresses and interfaces agree across "
                                   f"{len(nodes)} node(s)" + (f" (HCCL_IF_IP: {', '.join(ips.values())})" if ips else "")))
    return out


def _networks(ips: Dict[str, str]) -> List[Check]:
    """A node whose HCCL_IF_IP is outside the /24 (IPv4) all the others share."""
    nets = {}
    for node, ip in ips.items():
        addr = ipaddress.ip_address(ip)
        nets[node] = ipaddress.ip_network(f"{ip}/{24 if addr.version == 4 else 64}", strict=False)
    counts = Counter(nets.values())
    if len(counts) < 2 or len(ips) < 3:
        return []
    common, n = counts.most_common(1)[0]
    if n < 2:
        return []
    return [Check("cluster_addresses", WARN, f"node {node}: HCCL_IF_IP={ips[node]} is not on the network of the "
                                             f"other nodes ({common})",
                  "check it is this node's address on the cluster network, not another NIC's")
            for node, net in nets.items() if net != common]


def check_timeouts(nodes: List[Node], step_time: Optional[float]) -> List[Check]:
    name = "cluster_timeouts"
    out = []
    limits = {n.name: n.hccl.exec_timeout for n in nodes}
    if len(set(limits.values())) > 1:
        out.append(Check(name, WARN, "HCCL_EXEC_TIMEOUT differs between nodes: "
                         + ", ".join(f"{k}={v}" for k, v in limits.items()),
                         "set the same HCCL_EXEC_TIMEOUT on every node"))
    limit = min(limits.values()) if limits else hccl_env.DEFAULT_EXEC_TIMEOUT
    if step_time is not None and limit:
        if limit <= step_time:
            out.append(Check(name, FAIL, f"HCCL_EXEC_TIMEOUT={limit} s is not above the expected step time "
                                         f"{step_time:g} s: collectives will time out during normal steps",
                             f"set HCCL_EXEC_TIMEOUT to at least {int(step_time * 3) + 1}"))
        elif limit < 3 * step_time:
            out.append(Check(name, WARN, f"HCCL_EXEC_TIMEOUT={limit} s is less than 3 steps ({step_time:g} s each): "
                                         "a slow step, an evaluation or a checkpoint save on one rank times the "
                                         "others out", f"set HCCL_EXEC_TIMEOUT to at least {int(step_time * 3) + 1}, "
                                                       "above the longest pause between collectives"))
    if limit and limit > 1800:
        out.append(Check(name, INFO, f"HCCL_EXEC_TIMEOUT={limit} s is above the process group's default timeout "
                                     "(1800 s): torch_npu's watchdog ends a stalled collective first",
                         "pass init_process_group(timeout=...) above HCCL_EXEC_TIMEOUT if you want HCCL's EI0002 "
                         "report, which names the stuck rank"))
    if not out:
        out.append(Check(name, OK, f"HCCL_EXEC_TIMEOUT={limit} s" + (f" ({limit / step_time:.0f} steps)"
                                                                   if step_time else "")))
    return out


def check_versions(nodes: List[Node]) -> List[Check]:
    name = "cluster_versions"
    known = [n for n in nodes if n.versions]
    if not known:
        return [Check(name, INFO, "no node reports given: versions not compared",
                      "run 'ascend-compat doctor --format json > <node>.json' on each node and pass "
                      "--node-report <node>.json")]
    out = []
    for key in VERSION_KEYS:
        values = {n.name: (n.versions or {}).get(key) for n in known}
        if len(set(values.values())) > 1:
            out.append(Check(name, FAIL, f"{key} differs between nodes: "
                             + ", ".join(f"{k} {v or '(none)'}" for k, v in values.items()),
                             f"install the same {key} on every node"))
    if not out:
        row = known[0].versions or {}
        out.append(Check(name, OK, f"{len(known)} node(s) alike: "
                         + ", ".join(f"{k} {row.get(k) or '-'}" for k in VERSION_KEYS)))
    return out


def check_cluster(nodes: List[Node], rank_table_path: Optional[str], world_size: Optional[int] = None,
                  nproc: Optional[int] = None, step_time: Optional[float] = None) -> List[Check]:
    """Every cluster check (see the module doc)."""
    if world_size is None:
        sizes = {_int(n.env.get("WORLD_SIZE")) for n in nodes} - {None}
        world_size = sizes.pop() if len(sizes) == 1 else None
    if nproc is None:
        counts = {_int(n.env.get("LOCAL_WORLD_SIZE") or n.env.get("NPROC_PER_NODE")) for n in nodes} - {None}
        nproc = counts.pop() if len(counts) == 1 else None
    return (check_rank_table(rank_table_path, nodes, world_size, nproc) + check_nodes(nodes)
            + check_addresses(nodes, rank_table_path) + check_timeouts(nodes, step_time) + check_versions(nodes))


def local_versions() -> Dict[str, Optional[str]]:
    """This machine's versions, as ``doctor --format json`` reports them."""
    from ascend_compat.doctor.checks import Facts
    from ascend_compat.doctor.environment import Environment

    return versions_of(Facts(Environment()))


def versions_of(facts) -> Dict[str, Optional[str]]:
    import platform

    cann = facts.cann[0].version if facts.cann else None
    driver = facts.driver.version if facts.driver else None
    return {"python": platform.python_version(), "torch": facts.torch.version if facts.torch else None,
            "torch_npu": facts.torch_npu.version if facts.torch_npu else None, "cann": cann, "driver": driver}


def node_name(env: Mapping[str, str], path: str) -> str:
    return env.get("HOSTNAME") or os.path.splitext(os.path.basename(path))[0]
