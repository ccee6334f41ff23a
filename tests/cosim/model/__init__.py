"""Tests of cosim.model."""
