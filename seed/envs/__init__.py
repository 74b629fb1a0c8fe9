"""Environments for seed: names, factories, specs and the shared EnvConfig.

Actors import this package, so nothing under it may import TensorFlow.
"""
from seed.envs.registry import EnvConfig
from seed.envs.registry import env_spec
from seed.envs.registry import make_env
from seed.envs.registry import register
from seed.envs.registry import registered_names
from seed.envs.registry import UnknownEnvError
from seed.envs.spec import EnvSpec

__all__ = [
    'EnvConfig', 'EnvSpec', 'UnknownEnvError', 'env_spec', 'make_env',
    'register', 'registered_names',
]
