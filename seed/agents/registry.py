"""What an agent package declares about itself, read without TensorFlow.

Each agent folder's `__init__.py` lists `REGISTERED`: the names it answers to, where its
agent class lives (imported on first use: it brings TensorFlow) and its gin-bound
config class (in the package's `config`, which imports no TensorFlow). `seed.agents`
collects them from every folder, so adding an agent touches its folder only.
"""
import dataclasses


@dataclasses.dataclass(frozen=True)
class Registration:
  """One agent name.

  name: what --agent and gin/<env>/<name>.gin use. agent: 'module:Class'.
  config: the config dataclass's name, bound in gin as `<config>.<field>`.
  multi_seed: trains several seeds in one learner (--num_seeds; a num_seeds field).
  """
  name: str
  agent: str
  config: str
  multi_seed: bool = False
