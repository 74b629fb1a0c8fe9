"""Running on clusters: seed-job, the entry point of each replica (seed.cluster.job)."""
