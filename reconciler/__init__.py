"""GitOps front: declared YAML state -> the rackcron service.

So far: reading the declared documents (``documents``). Plan, apply, schema
validation with file:line diagnostics and PR rendering build on it.
"""

from reconciler.documents import Declared, DeclaredSchedule, load_tree

__all__ = ["Declared", "DeclaredSchedule", "load_tree"]
