"""Measuring ember: the crash test (and its peers), planner and BFCL evaluation, the vendored
scorer. The runtime's layers never import this package."""
