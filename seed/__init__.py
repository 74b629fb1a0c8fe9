"""seed: a SEED-style distributed reinforcement learning system.

Importing `seed` (or anything an actor uses: `seed.envs`, `seed.actor`,
`seed.proto`, `seed.protocol`) must never import TensorFlow.
"""
