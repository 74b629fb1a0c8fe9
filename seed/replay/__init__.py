"""Replay storage: the unroll FIFO, prioritized sequence replay over a columnar ring,
stacked frames kept once, the sum tree, elite ranking and .npz files. What the learner
trains from, built on these, is seed.inputs."""
