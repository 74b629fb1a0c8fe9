"""Cluster tests: containers (podman), Slurm, Kubernetes (kube play), Vertex AI (gcloud against a stand-in), hosts joined by network namespaces, TLS across them, seed-job."""
