"""``rackcron import``: write a tree that declares what a store or server holds."""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from pathlib import Path

import click

from rackcron.cli._common import Server, cli_errors, database_option, open_service, server_options
from rackcron.cli.reconcile_cmd import owner_option
from rackcron.domain.escape import terminal
from rackcron.domain.templates import FLOW_HIDES
from rackcron.reconciler.importer import Imported, ImportOptions, import_tree
from rackcron.reconciler.state import State

__all__ = ["import_command"]

_OPERATIONS = sorted(FLOW_HIDES)


@click.command("import")
@click.argument("outdir", type=click.Path(file_okay=False, path_type=Path))
@owner_option
@click.option(
    "--select",
    multiple=True,
    metavar="NAME|LABEL=VALUE",
    help="Import only the schedules of this name (a glob: nightly-*) or label (repeatable;"
    " any matches). Default: every schedule.",
)
@click.option(
    "--inventory",
    type=click.Path(exists=True, path_type=Path),
    help="A Flow server shows no racks: the tree (or file) declaring them, which the"
    " imported schedules' targets are named from. Not written again.",
)
@click.option(
    "--anchor-from-next-run/--no-anchor-from-next-run",
    default=None,
    help="Give each interval schedule without an anchor the anchor of its next run, so it"
    " keeps its timing on another server (default: on from a Flow server, off otherwise).",
)
@click.option(
    "--assume-defaults",
    multiple=True,
    metavar="OPERATION[,...]",
    help="From a Flow server: its schedules of these operations (power_on, power_off,"
    " power_reset, bring_up, ingest, upgrade_firmware, or all) set none of the parameters"
    " the Flow RPCs do not show (queue options, flags, firmware windows...), so they are"
    " written complete instead of paused and marked incomplete (repeatable).",
)
@click.option(
    "--schemas",
    default="https://rackcron.dev/schemas/v1",
    show_default=True,
    help="Where the files' schema modelines point: a URL or a path relative to each file.",
)
@database_option
@server_options
def import_command(
    outdir: Path,
    owner: str,
    select: tuple[str, ...],
    inventory: Path | None,
    anchor_from_next_run: bool | None,
    assume_defaults: tuple[str, ...],
    schemas: str,
    database_url: str | None,
    server: Server | None,
) -> None:
    """Write into OUTDIR (new or empty) a tree that declares what the store holds (or
    --server: a rackcron or Flow server): racks, NVLink domains, freezes and schedules, one
    file per kind and operation.

    What another repository manages is left out. From rackcron the tree is exact: apply
    it with the same --owner and the store adopts what it declares, changing nothing else;
    the next plan shows no changes. From a Flow server, a schedule whose operation the RPCs
    do not show in full is written paused under an `# incomplete:` comment, which
    `rackcron validate` refuses until the schedule is completed and the line deleted
    (docs/migrating.md).

    Example: rackcron import fleet --database-url sqlite:///rackcron.db

    Example: rackcron import firmware --select 'team=fleet' --select '*-firmware*'
    """
    _check_outdir(outdir)
    with cli_errors():
        state, flow, source = _read(database_url, server, inventory, owner)
    assumed = _operations(assume_defaults)
    if assumed and not flow:
        raise click.UsageError("--assume-defaults is for a Flow server: rackcron shows all")
    options = ImportOptions(
        source=source,
        exact=not flow,
        owner=owner,
        select=select,
        anchor_from_next_run=flow if anchor_from_next_run is None else anchor_from_next_run,
        assume_defaults=assumed,
        schemas=schemas,
    )
    imported = import_tree(state, options)
    if flow:  # the racks come from --inventory, which the user keeps
        imported.files = {p: t for p, t in imported.files.items() if p.startswith("schedules/")}
    _write(outdir, imported)
    _report(outdir, imported, flow, owner)


def _operations(given: tuple[str, ...]) -> frozenset[str]:
    """The operations --assume-defaults names (commas or repeats; ``all``)."""
    names = {n.strip() for value in given for n in value.split(",") if n.strip()}
    unknown = sorted(names - {*_OPERATIONS, "all"})
    if unknown:
        raise click.BadParameter(
            f"unknown operation {unknown[0]!r}; expected {', '.join(_OPERATIONS)} or all",
            param_hint="--assume-defaults",
        )
    return frozenset(_OPERATIONS if "all" in names else names)


def _check_outdir(outdir: Path) -> None:
    if outdir.exists() and (not outdir.is_dir() or any(outdir.iterdir())):
        raise click.BadParameter(
            f"{terminal(str(outdir))} is not an empty folder: import writes a new tree",
            param_hint="OUTDIR",
        )


def _read(
    database_url: str | None, server: Server | None, inventory: Path | None, owner: str
) -> tuple[State, bool, str]:
    """The source's state, whether it is a Flow server, and its name for the files."""
    from rackcron.reconciler.remote import RemoteStore
    from rackcron.reconciler.state import store_state
    from rackcron.reconciler.trees import desired_state

    if server is None:
        if inventory is not None:
            raise click.UsageError("--inventory is for a Flow server: the store has its racks")
        service = open_service(database_url)
        try:
            with service.transaction(write=False) as ops:
                return store_state(ops), False, "the store"
        finally:
            service.close()
    declared = desired_state(inventory, None, owner)[0] if inventory is not None else State()
    remote = RemoteStore(server.channel())
    state = remote.state(declared)
    if remote.extended:
        if inventory is not None:
            raise click.UsageError(
                "--inventory is for a Flow server: this one shows its racks (rackcron.v1.Reconciler)"
            )
        return state, False, f"the rackcron server {server.address}"
    if inventory is None:
        raise click.UsageError(
            "this server (Flow, or rackcron without --grpc-reconciler) shows no racks: give"
            " --inventory PATH, the tree that declares them"
        )
    return state, True, f"the Flow server {server.address}"


def _write(outdir: Path, imported: Imported) -> None:
    """Write the files into ``outdir`` at once: into a folder beside it first, which then
    takes its place, so an error leaves no half-written tree."""
    parent = outdir.resolve().parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        if outdir.exists():
            mode = stat.S_IMODE(outdir.stat().st_mode)
        else:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o777 & ~umask
        staging = Path(tempfile.mkdtemp(prefix=f".{outdir.name}.", dir=parent))
        try:
            staging.chmod(mode)  # as a folder made here would be, not mkdtemp's 0700
            for relative, content in imported.files.items():
                path = staging / relative
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(content, encoding="utf-8")
            if outdir.exists():
                outdir.rmdir()  # empty: checked
            os.replace(staging, outdir)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
    except OSError as exc:
        raise click.FileError(str(outdir), exc.strerror) from None


def _report(outdir: Path, imported: Imported, flow: bool, owner: str) -> None:
    counts = imported.counts
    written = [
        f"{counts['schedules']} schedules ({counts['incomplete']} incomplete)",
        *([] if flow else [f"{counts['racks']} racks", f"{counts['nvl_domains']} NVLink domains"]),
        *([] if flow else [f"{counts['freezes']} freezes"]),
    ]
    click.echo(
        f"Imported {', '.join(written)} into {terminal(str(outdir))}"
        f" ({len(imported.files)} files).",
        err=True,
    )
    click.echo(
        f"Scopes: {counts['scopes_read']} read, {counts['scopes_written']} written,"
        f" {counts['scopes_commented']} kept as comments.",
        err=True,
    )
    if counts["paused_fired"]:
        click.echo(
            f"{counts['paused_fired']} one-time schedules have fired: written paused.", err=True
        )
    if counts["skipped_other_owners"]:
        click.echo(
            f"{counts['skipped_other_owners']} objects that other repositories manage were"
            " left out: to import one's, give its name with --owner.",
            err=True,
        )
    if counts["unselected_owned"]:
        click.echo(
            f"warning: --select left out {counts['unselected_owned']} schedules that"
            f" {terminal(owner)} manages: applied with --owner {terminal(owner)}, this tree would"
            " delete them. Apply it as another --owner, or import without --select.",
            err=True,
        )
    for note in imported.notes:
        click.echo(f"warning: {terminal(note)}", err=True)
