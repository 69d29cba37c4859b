"""The Flow wire: the seam the fronts share.

Everything that turns rackcron's models into Flow's messages and back, and that
calls a Flow server, lives here, so the gRPC shim (serving ``v1.Flow``) and the
remote reconciler (``plan|apply --server``, calling it) meet here and never
import each other:

* ``proto/`` -- the modules generated from ``schemas/proto/`` (``make proto``);
* ``convert`` -- proto <-> domain, field by field, pure;
* ``client`` -- channels, a Flow client, and remote errors as the core's errors;
* ``metadata`` -- the audit trail's metadata (a claimed name, a reason), written by
  the client and read by the shim;
* ``token_scopes`` -- what a token may do, checked by the shim and read by a remote
  apply before its first step.

It imports the core and nothing of the fronts (the import contract in
``make lint`` holds it).
"""
