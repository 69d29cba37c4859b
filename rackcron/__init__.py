"""rackcron: rack operations scheduled as code.

The core package: timing math, component filters, domain models, the SQL store
and the service that implements every rule of the task-schedule contract.
Fronts (reconciler, dispatcher, gRPC shim) build on it; it never imports them.
"""

#: The one source of rackcron's version: pyproject.toml reads it (``[tool.setuptools.dynamic]``),
#: ``rackcron --version`` prints it and a plan records it. Released versions are listed in
#: CHANGELOG.md; ``.devN`` marks a checkout between releases.
__version__ = "0.2.0.dev0"

__all__ = ["__version__"]
