"""Regenerate the checked-in Python modules for the Flow wire contract and rackcron's own service.

Each ``schemas/proto/v1/<name>.proto`` is compiled with grpcio-tools (the ``protoc`` it
bundles, so the output depends only on the installed grpcio-tools version) into the
package ``rackcron.wire.proto`` (the folder ``wire/proto/``)::

    schemas/proto/v1/flow.proto  ->  wire/proto/v1/flow_pb2.py
                                     wire/proto/v1/flow_pb2.pyi
                                     wire/proto/v1/flow_pb2_grpc.py
    schemas/proto/v1/reconciler.proto  ->  wire/proto/v1/reconciler_pb2*.py(i)
    schemas/proto/v1/rollouts.proto    ->  wire/proto/v1/rollouts_pb2*.py(i)

The include root is ``schemas/proto``, so the descriptor's file name stays ``v1/flow.proto``
(what server reflection reports). protoc's gRPC plugin then writes the absolute import
``from v1 import flow_pb2``, which only resolves with ``wire/proto`` on ``sys.path``; the one
post-processing step rewrites that line to ``from . import flow_pb2`` (likewise for each
proto). Nothing else is edited.

Usage::

    python scripts/gen_proto.py            # rewrite wire/proto/v1/*_pb2*
    python scripts/gen_proto.py --check    # exit 1 if the checked-in files are stale
    python scripts/gen_proto.py --out DIR  # write the package tree under DIR instead
"""

from __future__ import annotations

import argparse
import filecmp
import sys
import tempfile
from importlib import resources
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROTO_ROOT = ROOT / "schemas" / "proto"
STEMS = ("flow", "reconciler", "rollouts")
PROTOS = tuple(f"v1/{stem}.proto" for stem in STEMS)
PACKAGE = "wire/proto"  # the folder of the package rackcron.wire.proto
GENERATED = tuple(
    f"v1/{stem}_pb2{suffix}" for stem in STEMS for suffix in (".py", ".pyi", "_grpc.py")
)


def _imports(stem: str) -> tuple[str, str]:
    """The import line protoc's gRPC plugin writes for ``stem``, and what it becomes."""
    alias = f"v1_dot_{stem}__pb2"
    return f"from v1 import {stem}_pb2 as {alias}\n", f"from . import {stem}_pb2 as {alias}\n"


def generate(out_root: Path) -> list[Path]:
    """Compile every proto into ``out_root/<PACKAGE>/`` and return the generated files.

    :raises RuntimeError: protoc failed, or its output no longer has the import line we rewrite.
    """
    from grpc_tools import protoc  # imported here so --help works without grpcio-tools

    out = out_root / PACKAGE
    out.mkdir(parents=True, exist_ok=True)
    well_known = resources.files("grpc_tools") / "_proto"
    args = [
        "grpc_tools.protoc",
        f"--proto_path={PROTO_ROOT}",
        f"--proto_path={well_known}",
        f"--python_out={out}",
        f"--pyi_out={out}",
        f"--grpc_python_out={out}",
        *PROTOS,
    ]
    if protoc.main(args) != 0:
        raise RuntimeError(f"protoc failed: {' '.join(args[1:])}")
    for stem in STEMS:
        grpc_module = out / "v1" / f"{stem}_pb2_grpc.py"
        text = grpc_module.read_text(encoding="utf-8")
        absolute, relative = _imports(stem)
        if absolute not in text:
            raise RuntimeError(f"{grpc_module}: expected line not found: {absolute.strip()}")
        grpc_module.write_text(text.replace(absolute, relative), encoding="utf-8")
    return [out / name for name in GENERATED]


def stale_files(checked_in_root: Path = ROOT) -> list[str]:
    """Regenerate into a temporary directory; return the generated files that differ."""
    with tempfile.TemporaryDirectory() as tmp:
        generate(Path(tmp))
        return [
            name
            for name in GENERATED
            if not (checked_in_root / PACKAGE / name).is_file()
            or not filecmp.cmp(
                Path(tmp) / PACKAGE / name, checked_in_root / PACKAGE / name, shallow=False
            )
        ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="fail if the checked-in files are stale"
    )
    parser.add_argument(
        "--out", type=Path, default=ROOT, help="root to write the package tree under"
    )
    options = parser.parse_args(argv)
    if options.check:
        stale = stale_files()
        for name in stale:
            print(f"stale: {PACKAGE}/{name} (run `make proto`)", file=sys.stderr)
        return 1 if stale else 0
    for path in generate(options.out):
        print(path.relative_to(options.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
