"""The numerical exact TV and every floating-point quantity: estimates that guide, never a proof.

closed_form (Section 3), one_epoch + exact + laplace_moments + tv_laplace (Theorem 4.1; second routes
log_convolution, tv_vfft, series), schemes (random allocation and the fixed-bins reduction),
tradeoff (B.4), montecarlo.
"""
