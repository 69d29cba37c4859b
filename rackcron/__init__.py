"""rackcron: rack operations scheduled as code.

The core package: timing math, component filters, domain models, the SQL store
and the service that implements every rule of the task-schedule contract.
Fronts (reconciler, dispatcher, gRPC shim) build on it; it never imports them.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("rackcron")
except PackageNotFoundError:  # running from a source tree without install
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
