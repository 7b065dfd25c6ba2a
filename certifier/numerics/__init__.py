"""Floating-point numerics of the Gaussian pair (exact values with error estimates, never a proof)."""
