"""Central inference: gRPC server, batcher, per-env state and unroll building."""
