"""Tests of cosim.sim."""
