"""The atlas directory. Every file is written atomically (sigmacert.files), so an
interrupted run leaves each certificate and the index either old or new, never torn:

    DIR/public.pem                   the issuer's public key (verify with sigmacert-verify --key)
    DIR/certificates/M{M}_E{E}_L{lambda}.json
    DIR/index.json                   sigmacert.atlas.index
    DIR/heatmap.svg                  sigmacert.atlas.heatmap
"""
from __future__ import annotations

import hashlib
import json
import os

from sigmacert.atlas.cells import Cell
from sigmacert.files import TMP_PREFIX, write_atomic

MAX_CERTIFICATE_BYTES = 16 * 1024 * 1024  # a larger file is not ours: the cell is recomputed


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class AtlasStore:
    """Paths and reads/writes of one atlas directory."""

    def __init__(self, root: str):
        self.root = os.path.abspath(root)
        self.index_path = os.path.join(self.root, "index.json")

    def path(self, relative: str) -> str:
        return os.path.join(self.root, relative)

    def prepare(self, public_pem: bytes) -> None:
        """Create the directories, drop temporary files a killed run left, write the public key."""
        certs = self.path("certificates")
        os.makedirs(certs, exist_ok=True)
        for d in (self.root, certs):
            for name in os.listdir(d):
                if name.startswith(TMP_PREFIX):
                    os.unlink(os.path.join(d, name))
        write_atomic(self.path("public.pem"), public_pem)

    def existing(self, cell: Cell) -> bytes | None:
        """The bytes of the cell's certificate file, if there is one of plausible size."""
        try:
            with open(self.path(cell.file), "rb") as f:
                data = f.read(MAX_CERTIFICATE_BYTES + 1)
        except FileNotFoundError:
            return None
        return data if len(data) <= MAX_CERTIFICATE_BYTES else None

    def write_certificate(self, cell: Cell, data: bytes) -> str:
        """Write the signed certificate; return its SHA-256."""
        write_atomic(self.path(cell.file), data)
        return sha256(data)

    def previous_costs(self) -> dict[str, dict]:
        """SHA-256 -> {"seconds", "cpu_seconds"} from an earlier run's index (the cost of reused cells)."""
        try:
            with open(self.index_path, "rb") as f:
                cells = json.load(f)["cells"]
            return {c["sha256"]: {"seconds": c.get("seconds"), "cpu_seconds": c.get("cpu_seconds")}
                    for c in cells if c.get("sha256")}
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return {}

    def write_index(self, document: dict) -> None:
        write_atomic(self.index_path, (json.dumps(document, indent=1) + "\n").encode())
