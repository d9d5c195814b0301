"""Benchmarks of the host against the official MCP SDK and a bare ceiling: ``bench/run.py``."""
