"""The learner process entry point (installed as seed.learner)."""
