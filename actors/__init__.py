"""The actor process entry point (installed as seed.actors). Imports no TensorFlow."""
