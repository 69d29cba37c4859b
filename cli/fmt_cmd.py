"""``rackcron fmt``: lay a tree's YAML out as rackcron writes it."""

from __future__ import annotations

import difflib
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import click

from rackcron.domain.escape import terminal
from rackcron.domain.words import counted
from rackcron.reconciler.formatting import Unfaithful, format_text
from rackcron.reconciler.yamlsource import MAX_FILE_BYTES, TreeBudget, read_documents, tree_scale

__all__ = ["fmt"]

_SUFFIXES = (".yaml", ".yml")


@click.command("fmt")
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option(
    "--check",
    is_flag=True,
    help="Change nothing: print the diff of each file that would change, and exit 1 if any"
    " would (for CI and pre-commit).",
)
def fmt(paths: tuple[Path, ...], check: bool) -> None:
    """Lay out the YAML files of PATHS (default: the current directory) as rackcron writes
    them: two-space indentation, list items two in under their key, `---` before every
    document, double quotes, and a document's keys in its schema's order.

    Only the layout changes: comments, anchors and aliases, flow-style lists, and every
    value as spelled (`60m` stays `60m`) are kept, and a file that cannot be written back
    saying exactly what it says is refused at its line, and left as it is. Symbolic links
    and files in hidden folders are not touched. Exits 1 when a file is refused, or with
    --check when a file would change.

    Example: rackcron fmt examples/fleet

    Example: rackcron fmt --check examples/fleet
    """
    try:
        budget = TreeBudget.scaled(tree_scale(os.environ))
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    files = sorted(set(_files(paths or (Path("."),))))
    changed = refused = 0
    for path in files:
        try:
            before = _read(path, budget)
            after = _formatted(before)
        except Unfaithful as exc:
            click.echo(
                terminal(f"{path}:{exc.line}: error: {exc.message}; the file is left as it is"),
                err=True,
            )
            refused += 1
            continue
        if after == before:
            continue
        changed += 1
        if check:
            _show_diff(path, before, after)
        else:
            _write(path, after)
            click.echo(f"formatted {terminal(str(path))}")
    verb = "would change" if check else "formatted"
    click.echo(
        f"{counted(len(files), 'file')}: {changed:,} {verb},"
        f" {len(files) - changed - refused:,} already formatted"
        + (f", {refused:,} refused" if refused else ""),
        err=check,
    )
    if refused or (check and changed):
        raise SystemExit(1)


def _files(paths: tuple[Path, ...]) -> Iterator[Path]:
    """The regular YAML files of ``paths``: given, or under a given folder outside hidden
    folders (links are never followed or written through)."""
    for path in paths:
        if path.is_symlink():
            continue
        if path.is_file():
            yield path
            continue
        for folder, dirs, names in os.walk(path):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            for name in names:
                found = Path(folder) / name
                if name.endswith(_SUFFIXES) and not name.startswith(".") and _regular(found):
                    yield found


def _regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _read(path: Path, budget: TreeBudget) -> str:
    """The file's text, read as ``validate`` reads it (its size, syntax and value limits).

    :raises Unfaithful: it cannot be read so, at the first problem's line.
    """
    try:
        with open(path, "rb") as handle:
            content = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise Unfaithful(1, f"cannot be read: {exc.strerror}") from None
    if len(content) > MAX_FILE_BYTES:
        raise Unfaithful(1, f"larger than {MAX_FILE_BYTES} bytes")
    _, problems = read_documents(str(path), content, budget)
    errors = [p for p in problems if p.severity == "error"]
    if errors:
        raise Unfaithful(errors[0].line, errors[0].message)
    return content.decode("utf-8")


def _formatted(text: str) -> str:
    """``format_text``, and no larger than ``validate`` reads.

    :raises Unfaithful: it cannot be laid out, or would grow past the limit.
    """
    try:
        formatted = format_text(text)
    except Unfaithful:
        raise
    except Exception as exc:  # what ruamel.yaml cannot do: this file only, never the rest
        raise Unfaithful(1, f"cannot be laid out ({type(exc).__name__}: {exc})") from None
    if len(formatted.encode()) > MAX_FILE_BYTES:
        raise Unfaithful(1, f"laid out, it would be larger than {MAX_FILE_BYTES} bytes")
    return formatted


def _show_diff(path: Path, before: str, after: str) -> None:
    lines = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile=str(path),
        tofile=f"{path} (formatted)",
    )
    for line in lines:
        click.echo(terminal(line.rstrip("\n")))


def _write(path: Path, text: str) -> None:
    """Replace ``path``'s content at once (a file beside it, renamed over it), keeping its
    permissions."""
    mode = stat.S_IMODE(os.stat(path).st_mode)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
