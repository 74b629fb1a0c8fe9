"""seed: a SEED-style distributed reinforcement learning system.

Importing `seed` (or anything an actor uses: `seed.envs`, `seed.actors`,
`seed.proto`, `seed.protocol`) must never import TensorFlow.
"""

# The Python API (seed/api.py), loaded on first use: `seed.train(...)` and
# `seed.evaluate(...)`. `seed.evaluate` is also the module `python -m seed.evaluate`
# runs; calling that module calls seed.api.evaluate.


def __getattr__(name):
  if name == 'train':
    from seed.api import train  # pylint: disable=g-import-not-at-top,import-outside-toplevel
    return train
  if name == 'evaluate':
    import importlib  # pylint: disable=g-import-not-at-top,import-outside-toplevel
    return importlib.import_module('seed.evaluate')
  raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
