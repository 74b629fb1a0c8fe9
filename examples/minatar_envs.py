"""MinAtar's games (Young and Tian 2019) as gymnasium envs seed can name:

  ./run_local.sh classic vtrace 2 4 \
      --gin_bindings="EnvConfig.name='gym:examples.minatar_envs:MinAtar/Breakout-v1'"

MinAtar's package registers its ids only when `register_envs()` is called; importing
this module calls it, which is what a `gym:<module>:<id>` name asks of a module.
Observations are 10 x 10 x C bool grids, channels last: the generic configs pick the
small conv torso for them (seed.agents.common.torsos). Needs `pip install minatar`.
"""
from minatar import gym as minatar_gym

minatar_gym.register_envs()
