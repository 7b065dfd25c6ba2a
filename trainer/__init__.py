"""Reference trainer for sigmacert: Algorithm 1 (DP-SGD with random allocation) driven only by a
verified certificate, NumPy models, the digits data set, and the linear-model membership audit."""
