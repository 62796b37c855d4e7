"""The ``ident3d`` command: one entry point, one module per verb.

Verb modules import their heavy dependencies (torch, bpy, ray) inside ``run`` so that
``ident3d info`` stays fast and works without the optional extras.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import re
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn

from ident3d import __version__
from ident3d.errors import Ident3dError, did_you_mean

OWN_LOGGERS = ("ident3d",)
VERBS = ("info", "tracks", "render", "traverse", "pack", "download", "audit", "export", "import", "publish",
         "train", "evaluate", "leaderboard", "synthetic", "demo")
MODULE_OF_VERB = {"import": "import_split"}  # "import" is a Python keyword
RENAMED = {"verify": "audit"}  # old verb -> new: "verified" is a leaderboard entry's status only


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Keep the examples' line breaks; show a default only when there is one to show and the help
    text does not already say it (no "(default: None)" noise)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if ("default" in text or default in (None, False, argparse.SUPPRESS)
                or action.option_strings == [] or isinstance(default, tuple | list)):
            return text
        return f"{text} (default: {default})" if text else f"default: {default}"


class Parser(argparse.ArgumentParser):
    """argparse with the package's error form: one ``error:`` line naming the flag and the value, the
    nearest valid choice for a typo, and where the options are listed (no usage block)."""

    def error(self, message: str) -> NoReturn:
        hint = ""
        found = re.search(r"invalid choice: '?([^' ]+)'? \(choose from (.*)\)", message)
        if found and found[1] in RENAMED:
            hint = f" `{found[1]}` is now `{RENAMED[found[1]]}`, with the same options."
        elif found:
            hint = did_you_mean(found[1], re.findall(r"'?([^',]+)'?(?:, |$)", found[2]))
        self.exit(2, f"error: {self.prog}: {message.rstrip('.')}.{hint} Fix: `{self.prog} --help` lists "
                     "the options.\n")


def add_common_options(parser: argparse.ArgumentParser) -> None:
    """Flags accepted before or after the verb and its action; SUPPRESS keeps a flag given before it."""
    parser.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS,
                        help="no progress bars, warnings only")
    parser.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
                        help="also show other libraries' information messages (FAISS, Ray, torch)")
    parser.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help="show the traceback of an error")


def common_options() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    add_common_options(common)
    return common


def _actions_take_common_options(parser: argparse.ArgumentParser) -> None:
    """Give every action of a verb (``leaderboard build``, ``synthetic run``, ...) the common flags."""
    for action in parser._actions:  # argparse keeps its subcommands here and nowhere public
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                if "--quiet" not in child._option_string_actions:
                    add_common_options(child)
                _actions_take_common_options(child)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="ident3d",
        description="3DIdent identifiability benchmarks: render, load, evaluate, train, compare.",
        epilog=("every verb spells its options the same way: --data ROOT is the dataset root (the folder\n"
                "holding train/ and test/), --out is what the verb writes (a run folder, a result file, a\n"
                "figure), --device cpu|gpu picks the processor (cuda, cuda:N also work where torch runs).\n\n"
                "example:\n  ident3d info --variant v2"),
        formatter_class=HelpFormatter, parents=[common_options()],
    )
    parser.add_argument("--version", action="version", version=f"ident3d {__version__}")
    sub = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    for verb in VERBS:
        module = importlib.import_module(f"ident3d.cli.{MODULE_OF_VERB.get(verb, verb)}")
        p = sub.add_parser(verb, help=module.HELP, description=module.HELP,
                           epilog="example:\n  " + module.EXAMPLE, formatter_class=HelpFormatter,
                           parents=[common_options()])
        module.add_arguments(p)
        p.set_defaults(run=module.run)
    _actions_take_common_options(parser)
    return parser


def describe(error: BaseException) -> str:
    """One line for an anticipated failure: the package's own errors already name the fix."""
    if isinstance(error, Ident3dError):
        return str(error)
    if isinstance(error, ImportError):
        return str(error)  # ident3d.extras names the extra to install
    if isinstance(error, OSError):
        where = f"{error.filename}: " if error.filename else ""
        return (f"{where}{error.strerror or error}. Fix: check that the path exists, is the kind "
                "of file expected, and is writable; then re-run (finished work is kept).")
    return (f"internal error ({type(error).__name__}: {error}). Re-run with --debug to see the "
            "traceback, and please report it.")


class Stopped(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised where the command is, so it cleans up as after Ctrl-C: every
    scratch folder removed, every process it started ended, nothing half-written."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


@contextmanager
def stopped_by_signals() -> Iterator[None]:
    """While a command runs in the main thread, SIGTERM and SIGHUP raise ``Stopped``."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, _frame: object) -> None:
        raise Stopped(signum)

    before = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)


def main(argv: list[str] | None = None) -> int:
    """Exit 0 on success, 1 on a failure (one `error:` line), 2 on a usage error (argparse)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "check_data", False):  # --data, or an earlier version's spelling of it
        args.data = args.data or getattr(args, "old_root", None)
        if args.data is None:
            parser.error(f"{args.verb}: the following arguments are required: --data")
    quiet, debug = getattr(args, "quiet", False), getattr(args, "debug", False)
    args.quiet = quiet
    ours = logging.WARNING if quiet else logging.INFO
    logging.basicConfig(level=ours if getattr(args, "verbose", False) else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    for name in OWN_LOGGERS:
        logging.getLogger(name).setLevel(ours)
    try:
        with stopped_by_signals():
            return int(args.run(args) or 0)
    except Stopped as stop:
        print(f"error: stopped by {signal.Signals(stop.signum).name}. Fix: re-run the same command; "
              "finished work is kept.", file=sys.stderr)
        return 128 + stop.signum
    except KeyboardInterrupt:
        print("error: interrupted. Fix: re-run the same command; finished work is kept.",
              file=sys.stderr)
        return 130
    except Exception as error:
        if debug:
            raise
        message = " ".join(describe(error).split())  # one line, whatever the message held
        print(f"error: {message}", file=sys.stderr)
        return 1
