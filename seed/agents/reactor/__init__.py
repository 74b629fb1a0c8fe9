"""Reactor (Gruslys et al., 2018): beta-LOO policy gradient, distributional Retrace,
prioritized sequence replay."""
