"""Learner-side loss functions (TensorFlow); import submodules explicitly."""
