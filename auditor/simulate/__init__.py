"""Simulated InfiniBand fabrics (ibsim) on which the real infiniband-diags tools can run."""
