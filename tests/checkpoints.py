"""Run directories with a checkpoint, made without training: what tests of the tools that
read a run (test mode, seed diagnose) start from."""
import os

from tests.processes import REPO


def write_untrained_run(logdir, agent_name, gin_file):
  """A run directory as a learner leaves it, with a checkpoint of fresh weights."""
  # pylint: disable=g-import-not-at-top
  import gin
  from seed import agents, config
  from seed.learner.checkpoint import Checkpointer
  from seed.learner.counters import Counters
  from seed.envs import EnvConfig, env_spec
  from seed.run_dir.layout import RunDir
  # pylint: enable=g-import-not-at-top
  agents.register_gin_configurables(agent_name)
  with gin.unlock_config():
    gin.clear_config()
    config.parse_gin([os.path.join(REPO, gin_file)], [])
  env = EnvConfig().make(0)
  agent = agents.agent_class(agent_name)(env_spec=env_spec(env))
  env.close()
  agent.warm_up([1])
  Checkpointer(RunDir(str(logdir)).checkpoints, agent.checkpoint_items(), Counters()).save()
  config.write_run_config(str(logdir), f'--agent={agent_name}\n')
  with gin.unlock_config():
    gin.clear_config()  # Later tests build configs from gin's defaults.
  return str(logdir)
