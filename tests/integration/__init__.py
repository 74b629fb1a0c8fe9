"""Integration tests: real parts together on this host (a gRPC server on loopback, a child process, real envs), seconds each."""
