"""GitOps front: declared YAML state -> the rackcron service.

So far: reading a declared tree with positions (``yamlsource``), validating it
against the JSON Schemas (``schema``) and the core's rules (``declared``), with
diagnostics at file:line:col (``diagnostics``); ``validate`` runs the stages.
Plan and apply build on the declared state.
"""

from reconciler.declared import Declared, DeclaredSchedule
from reconciler.diagnostics import Diagnostic
from reconciler.validate import Validation, validate_sources, validate_tree

__all__ = [
    "Declared",
    "DeclaredSchedule",
    "Diagnostic",
    "Validation",
    "validate_sources",
    "validate_tree",
]
