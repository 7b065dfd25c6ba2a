"""The Dask relay's entry point: `python -m service.relay TASK MEMORY PARENT` (service.sandbox protocol).

A fresh interpreter without the signing key that is the Dask client of one job (service.cluster). It is
its own module so that the functions it submits are pickled by reference to service.cluster (a function
of `__main__` would travel by value)."""
from __future__ import annotations

import sys

from service.cluster import RELAY_TASKS
from service.sandbox import child

if __name__ == "__main__":
    sys.exit(child(sys.argv[1:], RELAY_TASKS))
