"""Benchmarks: throughput, latency, replay sampling; peers side by side."""
