"""How a stream reaches the learner besides its messages (seed.protocol has those): the
Unix socket's transport for actors of the learner's host, unix: addresses, TLS and the
actors' token, and the refusals' log. No TensorFlow."""
