"""Starting the user's script: the one launch path of ``run``, ``audit``, ``profile`` and ``compare``.

* :func:`add_target_arguments`: ``SCRIPT [ARGS...]`` or ``-m MODULE [ARGS...]``, everything after the
  script or module belonging to it (as with ``python``);
* :func:`parse_target`, before anything starts: the script must exist and compile (a file, a
  directory or zip file with ``__main__.py``, or ``/dev/null``), a top-level module must be findable;
* :func:`prepare_with_progress`: the simulator (``--simulate``) and the shim, before user code;
* :func:`run_target` / :func:`run_to_status`: run it as ``python SCRIPT`` / ``python -m MODULE`` would
  (``__main__``, ``sys.argv``, ``sys.path[0]``, an absolute ``__file__``, tracebacks from the user's
  first frame).

A script that cannot start (missing, a directory without ``__main__.py``, a syntax error, a binary
file, ``-m`` of a module that does not exist) is an input error: one line, exit 3, and no report from
the command that wanted to watch it. Once the script has started, its own exit status is returned.
"""
from __future__ import annotations

import argparse
import os
import sys

from ascend_compat.cli._common import INPUT, USAGE, CliError



class _Formatter(argparse.HelpFormatter):
    """Shows ``-m MODULE [ARGS...]`` and ``SCRIPT [ARGS...]`` where argparse would print ``...``."""

    def _format_args(self, action, default_metavar):
        if action.nargs == argparse.REMAINDER and action.metavar:
            return action.metavar
        return super()._format_args(action, default_metavar)


def add_target_arguments(parser: argparse.ArgumentParser) -> None:
    """``-m MODULE [ARGS...]`` and ``SCRIPT [ARGS...]`` (``argparse.REMAINDER``: options after the script or
    module are the script's, ``-m pkg.train --lr 1``)."""
    parser.formatter_class = _Formatter
    parser.add_argument("-m", dest="module", nargs=argparse.REMAINDER, metavar="MODULE [ARGS...]",
                        help="run a library module as a script")
    parser.add_argument("target", nargs=argparse.REMAINDER, metavar="SCRIPT [ARGS...]",
                        help="the script and its arguments")


def parse_target(args: argparse.Namespace, prog: str = "run") -> list:
    """The SCRIPT [ARGS...] list from ``args`` (``--`` dropped; ``args.module`` becomes the module name);
    CliError (usage / input) when there is nothing to run or it cannot start."""
    target = list(args.target)
    if isinstance(args.module, list):  # `-m MODULE ARGS...` (nargs=REMAINDER): everything after -m
        if not args.module:
            raise CliError("-m needs a MODULE name", USAGE)
        args.module, target = args.module[0], list(args.module[1:]) + target
    if target[:1] == ["--"]:
        target = target[1:]
    if args.module is None and not target:
        raise CliError("give a SCRIPT or -m MODULE to run", USAGE)
    if args.module is not None:
        _check_module(args.module)
    else:
        _check_script(target[0])
    return target


def _check_module(name: str) -> None:
    """A top-level module that cannot be found (``-m MISSING``); dotted names are found at run time,
    since finding them imports their packages, which must happen after the shim is active."""
    if "." in name:
        return
    import importlib.util

    try:
        found = importlib.util.find_spec(name) is not None
    except (ImportError, ValueError) as exc:
        raise CliError(f"-m {name}: {exc}", INPUT) from None
    if not found:
        raise CliError(f"-m {name}: no module named {name!r} (not found on sys.path from {os.getcwd()})", INPUT)


def _check_script(path: str) -> None:
    """What ``python PATH`` refuses before running anything: a missing file, a directory without
    ``__main__.py``, a file that is not Python source."""
    if os.path.isdir(path):
        if not any(os.path.exists(os.path.join(path, f"__main__.{ext}")) for ext in ("py", "pyc")):
            raise CliError(f"can't find '__main__' module in {path!r}: give a script, or a directory with a "
                           "__main__.py", INPUT)
        return
    if not os.path.exists(path):
        raise CliError(f"can't open file {path!r}: no such file", INPUT)
    if not os.path.isfile(path):  # /dev/null, a pipe: python reads them as they are
        return
    import io

    if _is_zip(path):  # a zip application: runpy runs its __main__.py
        return
    try:
        with io.open_code(path) as f:
            source = f.read()
    except OSError as exc:
        raise CliError(f"can't open file {path!r}: {exc.strerror or exc}", INPUT) from None
    try:
        compile(source, path, "exec", dont_inherit=True)
    except SyntaxError as exc:
        raise CliError(_syntax_message(path, exc), INPUT) from None
    except ValueError as exc:  # NUL bytes on Pythons before 3.12
        raise CliError(f"{path}: not Python source ({exc})", INPUT) from None


def _syntax_message(path: str, exc: SyntaxError) -> str:
    if "null bytes" in str(exc.msg):
        return f"{path}: not Python source ({exc.msg}): is it a binary file?"
    where = f"{path}:{exc.lineno}" + (f":{exc.offset}" if exc.offset else "") if exc.lineno else path
    return f"{where}: SyntaxError: {exc.msg} (the script does not compile; nothing was run)"


def prepare_with_progress(args: argparse.Namespace, simulate: bool) -> None:
    """The simulator (``simulate``) and the runtime shim, with start-up progress on stderr for the
    simulator (several seconds); an invalid ``ASCEND_COMPAT_SIM_*`` value is a usage error here."""
    from ascend_compat.cli import _console
    from ascend_compat.cli._common import progress_enabled
    from ascend_compat.simulator._config import SimConfigError, env_arguments

    if simulate:  # the command line is strict where `import ascend_compat` only warns
        try:
            env_arguments(strict=True)
        except SimConfigError as exc:
            raise CliError(str(exc), USAGE) from None
    with _console.steps("starting the simulated NPU", ("importing torch", "installing the simulator"),
                        simulate and progress_enabled(args)) as step:
        step("importing torch")
        if simulate:
            import torch  # noqa: F401  (the slow part of start-up, shown as its own step)
        step("installing the simulator")
        _prepare(simulate)


def _prepare(simulate: bool) -> None:
    """Environment translation, then the backend, then the patches - in that order, before user code.

    ``ASCEND_COMPAT_NO_PATCH=1`` is honoured: then only the simulator (if asked for) is installed.
    """
    from ascend_compat import _activation, _config

    if simulate:
        # Child processes that import ascend_compat (spawned DataLoader workers, helpers) simulate too.
        os.environ["ASCEND_COMPAT_SIMULATE"] = "1"
    if _config.no_patch_requested():
        if simulate:
            from ascend_compat import simulator

            simulator.install_from_env()
        return
    choice = "simulator" if simulate else _activation.decide()
    if choice is None:  # no NPU here: run unchanged (CUDA or CPU), like `python SCRIPT`
        return
    _activation.activate(choice)


def run_target(module, target, prog: str = "run") -> int:
    """Run ``-m module`` (with ``target`` as its arguments) or the script ``target[0]`` as ``__main__``.

    Returns 0, or 1 (130 for KeyboardInterrupt) after printing an uncaught exception's traceback from
    the user's first frame; ``SystemExit`` propagates, as from ``python SCRIPT``. Raises CliError
    (input error) when the script or module could not be started.
    """
    import runpy

    try:
        if module is not None:
            sys.argv = [module, *target]  # runpy replaces argv[0] with the module's path
            sys.path[0] = os.getcwd()
            runpy.run_module(module, run_name="__main__", alter_sys=True)
        else:
            script = target[0]
            sys.argv = target
            if os.path.isfile(script) and not _is_zip(script):
                sys.path[0] = os.path.dirname(os.path.abspath(script))
                _run_source_file(script)
            else:  # a directory or zip file with __main__.py (runpy puts it first on sys.path), /dev/null
                sys.path[0] = os.path.abspath(script)
                runpy.run_path(script, run_name="__main__")
    except SystemExit:
        raise
    except BaseException as exc:  # print like the interpreter would, starting at the user's frame
        if _never_started(exc):
            what = f"-m {module}" if module is not None else target[0]
            raise CliError(f"{what}: {exc}", INPUT) from None
        _strip_own_frames(exc)
        sys.excepthook(type(exc), exc, exc.__traceback__)
        _hint_simulate(exc, prog, module, target)
        return 130 if isinstance(exc, KeyboardInterrupt) else 1
    return 0


def _is_zip(path: str) -> bool:
    import zipfile

    return zipfile.is_zipfile(path)


def _run_source_file(path: str) -> None:
    """Execute a source file as ``python PATH`` does: a fresh ``__main__`` module whose ``__file__`` is
    absolute while ``sys.argv[0]`` stays as given (``runpy.run_path`` would set both to what it is
    passed); the previous ``__main__`` is restored afterwards, as runpy does."""
    import builtins
    import importlib.machinery
    import io
    import types

    filename = os.path.abspath(path)
    with io.open_code(filename) as f:
        code = compile(f.read(), filename, "exec", dont_inherit=True)
    main = types.ModuleType("__main__")
    main.__dict__.update(__file__=filename, __cached__=None, __builtins__=builtins, __package__=None,
                         __spec__=None, __loader__=importlib.machinery.SourceFileLoader("__main__", filename))
    saved = sys.modules.get("__main__")
    sys.modules["__main__"] = main
    try:
        exec(code, main.__dict__)
    finally:
        if saved is not None:
            sys.modules["__main__"] = saved


def run_to_status(module, target, prog: str) -> int:
    """:func:`run_target`, with ``SystemExit`` turned into the status the interpreter would exit with
    (for the commands that report after the script)."""
    try:
        return run_target(module, target, prog)
    except SystemExit as exc:
        code = exc.code
        if code is None:
            return 0
        if isinstance(code, int):
            return code
        print(code, file=sys.stderr)
        return 1


def _launcher_frame(tb) -> bool:
    """A frame of this module, of runpy or of the import machinery runpy calls (``<frozen ...>``)."""
    name = tb.tb_frame.f_code.co_filename
    return name == __file__ or name.startswith("<frozen ") or name == getattr(sys.modules.get("runpy"), "__file__", "")


def _user_frames(exc: BaseException) -> bool:
    tb = exc.__traceback__
    while tb is not None:
        if not _launcher_frame(tb):
            return True
        tb = tb.tb_next
    return False


def _never_started(exc: BaseException) -> bool:
    """runpy could not find, read or compile the code: no frame of the exception (nor of its cause:
    runpy wraps an error raised by the user's package ``__init__``) is the user's."""
    if not isinstance(exc, (ImportError, SyntaxError, OSError, ValueError)):
        return False
    cause = exc.__cause__
    return not _user_frames(exc) and (cause is None or not _user_frames(cause))


def _strip_own_frames(exc: BaseException) -> None:
    """Drop the launcher's and runpy's frames so the traceback starts in user code, as ``python x.py`` shows."""
    tb = exc.__traceback__
    while tb is not None and _launcher_frame(tb):
        tb = tb.tb_next
    if tb is not None:
        exc.__traceback__ = tb


def _hint_simulate(exc: BaseException, prog: str, module, target) -> None:
    """After torch's "not compiled with CUDA" on a machine with no NPU backend: the same command with
    ``--simulate``."""
    text = str(exc)
    if ("Torch not compiled with CUDA enabled" in text or "Found no NVIDIA driver" in text) \
            and "torch_npu" not in sys.modules:
        from ascend_compat.cli import _console

        import shlex

        what = f"-m {module}" if module is not None else shlex.quote(target[0])
        _console.message("note", "this machine has no NPU (torch_npu is not installed), so the script ran "
                                 "unchanged and its CUDA calls failed; to dry-run it on the simulated NPU: "
                                 f"ascend-compat {prog} --simulate {what}", prog="ascend-compat")
