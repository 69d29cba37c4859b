"""The GitOps front: a declared YAML tree -> a plan -> the store.

Read a tree with positions (``yamlsource``, bounded by ``listing`` and ``links``;
from git with ``git``), validate it against the JSON Schemas (``schema``) and the
core's rules (``declared``), with diagnostics at file:line:col (``diagnostics``);
``validate`` runs those stages. Then ``state`` builds the desired state, ``diff``
compares it with the store's into a ``plan`` (pure data), ``render`` prints it,
``apply`` runs it in one transaction (``remote`` through a Flow server instead),
``conflicts`` finds schedules that can collide, and ``sync`` keeps a store on a
git branch. The CLI enters through two modules: ``trees`` (a tree, from disk or a
git revision, to its desired state; a pull request's diff) and ``backend`` (plan
and apply on the store or a server, one interface).
"""

from rackcron.reconciler.declared import Declared, DeclaredSchedule
from rackcron.reconciler.diagnostics import Diagnostic
from rackcron.reconciler.validate import Validation, validate_sources, validate_tree

__all__ = [
    "Declared",
    "DeclaredSchedule",
    "Diagnostic",
    "Validation",
    "validate_sources",
    "validate_tree",
]
