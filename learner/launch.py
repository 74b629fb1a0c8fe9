"""Starting a learner from its flags: check them, load TensorFlow, parse gin, build, serve.

`learner/main.py` only defines the flags (from seed.settings.LEARNER) and hands their
values over as a `LearnerFlags`; everything a start does lives here, in order, so it
reads top to bottom.
"""
import dataclasses
import logging
import os
from typing import List

from seed import agents, config, settings
from seed.transport import security, unix_address, unix_socket
from seed.inference.server import StreamLimits
from seed.inputs import mixture_spec
from seed.process import cpu_quota
from seed.process.exit_codes import BAD_SETTINGS
from seed.run_dir import status
from seed.run_dir import layout

from . import run_lock, tuning_report

_log = logging.getLogger(__name__)



# The learner's flag values, named as the flags are (seed.settings.LEARNER has each).
LearnerFlags = settings.values_class('LearnerFlags', settings.LEARNER)


def _seed_bindings(agent: str, seed: int) -> List[str]:
  """--seed as a binding of the agent's config seed (network init, its sampling and
  exploration streams)."""
  return [f'{agents.CONFIG_CLASSES[agent]}.seed = {seed}']


def _num_seeds_bindings(agent: str, num_seeds: int) -> List[str]:
  """--num_seeds as a binding of the agent's config; ValueError where it cannot be."""
  if num_seeds == 1:
    return []
  if agent not in agents.MULTI_SEED_AGENTS:
    raise ValueError(f'--num_seeds={num_seeds}: agent {agent!r} trains one seed per learner; '
                     f'agents that train several: {", ".join(agents.MULTI_SEED_AGENTS)}')
  return [f'{agents.CONFIG_CLASSES[agent]}.num_seeds = {num_seeds}']


def launch(flags: LearnerFlags, flags_text: str) -> int:
  """Runs a learner until it stops; returns the process exit code.

  Settings and files are checked before TensorFlow loads and before anything
  listens. `flags_text` (absl's flags_into_string) is saved into the run directory.
  """
  try:
    settings.check(settings.LEARNER, flags)
    auth_token = security.read_token(flags.auth_token_file)
    credentials = security.server_credentials(flags.tls_cert_file, flags.tls_key_file)
    security.check_listen_address(flags.server_address, flags.tls_cert_file, auth_token)
    if flags.local_socket:
      unix_address.check_path(flags.local_socket, '--local_socket')
      unix_socket.remove_stale_socket(flags.local_socket)  # before TensorFlow loads
    limits = StreamLimits.of(flags)
    if flags.hypertune_metric:  # A trial that cannot report must not train to its end.
      tuning_report.check_metric_file(flags.hypertune_metric)
    if flags.replay_parameters:
      mixture_spec.parse_json(flags.replay_parameters)  # Its shares are checked once built.
    if flags.eval_video and flags.eval_interval_s > 0:
      from seed.evaluation import video  # pylint: disable=g-import-not-at-top
      try:
        video.check_available()
      except video.VideoUnavailable as e:
        raise ValueError(f'--eval_video: {e}') from e
    if flags.agent not in agents.AGENTS:
      raise ValueError(f'--agent={flags.agent!r}; expected one of {", ".join(agents.AGENTS)} '
                       '(the agents seed/agents/ registers)')
    seed_bindings = _seed_bindings(flags.agent, flags.seed)
    num_seeds_bindings = _num_seeds_bindings(flags.agent, flags.num_seeds)
    # Files that exist and gin that parses, before TensorFlow loads and the run directory
    # is made: what they bind is checked once the agent has registered it.
    config.check_syntax(flags.gin_file, flags.gin_bindings)
  except (ValueError, FileNotFoundError) as e:
    _log.error('%s', e)
    return BAD_SETTINGS
  finished = status.read_finished(flags.logdir)
  if status.covers(finished, flags.max_env_frames, flags.target_return):
    # A restart (a Kubernetes pod, a Slurm requeue) of a run that has ended: nothing to
    # train. Its actors were told Finished when it ended; any that missed it are told now.
    _log.info('%s holds a finished run (%s, %d env frames) that meets this launch\'s goal; '
              'answering actors that it is over for %.0f s (--finished_notice_s), then '
              'exiting 0', flags.logdir, layout.FINISHED_JSON, finished['env_frames'],
              flags.finished_notice_s)
    from . import finished_notice  # pylint: disable=g-import-not-at-top
    return finished_notice.serve(flags, finished, auth_token, credentials)
  os.makedirs(flags.logdir, exist_ok=True)
  lock = run_lock.RunLock(flags.logdir, flags.run_lock_stale_s, on_lost=_exit_at_once)
  try:
    lock.acquire()
  except run_lock.RunDirectoryInUse as e:
    _log.error('%s', e)
    return BAD_SETTINGS
  try:
    return _build_and_run(flags, flags_text, auth_token, credentials, limits, seed_bindings,
                          num_seeds_bindings)
  finally:
    lock.release()


def _exit_at_once() -> None:
  """Another learner owns the run directory now: no checkpoint may follow."""
  logging.shutdown()
  os._exit(1)  # pylint: disable=protected-access


def _build_and_run(flags: LearnerFlags, flags_text: str, auth_token, credentials, limits,
                   seed_bindings, num_seeds_bindings) -> int:
  """Builds the learner on the run directory this process holds, and runs it."""
  # Under a container's CPU limit, pools sized from the node's cores are throttled.
  intra_op, inter_op, why = cpu_quota.thread_pools(flags.tf_intra_op_threads,
                                                    flags.tf_inter_op_threads)
  _log.info('TensorFlow threads: %s intra-op, %s inter-op (%s)', intra_op or 'its own',
            inter_op or 'its own', why)
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  # Must happen before TensorFlow runs anything (agent modules may, at import).
  tf.config.threading.set_intra_op_parallelism_threads(intra_op)
  tf.config.threading.set_inter_op_parallelism_threads(inter_op)
  from . import devices  # pylint: disable=g-import-not-at-top
  devices.split_cpu(flags.learner_devices)
  from .checkpoint import CheckpointReadError  # pylint: disable=g-import-not-at-top
  from .runtime import Learner, LearnerOptions  # pylint: disable=g-import-not-at-top
  try:
    agents.agent_class(flags.agent)  # Registers the agent's configurables before parsing.
    # --seed before the user's bindings: a binding of <Config>.seed wins over it.
    config.parse_gin(flags.gin_file, seed_bindings + list(flags.gin_bindings) + num_seeds_bindings,
                     env_name=flags.env)
  except (ValueError, FileNotFoundError) as e:
    _log.error('%s', e)
    return BAD_SETTINGS
  try:
    learner = Learner(LearnerOptions(
        **dataclasses.asdict(flags), limits=limits, auth_token=auth_token,
        credentials=credentials))
  except CheckpointReadError as e:
    _log.error('%s', e)
    return 1
  except (ValueError, ImportError) as e:
    # An unknown env, a config value out of range (gin bindings), or an env whose
    # package is missing (its message says how to install it).
    _log.error('%s', e)
    return BAD_SETTINGS
  config.write_run_config(flags.logdir, flags_text)
  _log.info('agent %s on %s (%s); resumed: %s', flags.agent, learner.env_name,
            learner.env_spec.describe(), learner.resumed)
  return learner.run()  # Learner.exit_code says which code means what.
