"""Starting an actor from its flags: check them, make the envs, stream until stopped.

`actors/main.py` only defines the flags (from seed.settings.ACTOR) and hands their
values over as an `ActorFlags`. Never imports TensorFlow.
"""
import asyncio
import json
import logging
import os
import signal
from typing import Optional

import grpc

from seed import config, settings
from seed.process import event_loop
from seed.transport import security, unix_address
from seed.envs import EnvConfig
from seed.process.exit_codes import BAD_SETTINGS, LEARNER_LOST

from .client import (Actor, ConnectionMisconfigured, LearnerLost, LearnerRefused, actor_stats,
                     make_env_batches)

_log = logging.getLogger(__name__)


# The actor's flag values, named as the flags are (seed.settings.ACTOR has each).
ActorFlags = settings.values_class('ActorFlags', settings.ACTOR)


def launch(flags: ActorFlags) -> int:
  """Runs an actor until it stops (max_steps, a signal, the learner ending the run); returns
  the process exit code."""
  try:  # A config mistake: say it in one line, no traceback, before any env starts.
    if flags.heartbeat_file:
      _touch(flags.heartbeat_file)  # Alive while the envs are made, too.
    settings.check(settings.ACTOR, flags)
    if unix_address.is_local_address(flags.server_address):
      unix_address.check_actor_address(flags.server_address, flags.tls_ca_file)
    else:
      security.check_address(flags.server_address, '--server_address')
    credentials = security.channel_credentials(flags.tls_ca_file)
    auth_token = security.read_token(flags.auth_token_file)
    config.parse_gin(flags.gin_file, flags.gin_bindings, skip_unknown=True, env_name=flags.env)
    env_config = EnvConfig()
    batches = make_env_batches(env_config, flags.num_envs,
                               min(flags.num_splits, flags.num_envs), flags.actor_id, flags.seed)
  except (ValueError, OSError, ImportError) as e:  # ImportError: an env's package.
    _log.error('actor %d: %s', flags.actor_id, e)
    return BAD_SETTINGS
  first_seed = flags.seed + 1000 * flags.actor_id
  _log.info('actor %d: %d %s envs, seeds %d..%d, backend %s, event loop %s', flags.actor_id,
            flags.num_envs, env_config.name, first_seed, first_seed + flags.num_envs - 1,
            env_config.backend, event_loop.effective(flags.event_loop))
  actor = Actor(batches, env_config.name, flags.actor_id, flags.server_address,
                evaluation=flags.eval, max_steps=flags.max_steps, credentials=credentials,
                auth_token=auth_token, learner_lost_limit_s=flags.learner_lost_limit_s)
  try:
    event_loop.run(_run(actor, flags.heartbeat_file), flags.event_loop)
  except LearnerRefused as e:
    what = ('the learner refused our auth token' if e.code == grpc.StatusCode.UNAUTHENTICATED
            else 'the learner refused us')
    _log.error('actor %d: %s: %s', flags.actor_id, what, e)
    return BAD_SETTINGS
  except ConnectionMisconfigured as e:
    _log.error('actor %d: cannot connect: %s', flags.actor_id, e)
    return BAD_SETTINGS
  except LearnerLost as e:
    _log.error('actor %d: %s', flags.actor_id, e)
    return LEARNER_LOST
  finally:
    for envs in batches:  # EnvPool's threads, emulators' windows
      envs.close()
  stats = actor_stats(actor)
  _log.info('actor %d stopped after %d steps, %d episodes; round trip p50 %.2f ms, '
            'p99 %.2f ms', flags.actor_id, stats['steps'], stats['episodes'],
            stats['round_trip_ms_p50'], stats['round_trip_ms_p99'])
  if flags.stats_file:
    with open(flags.stats_file, 'w') as f:
      json.dump(stats, f)
  return 0


async def _run(actor: Actor, heartbeat_file: Optional[str]) -> None:
  loop = asyncio.get_running_loop()
  for signum in (signal.SIGINT, signal.SIGTERM):
    loop.add_signal_handler(signum, actor.stop)
  beat = asyncio.ensure_future(_heartbeat(heartbeat_file)) if heartbeat_file else None
  try:
    await actor.run()
  finally:
    if beat is not None:
      beat.cancel()


HEARTBEAT_S = 10.0


async def _heartbeat(path: str) -> None:
  """Touches `path` every HEARTBEAT_S from the actor's own event loop: an env step that
  never returns blocks the loop, and the file goes stale."""
  while True:
    try:
      _touch(path)
    except OSError as e:  # A full /tmp: the probe will say so.
      _log.warning('could not touch the heartbeat file %s: %s', path, e)
    await asyncio.sleep(HEARTBEAT_S)


def _touch(path: str) -> None:
  with open(path, 'a'):
    pass
  os.utime(path)
