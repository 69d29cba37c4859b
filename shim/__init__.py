"""The gRPC front: ``v1.Flow`` (wire-compatible with Flow) and ``rackcron.v1.Reconciler``.

* ``server`` -- the gRPC server: TLS, tokens, health, reflection, its thread pool;
* ``servicer`` -- each Flow RPC: convert the request, call the service, convert back;
* ``extras`` -- rackcron's own service, for what a remote plan needs beyond Flow;
* ``errors`` -- the one map from the core's errors to ``grpc.StatusCode``;
* ``tokens`` -- the token file: named tokens and their scopes;
* ``access`` -- the one table of the scope each RPC needs.

Conversion and the client are the wire seam (``rackcron.wire``), shared with the
remote reconciler.
"""
