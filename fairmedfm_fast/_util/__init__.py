"""Utilities of every floor: pandas imported on first use, thread pools, progress bars."""
