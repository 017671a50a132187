"""``python run.py COMMAND``: parsing, dispatch, and one-line errors.

Each command is a module of this package with ``HELP`` (one line),
``add_arguments(parser)`` and ``run(args) -> int``; heavy imports (Mesa,
Solara, Dask) happen inside ``run`` so ``--help`` stays fast. Every command
gets ``--json``. Bad input raises :class:`~market.cli.common.UsageError` or
``ValueError`` with a message that names the parameter and the allowed
range; it is printed as one line on stderr with exit code 2, no traceback
(set ``NEGOTIATION_DEBUG=1`` to see one). So is a
:class:`~market.errors.CompileError` (the machine cannot compile the
training kernel).
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import errno
import functools
import importlib
import importlib.util
import os
import re
import signal
import sys
import warnings
from collections.abc import Callable, Iterator
from typing import Any, NoReturn

from market.cli import common
from market.cli.progress import command_started, progress_bar
from market.errors import CompileError, Notice, RunFailed, UsageError, signal_under
from market.processes import Terminated, exit_on_signal, guard_process, sigterm_exits

#: modules every command needs (import name, distribution), checked before any is imported
REQUIRED = [("numpy", "numpy"), ("pandas", "pandas"), ("numba", "numba"), ("rich", "rich"),
            ("mesa", "mesa"), ("matplotlib", "matplotlib"), ("pyarrow", "pyarrow")]

#: command name -> module, in the order ``--help`` lists them
COMMANDS = [
    "baseline",
    "train",
    "evaluate",
    "market",
    "viz",
    "batch",
    "tournament",
    "plot",
    "report",
    "bench",
    "build",
]


def plain(text: str | None) -> str | None:
    """A docstring as ``--help`` prints it: reST's double backquotes and roles
    (``:mod:`a.b```) as plain words, since a terminal shows them as typed."""
    if text is None:
        return None
    text = re.sub(r":(?:mod|class|func|meth|data|attr|exc|obj):`~?([^`<]*?)(?:\s*<[^`]*>)?`",
                  r"\1", text)
    return text.replace("``", "")


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line and exit code 2, and which refuses an
    option that takes one value given more than once (argparse would keep the last)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        if args is not None:
            self._refuse_repeats(list(args))
        return super().parse_known_args(args, namespace)

    def _refuse_repeats(self, args: list[str]) -> None:
        """One line naming an option of one value that ``args`` give twice (the options that
        gather several, as ``batch --param``, may repeat)."""
        single = {opt: a for a in self._actions if a.option_strings
                  and isinstance(a, argparse._StoreAction) and a.nargs is None
                  for opt in a.option_strings}
        given: dict[argparse.Action, list[str]] = {}
        for i, tok in enumerate(args):
            if tok == "--":
                break
            name, eq, value = tok.partition("=")
            action = single.get(name) or single.get(self._abbreviated(name))
            if action is None:
                continue
            if not eq:
                value = args[i + 1] if i + 1 < len(args) else ""
            given.setdefault(action, []).append(value)
        for action, values in given.items():
            if len(values) > 1:
                self.error(f"{action.option_strings[0]} is given {len(values)} times "
                           f"({', '.join(repr(v) for v in values)}): give it once")


    def _abbreviated(self, name: str) -> str:
        """The option ``name`` abbreviates, as argparse reads it (the one long option it
        begins), or "": ``--see 2`` is ``--seed 2``, and a repeat however spelled."""
        if not name.startswith("--") or not self.allow_abbrev:
            return ""
        found = [opt for opt in self._option_string_actions if opt.startswith(name)]
        return found[0] if len(found) == 1 else ""


def _commands_action(parser: Parser) -> argparse._SubParsersAction:
    """The parser's sub-command action. argparse has no public way back to it from the
    parser (checked against Python 3.11-3.13's argparse); this is the one place that reaches
    in (``_subparsers``), so a change of argparse breaks one function."""
    return parser._subparsers._group_actions[0]  # type: ignore[union-attr]


def build_parser() -> Parser:
    parser = Parser(
        prog=common.PROG,
        description="Bargaining between software agents: two-agent game, training, market.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for name in COMMANDS:
        mod = importlib.import_module(f"market.cli.{name}_cmd")
        p = sub.add_parser(name, help=mod.HELP, description=plain(mod.__doc__))
        mod.add_arguments(p)
        p.add_argument("--json", action="store_true", help="print a machine-readable summary")
        p.set_defaults(_module=mod)
    return parser


def overview(parser: Parser) -> str:
    """The command table: what ``run.py`` alone prints."""
    width = max(len(n) for n in COMMANDS)
    helps = {name: importlib.import_module(f"market.cli.{name}_cmd").HELP for name in COMMANDS}
    lines = [f"usage: {common.PROG} COMMAND [options]   ({parser.description})", "", "commands:"]
    lines += [f"  {name.ljust(width)}  {helps[name]}" for name in COMMANDS]
    lines += ["", f"Run `{common.PROG} COMMAND --help` for a command's options, "
                  f"`{common.PROG} --help` for this list."]
    return "\n".join(lines)


def unknown_command(name: str) -> str:
    """One line for a command that does not exist, with the closest names."""
    close = difflib.get_close_matches(name, COMMANDS, n=2, cutoff=0.5)
    hint = f" (did you mean {' or '.join(close)}?)" if close else ""
    return (f"{common.PROG}: error: unknown command {name!r}{hint}; choose from: "
            f"{', '.join(COMMANDS)}")


_NEGATIVE = re.compile(r"^-(\d|\.\d)")


def glue_negative_values(parser: Parser, argv: list[str]) -> list[str]:
    """``--value-range -10,10`` as ``--value-range=-10,10``.

    argparse reads a token that starts with ``-`` as an option unless it is a
    plain negative number, so a range or list starting with a negative
    number would be refused; an option that takes one value gets the next
    token glued to it when that token starts like a negative number.
    """
    if not argv or argv[0] not in COMMANDS:
        return argv
    sub = _commands_action(parser).choices[argv[0]]
    takes_value = {opt for a in sub._actions if a.option_strings and a.nargs is None
                   and a.const is None for opt in a.option_strings}
    out: list[str] = []
    i = 0
    while i < len(argv):
        tok = argv[i]
        if tok in takes_value and i + 1 < len(argv) and _NEGATIVE.match(argv[i + 1]):
            out.append(f"{tok}={argv[i + 1]}")
            i += 2
            continue
        out.append(tok)
        i += 1
    return out


def check_environment() -> None:
    """Environment variables the libraries read at import, checked before any of them loads:
    numba ends in a traceback on ``NUMBA_NUM_THREADS=abc`` and aborts the process on more
    threads than the machine has."""
    text = os.environ.get("NUMBA_NUM_THREADS")
    if text is None:
        return
    cores = os.cpu_count() or 1
    try:
        n = int(text)
    except ValueError:
        n = 0
    if not 1 <= n <= cores:
        raise UsageError(f"NUMBA_NUM_THREADS must be an integer in [1, {cores}] (the cores of "
                         f"this machine; got {text[:40]!r})")


def check_dependencies() -> None:
    """Every required library importable, or one line saying how to run from the virtual
    environment (``python3 run.py`` outside it used to end in a ``No module named`` traceback)."""

    missing = [dist for mod, dist in REQUIRED if importlib.util.find_spec(mod) is None]
    if missing:
        here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        venv = os.path.join(here, ".venv", "bin", "python")
        how = (f"run it with {os.path.relpath(venv)} run.py" if os.path.exists(venv) else
               "install it first: python3 -m venv .venv && .venv/bin/pip install -e .")
        raise UsageError(f"{sys.executable} lacks {', '.join(missing)}: {how}")


def show_library_loading(quiet: bool) -> None:
    """A spinner while NegMAS or the ANAC agents load, when a command first needs them: their
    imports take seconds on a cold machine, and the command would sit silent meanwhile."""
    from strategies import negmas_agents

    @contextlib.contextmanager
    def loading(module: str) -> Iterator[None]:
        if module in sys.modules:  # loaded already: nothing to wait for
            yield
            return
        with progress_bar("loading", None, quiet=quiet) as update:
            update(description=f"{module} (seconds on a first run)")
            yield

    negmas_agents.loading = loading


def console() -> int:
    """The installed ``negotiation-market`` command: ``run.py`` under its own name."""
    common.PROG = "negotiation-market"
    guard_process()
    code = main()
    exit_on_signal(code)  # the work is done: a signal while Python shuts down ends it now
    return code


def main(argv: list[str] | None = None) -> int:
    try:
        with plain_notices(None):  # start-up (the imports): e.g. numba's cache unwritable
            return _main(argv)
    except KeyboardInterrupt:  # while starting (the imports, the parser): a command's own
        print(f"{common.PROG}: interrupted", file=sys.stderr)  # run ends in run_command
        return 130


def _main(argv: list[str] | None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    command_started()  # progress lines count the command's silence from here
    try:  # before the parser: building it imports the commands, and numba with them
        check_dependencies()
        check_environment()
    except UsageError as exc:
        print(f"{common.PROG}: error: {exc}", file=sys.stderr)
        return 2
    parser = build_parser()
    if not argv:
        print(overview(parser))
        return 0
    if not argv[0].startswith("-") and argv[0] not in COMMANDS:
        print(unknown_command(argv[0]), file=sys.stderr)
        return 2
    args = parser.parse_args(glue_negative_values(parser, argv))
    if args.command is None:  # options only (e.g. --json)
        print(overview(parser))
        return 0
    return run_command(args)


#: what ends a command, in this order: its one line on stderr (after ``PROG COMMAND: ``) and
#: its exit code; the errors of bad input also raise under NEGOTIATION_DEBUG=1
ENDINGS: list[tuple[type[BaseException] | tuple[type[BaseException], ...],
                   Callable[[Any], str], int]] = [
    (Terminated, lambda exc: "terminated", 143),
    (RunFailed, lambda exc: f"error: {' '.join(str(exc).split())}", 1),
    ((UsageError, ValueError), lambda exc: f"error: {' '.join(str(exc).split())}", 2),
    # numba missing or failing: not the user's input, as final
    (CompileError, lambda exc: f"error: {' '.join(str(exc).split())}", 2),
    (MemoryError, lambda exc: "error: out of memory; use smaller sizes", 2),
    # a path the user named cannot be read or written
    (OSError, lambda exc: "error: " + (f"{exc.filename}: " if exc.filename else "")
     + str(exc.strerror or exc), 2),
    (KeyboardInterrupt, lambda exc: "interrupted", 130),
]
DEBUG_RAISES = (UsageError, ValueError, CompileError, OSError)
#: a write the machine could not complete (a full disk or quota, an I/O error, a read-only
#: file system): not bad input, so not 2, but sysexits' EX_IOERR
WRITE_FAILED_CODE = 74
WRITE_FAILED = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EROFS, errno.EFBIG})


@contextlib.contextmanager
def plain_notices(command: str | None) -> Iterator[None]:
    """While a command runs, each :class:`~market.errors.Notice` is one plain line on stderr,
    once per text (not Python's two-line warning with a source line); other warnings are
    shown as Python shows them."""
    said: set[str] = set()
    original = warnings.showwarning

    def show(message: Any, category: type[Warning], filename: str, lineno: int,
             file: Any = None, line: str | None = None) -> None:
        if not issubclass(category, Notice):
            original(message, category, filename, lineno, file, line)
            return
        text = " ".join(str(message).split())
        if text not in said:
            said.add(text)
            where = common.PROG if command is None else f"{common.PROG} {command}"
            print(f"{where}: note: {text}", file=sys.stderr, flush=True)

    with warnings.catch_warnings():
        warnings.simplefilter("always", Notice)  # ours to say once
        warnings.showwarning = show
        yield


def _signal_line(command: str, signum: int) -> str:
    """The line a command ends with on a signal (as :data:`ENDINGS` says it)."""
    return f"{common.PROG} {command}: " + ("interrupted" if signum == signal.SIGINT
                                           else "terminated")


def run_command(args: argparse.Namespace) -> int:
    """Run the parsed command; whatever ends it is one line on stderr and an exit code."""
    try:
        with sigterm_exits(functools.partial(_signal_line, args.command)), \
                plain_notices(args.command):
            show_library_loading(quiet=bool(getattr(args, "json", False)))
            return int(args._module.run(args) or 0)
    except BrokenPipeError:
        # the reader (e.g. `| head`) went away: not an error of ours
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except (Terminated, RunFailed, UsageError, ValueError, CompileError, MemoryError, OSError,
            KeyboardInterrupt, SystemError) as exc:
        if isinstance(exc, SystemError):  # Ctrl-C or SIGTERM inside compiled code
            under = signal_under(exc)
            if under is None:
                raise
            exc = under
        if isinstance(exc, DEBUG_RAISES) and os.environ.get("NEGOTIATION_DEBUG"):
            raise
        if isinstance(exc, OSError) and exc.errno in WRITE_FAILED:
            where = f"{exc.filename}: " if exc.filename else ""
            print(f"{common.PROG} {args.command}: error: could not write {where}"
                  f"{exc.strerror or exc} (nothing half-written is left)", file=sys.stderr)
            return WRITE_FAILED_CODE
        for kinds, say, code in ENDINGS:
            if isinstance(exc, kinds):
                print(f"{common.PROG} {args.command}: {say(exc)}", file=sys.stderr)
                if isinstance(exc, Terminated) and isinstance(exc.code, int):
                    return exc.code  # 143 for SIGTERM, 129 for SIGHUP (the terminal closed)
                return code
        raise
