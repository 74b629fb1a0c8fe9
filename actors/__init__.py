"""The actor process: its main, its launch and its stream client, which steps k envs and
asks the learner for actions. Imports no TensorFlow."""
