"""The actor: steps k envs and asks the learner for actions. Never imports TensorFlow."""
