"""The learner process: its main, its launch and the parts its runtime wires together
(README, "Layout", says which name each folder installs as)."""
