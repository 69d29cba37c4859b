"""Fail when any two modules of rackcron import each other, however indirectly.

import-linter's ``acyclic_siblings`` compares the children of each package, so it does not
see a package's ``__init__`` and one of its own modules importing each other; this check
does: every module is a node (a package is its ``__init__``), every import an edge
(imports inside functions count, those under ``TYPE_CHECKING`` do not), and each strongly
connected component of more than one module is a cycle. Run by ``make lint``::

    python scripts/check_cycles.py      # exit 1 and list the cycles, if any
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping


def cycles(edges: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The groups of modules that import each other (Tarjan's algorithm, iterative), each
    sorted, in sorted order; ``edges`` maps a module to the modules it imports."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    graph = {node: sorted(set(targets)) for node, targets in edges.items()}
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, child = work.pop()
            if child == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            targets = graph.get(node, [])
            if child < len(targets):
                work.append((node, child + 1))
                target = targets[child]
                if target not in index:
                    work.append((target, 0))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return sorted(found)


def main() -> int:
    import grimp

    graph = grimp.build_graph("rackcron", exclude_type_checking_imports=True)
    edges = {m: graph.find_modules_directly_imported_by(m) for m in graph.modules}
    found = cycles(edges)
    for group in found:
        print("import cycle: " + " <-> ".join(group), file=sys.stderr)
    print(f"{len(graph.modules)} modules, {len(found)} import cycles")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
