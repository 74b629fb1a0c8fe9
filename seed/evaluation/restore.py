"""A run's agent at one of its checkpoints, in this process: for test mode
(seed.evaluate) and the diagnostics (seed diagnose).

The run's saved config (operative_config.gin, the agent of flags.txt) unless told
otherwise, parsed as strictly as its learner parsed it; the checkpoint refused in one
line when it does not fit that config's network (seed.run_dir.checkpoints).
"""
import os
from typing import Any, NamedTuple, Optional, Sequence, Tuple

import gin

from seed import config
from seed.run_dir.layout import RunDir


class RunConfig(NamedTuple):
  """Which agent a run trained and its gin config."""
  agent: str
  gin_files: Tuple[str, ...]
  gin_bindings: Tuple[str, ...] = ()
  env: Optional[str] = None  # binds EnvConfig.name over the gin files


def saved_config(logdir: str, agent: Optional[str] = None, gin_files: Sequence[str] = (),
                 gin_bindings: Sequence[str] = (), env: Optional[str] = None) -> RunConfig:
  """The run's saved agent and config where `agent` and `gin_files` do not say them;
  ValueError naming what is missing and how to give it."""
  if not os.path.isdir(logdir):
    raise ValueError(f'--logdir={logdir} is not a directory')
  run_dir = RunDir(logdir)
  if not gin_files:
    if not os.path.exists(run_dir.operative_config):
      raise ValueError(f'{run_dir.operative_config} does not exist; give the config with '
                       '--gin_file')
    gin_files = (run_dir.operative_config,)
  if not agent:
    agent = (config.read_saved_flags(logdir).get('agent') or [None])[-1]
    if not agent:
      raise ValueError(f'{run_dir.flags_txt} names no --agent; give --agent')
  return RunConfig(agent, tuple(gin_files), tuple(gin_bindings), env)


def parse_config(run_config: RunConfig) -> None:
  """Parses the run's gin config, in place of any parsed before in this process (tests,
  a second run). ValueError for an unknown agent or binding, SyntaxError for bad gin."""
  from seed import agents  # pylint: disable=g-import-not-at-top
  agents.register_gin_configurables(run_config.agent)
  with gin.unlock_config():
    gin.clear_config()
    config.parse_gin(list(run_config.gin_files), list(run_config.gin_bindings),
                     env_name=run_config.env)


class Restored(NamedTuple):
  """An agent with a checkpoint's weights."""
  agent: Any
  prefix: str  # the checkpoint's path prefix, RUN/ckpt/ckpt-N
  counters: Any  # seed.run_dir.checkpoints.SavedCounters


def restore_agent(agent_name: str, env_spec, num_envs: int, path: str,
                  flag: str = '--checkpoint') -> Restored:
  """Agent `agent_name` for `env_spec`, built from the parsed config, with the weights of
  the checkpoint `path` names (a prefix, or a run directory: its latest), acting as the
  run's training envs did at that checkpoint. ValueError naming `flag` when there is no
  such checkpoint or it does not fit the network."""
  # pylint: disable=g-import-not-at-top
  from seed import agents
  from seed.run_dir import checkpoints
  # pylint: enable=g-import-not-at-top
  agent = agents.agent_class(agent_name)(env_spec=env_spec)
  agent.warm_up([num_envs])  # Every variable, the optimizer's too, exists before reading.
  counters = checkpoints.counters_variable()
  prefix = checkpoints.resolve(path, flag)
  checkpoints.restore(checkpoints.learner_checkpoint(counters, agent.checkpoint_items()),
                      prefix)
  agent.on_restored()
  saved = checkpoints.SavedCounters(*(int(x) for x in counters.numpy()))
  # A sampling policy then acts as the run's training envs did at this checkpoint.
  agent.observe_env_frames(saved.env_frames)
  return Restored(agent, prefix, saved)


class RestoredRun(NamedTuple):
  """A run's agent at one of its checkpoints, with one env of the run's config."""
  run_config: RunConfig
  agent: Any
  env: Any  # open: the caller closes it
  prefix: str
  counters: Any  # seed.run_dir.checkpoints.SavedCounters


def restore_run(logdir: str, checkpoint: str = '', flag: str = '--logdir') -> RestoredRun:
  """The agent of the run in `logdir` at its latest checkpoint (or `checkpoint`), under
  the run's saved config, and one env of that config (seed 0). ValueError naming `flag`
  (what gave the path) for a checkpoint that is not there or does not fit."""
  from seed.envs import EnvConfig, env_spec  # pylint: disable=g-import-not-at-top
  run_config = saved_config(logdir)
  parse_config(run_config)
  env = EnvConfig().make(0)
  try:
    restored = restore_agent(run_config.agent, env_spec(env), 1, checkpoint or logdir, flag)
  except BaseException:
    env.close()
    raise
  return RestoredRun(run_config, restored.agent, env, restored.prefix, restored.counters)
