"""Generated Python modules for the Flow wire contract (``schemas/proto/``).

Everything under ``v1/`` named ``*_pb2*`` is written by ``scripts/gen_proto.py`` (``make proto``)
and checked in; do not edit it by hand. Import as ``from rackcron.wire.proto.v1 import flow_pb2,
flow_pb2_grpc``.
"""
