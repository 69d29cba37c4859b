"""Package ``v1`` of the Flow wire contract: ``flow_pb2`` (messages) and ``flow_pb2_grpc`` (service)."""
