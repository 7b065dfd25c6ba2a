"""The rigorous bounds: FLINT balls and exact integers, every certified number comes from here.

fixedpoint (exact integer probability polynomials), lognormal (cell masses of the step), lattice
(the multiscale lattice of method v2), upper_v1 (Lemma C.5), upper_v2, lower_v1, lower_v2
(data-processing lower bounds), gaussian_shift (M = 1), privacy (certified eps, TPR rows),
The automatic grids (floats only: their loss and cost models) are the planners of certifier.methods.
"""
