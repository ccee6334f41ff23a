"""Tests of cosim.perf."""
