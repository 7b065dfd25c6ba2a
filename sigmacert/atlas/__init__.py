"""The atlas: certified sigma over a grid of cells (M, E, lambda), computed on a Dask cluster.

Workers compute each cell's two-sided predicate (Appendix C.5 and the data-processing lower
side, via certifier.certify); the driver alone holds the private key, signs, and writes
DIR/certificates/, DIR/index.json and the heatmap. See docs/atlas.md.

    cells     the grid and its file names
    work      the functions the workers run (no key ever reaches them)
    store     the atlas directory: atomic writes, the index
    engine    submission, retries, resumption, signing
    cluster   a Dask client: an existing scheduler, or a local cluster on loopback
    progress  the live bar / one line per cell
    heatmap   sigma per (M, E), one panel per lambda
"""
from sigmacert.atlas.cells import Cell, grid_cells
from sigmacert.atlas.engine import run_atlas

__all__ = ["Cell", "grid_cells", "run_atlas"]
