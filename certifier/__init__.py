"""sigmacert: certified noise multipliers for DP-SGD with random allocation.

Paper: "Closed-Form Noise Calibration Against Membership Inference for
Random-Allocation DP-SGD" (arXiv 2610.09651). One paper concept per module:
closed_form (Section 3), exact (Theorem 4.1), rounding (Lemma C.5), ...
"""
__version__ = "0.1.0"
