"""``ascend-compat doctor``: check torch, torch_npu, CANN, driver, devices and environment variables."""
from __future__ import annotations

import argparse
import json
import sys

from ascend_compat._schemas import header

HELP = ("check this machine's torch / torch_npu / CANN / driver / NPU setup and say how to fix it; --cluster: a "
        "multi-node job's rank table, per-node environment, addresses, timeouts and versions before launch")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", choices=("text", "json"), default="text", help="output format (default: text)")
    parser.add_argument("--simulate", action="store_true",
                        help="report as if running under the ascend-compat simulator (also: ASCEND_COMPAT_SIMULATE=1)")
    parser.add_argument("--no-import", action="store_true",
                        help="do not try 'import torch_npu' in a child interpreter (metadata checks only)")
    parser.add_argument("--root", default="/", metavar="DIR",
                        help="look for CANN, the driver and the device nodes below DIR instead of / (e.g. a "
                             "mounted container image); Python packages and environment variables are still this "
                             "interpreter's (default: /)")
    cluster = parser.add_argument_group("cluster job (--cluster)")
    cluster.add_argument("--cluster", nargs="?", const="", default=None, metavar="RANK_TABLE",
                         help="check a multi-node job's set-up instead of this machine: the rank table (this path, "
                              "else RANK_TABLE_FILE), each node's environment, addresses, timeouts, versions")
    cluster.add_argument("--world-size", type=int, default=None, metavar="N",
                         help="the job's number of ranks (default: WORLD_SIZE of the nodes' environment)")
    cluster.add_argument("--nproc-per-node", type=int, default=None, metavar="P",
                         help="processes per node (default: LOCAL_WORLD_SIZE of the nodes' environment)")
    cluster.add_argument("--node-env", action="append", default=[], metavar="FILE",
                         help="a node's environment saved on it (env > FILE); once per node. Without it this "
                              "machine's environment is the one node checked")
    cluster.add_argument("--node-report", action="append", default=[], metavar="FILE",
                         help="'ascend-compat doctor --format json' output of a node, for the version matrix")
    cluster.add_argument("--step-time", type=float, default=None, metavar="SECONDS",
                         help="expected seconds per training step, to judge HCCL_EXEC_TIMEOUT")


_STATUS_STYLE = {"OK": "green", "WARN": "yellow", "FAIL": "bold red", "INFO": "cyan"}


def _render_rich(checks, counts) -> None:
    """The text report on a terminal: statuses coloured, details and fixes wrapped to the width."""
    from rich.markup import escape
    from rich.table import Table

    from ascend_compat.cli import _console

    table = Table(box=None, show_header=False, pad_edge=False, padding=(0, 1))
    table.add_column(no_wrap=True)
    table.add_column(no_wrap=True, style="bold")
    table.add_column(overflow="fold", ratio=1)
    for c in checks:
        status = c.status.value
        detail = escape(c.detail) + (f"\n[dim]fix:[/] {escape(c.fix)}" if c.fix else "")
        table.add_row(f"[{_STATUS_STYLE.get(status, 'bold')}][{status:^4}][/]".replace("[[", "[\\["), c.name, detail)
    out = _console.console(sys.stdout)
    out.print(table)
    out.print()
    out.print(", ".join(f"[{_STATUS_STYLE.get(k, 'bold')}]{n} {k}[/]" for k, n in counts.items()))


def _cluster(args) -> int:
    import os
    import socket

    from ascend_compat.cli._common import INPUT, USAGE, CliError
    from ascend_compat.doctor import cluster, envdump

    nodes = []
    for path in args.node_env:
        try:
            env = envdump.read(path)
        except OSError as exc:
            raise CliError(f"--node-env {path}: cannot read it ({exc.strerror or exc})", INPUT) from None
        nodes.append(cluster.Node(cluster.node_name(env, path), env, source=path))
    if not nodes:
        nodes.append(cluster.Node(os.environ.get("HOSTNAME") or socket.gethostname(), dict(os.environ),
                                  versions=cluster.local_versions()))
    for i, path in enumerate(args.node_report):
        try:
            with open(path, encoding="utf-8") as fh:
                report = json.load(fh)
        except (OSError, ValueError) as exc:
            raise CliError(f"--node-report {path}: not a doctor JSON report ({exc})", INPUT) from None
        if not isinstance(report, dict) or not isinstance(report.get("versions"), dict):
            raise CliError(f"--node-report {path}: no 'versions' in it (made by ascend-compat doctor --format json "
                           "of version 0.x or later?)", INPUT)
        node = next((n for n in nodes if n.name == report.get("host")), nodes[i] if i < len(nodes) else None)
        if node is None:
            raise CliError(f"--node-report {path}: more reports than nodes; give each node's --node-env too", USAGE)
        node.versions = report["versions"]
    table = args.cluster or next((n.env.get("RANK_TABLE_FILE") for n in nodes if n.env.get("RANK_TABLE_FILE")), None)
    if args.cluster and not os.path.exists(args.cluster):
        raise CliError(f"--cluster {args.cluster}: no such rank table file", INPUT)
    checks = cluster.check_cluster(nodes, table, args.world_size, args.nproc_per_node, args.step_time)
    return _emit(args, checks, {"cluster": {"rank_table": table, "nodes": [n.name for n in nodes]}})


def _emit(args, checks, extra: dict) -> int:
    """Print ``checks`` as text or JSON (with ``extra`` keys); the exit code (1 on a FAIL)."""
    from ascend_compat.cli import _console
    from ascend_compat.doctor.checks import exit_code, render_text, summary

    if args.format == "json":
        json.dump({**header("doctor"), **extra,
                   "checks": [c.to_dict() for c in checks], "summary": summary(checks)}, sys.stdout, indent=2)
        sys.stdout.write("\n")
    elif _console.color_wanted(sys.stdout):
        _render_rich(checks, summary(checks))
    else:
        print(render_text(checks))
    return exit_code(checks)


def main(args) -> int:
    """Exit 1 if any check FAILs, else 0 (3 when --root is not a directory)."""
    if args.cluster is not None:
        return _cluster(args)
    if args.node_env or args.node_report or args.world_size or args.nproc_per_node or args.step_time:
        from ascend_compat.cli._common import USAGE, CliError

        raise CliError("--world-size, --nproc-per-node, --node-env, --node-report and --step-time go with --cluster",
                       USAGE)
    import socket
    from pathlib import Path

    from ascend_compat.cli._common import INPUT, CliError
    from ascend_compat.doctor.checks import Facts, run_doctor
    from ascend_compat.doctor.cluster import versions_of
    from ascend_compat.doctor.environment import Environment

    root = Path(args.root)
    if not root.is_dir():
        raise CliError(f"--root {args.root} is not a directory", INPUT)
    env = Environment(root=root, simulate=args.simulate)
    if args.no_import:
        env.import_probe = None
    checks = run_doctor(env)
    extra = {}
    if args.format == "json":
        extra = {"host": socket.gethostname(), "simulated": any(c.name == "simulator" for c in checks),
                 "versions": versions_of(Facts(env))}
    return _emit(args, checks, extra)
