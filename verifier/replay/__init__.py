"""Exact replays, one module per method and side, named after the certifier's certifier/bounds/ modules."""
