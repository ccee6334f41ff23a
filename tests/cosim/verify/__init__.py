"""Tests of cosim.verify."""
