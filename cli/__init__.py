"""The ``rackcron`` command line.

Subcommands are loaded lazily: the top-level group knows each command's module
by name and imports it only when that command runs (or its help is shown), so
``rackcron next`` never imports SQLAlchemy and ``rackcron validate`` never
imports grpc. Errors from the core are turned into one clear line on stderr by
``rackcron.cli._common``; nothing here prints a traceback for bad input.

As a last resort, any other exception a command raises (a bug) becomes one line,
``error: internal error: <type>: <message>``, and exit status 1; the traceback
is printed too when ``RACKCRON_DEBUG=1``. click's own exits, usage errors and
aborts pass through untouched.
"""

from __future__ import annotations

import difflib
import importlib
import os
import sys
import traceback

import click

from rackcron import __version__

__all__ = ["DEBUG_ENV", "main"]

#: The exit status when the reader of the output went away (128 + SIGPIPE, as a shell
#: reports a process that signal ended).
EXIT_BROKEN_PIPE = 141
#: Set to 1 to print the traceback of an internal error.
DEBUG_ENV = "RACKCRON_DEBUG"

# command name -> "module:attribute"; the module is imported on first use.
_COMMANDS: dict[str, tuple[str, str]] = {
    "next": ("rackcron.cli.next_cmd:next_command", "Preview the next fire times of a spec."),
    "validate": ("rackcron.cli.validate_cmd:validate", "Check declared YAML: schema and meaning."),
    "conflicts": (
        "rackcron.cli.conflicts_cmd:conflicts",
        "Find schedules that can collide on the same racks.",
    ),
    "plan": ("rackcron.cli.reconcile_cmd:plan", "Show what applying a tree would change."),
    "apply": ("rackcron.cli.reconcile_cmd:apply", "Apply a tree or a saved plan to the store."),
    "history": ("rackcron.cli.reconcile_cmd:history", "Show the apply log."),
    "import": (
        "rackcron.cli.import_cmd:import_command",
        "Write a tree declaring what a store or server holds.",
    ),
    "fmt": ("rackcron.cli.fmt_cmd:fmt", "Lay out a tree's YAML as rackcron writes it."),
    "status": (
        "rackcron.cli.reconcile_cmd:status",
        "Is the store in step with Git: applied revision, sync, drift.",
    ),
    "diff": (
        "rackcron.cli.reconcile_cmd:diff",
        "Show what a change between two git revisions does.",
    ),
    "sync": ("rackcron.cli.reconcile_cmd:sync", "Keep the store converged on a git branch."),
    "schedules": ("rackcron.cli.schedules_cmd:schedules", "Inspect and control stored schedules."),
    "tasks": ("rackcron.cli.tasks_cmd:tasks", "Inspect and cancel tasks."),
    "rollouts": (
        "rackcron.cli.rollouts_cmd:rollouts",
        "See and steer roll-outs: pause, resume, abort.",
    ),
    "freezes": ("rackcron.cli.freezes_cmd:freezes", "Show freeze windows: active now, next."),
    "upcoming": (
        "rackcron.cli.upcoming_cmd:upcoming_command",
        "List the next firings, rack by rack, from a tree or the store.",
    ),
    "racks": (
        "rackcron.cli.racks_cmd:racks",
        "Show racks: components, NVLink domain, controller, active tasks.",
    ),
    "db": ("rackcron.cli.db_cmd:db", "Create or upgrade the store's schema."),
    "dispatch": ("rackcron.cli.serve_cmd:dispatch", "Fire due schedules (the poll loop alone)."),
    "serve": (
        "rackcron.cli.serve_cmd:serve",
        "Run the dispatcher and the task runner (fire and deliver).",
    ),
    "rack-controller": (
        "rackcron.cli.controller_cmd:rack_controller",
        "Run the reference rack controller (HTTP, over the simulator).",
    ),
}


class _LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(_COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in _COMMANDS:
            return None
        module_name, _, attr = _COMMANDS[cmd_name][0].partition(":")
        command: click.Command = getattr(importlib.import_module(module_name), attr)
        return command

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        # click suggests close matches for a mistyped option, not for a command.
        name = args[0]
        if name not in _COMMANDS and not name.startswith("-") and not ctx.resilient_parsing:
            close = difflib.get_close_matches(name, self.list_commands(ctx), n=3)
            if close:
                shown = ", ".join(repr(c) for c in close)
                which = shown if len(close) == 1 else f"one of {shown}"
                ctx.fail(f"No such command {name!r}. Did you mean {which}?")
        return super().resolve_command(ctx, args)

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except BrokenPipeError:  # `rackcron ... | head`: the reader has what it wanted
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no error at exit
            sys.exit(EXIT_BROKEN_PIPE)
        except Exception as exc:  # the last resort: a bug never shows a user a traceback
            if os.environ.get(DEBUG_ENV, "") not in ("", "0"):
                traceback.print_exc()
            from rackcron.domain.escape import terminal

            message = terminal(" ".join(str(exc).split())[:1000])
            click.echo(f"error: internal error: {type(exc).__name__}: {message}", err=True)
            sys.exit(1)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # Short help comes from the table, so `rackcron --help` imports nothing.
        rows = [(name, _COMMANDS[name][1]) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="rackcron")
def main() -> None:
    """Rack operations scheduled as code.

    Declare schedules in YAML, review plans in pull requests, apply them to a SQL
    store, and let the dispatcher fire them at rack controllers.
    """
