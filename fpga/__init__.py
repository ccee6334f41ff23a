"""Board shells, open place and route, timing triage and resource reports for the accelerator of :mod:`hw`."""
