"""The run directory: what a learner writes there and how the other processes read it
(the experiment runner, the Python API, test mode, the diagnostics, the launchers).
TensorFlow-free, but for `checkpoints`."""
