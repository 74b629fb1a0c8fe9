"""Learning tests: an agent reaches a stated return on a small env within a stated number of frames, with fixed seeds."""
