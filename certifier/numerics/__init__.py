"""The numerical exact TV and every floating-point quantity: estimates that guide, never a proof.

closed_form (Section 3), one_epoch + exact + laplace_moments + tv_laplace (Theorem 4.1; second routes
log_convolution, tv_vfft, series), schemes (random allocation and the fixed-bins reduction),
tradeoff (B.4), montecarlo; the target kinds dp and tpr (docs/targets.md): profile (the privacy
profile and trade-off curve from the moment line), pair_routes, targets (exact values and sigma),
quick_bounds (proven closed forms: integer moments, RDP, Proposition B.2), montecarlo_profile.
"""
