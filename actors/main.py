"""Actor process: k envs, one stream to the learner. Never imports TensorFlow.

  python -m seed.actors.main --actor_id=0 --num_envs=4 --gin_file=gin/toy/vtrace.gin
  SEED_SERVER_ADDRESS=learner:8686 SEED_ACTOR_ID=3 SEED_ENV=Catch seed-actor

Every flag may also come from SEED_<FLAG> (see seed.flag_env); the token from
--auth_token_file or SEED_AUTH_TOKEN, never from the command line.
"""
import asyncio
import json
import logging
import signal
import sys

import grpc
from absl import flags

from seed import config, flag_env, malloc_tuning, security
from seed.actor.client import (Actor, ConnectionMisconfigured, LearnerRefused, actor_stats,
                               make_envs)
from seed.envs import EnvConfig, env_spec

FLAGS = flags.FLAGS
flags.DEFINE_string('server_address', 'localhost:8686', 'Learner host:port.')
flags.DEFINE_integer('actor_id', 0, 'Unique id of this actor process (>= 0; on Kubernetes '
                     'the StatefulSet ordinal).')
flags.DEFINE_string('env', None, 'Environment name (e.g. Catch, atari:Pong); binds '
                    'EnvConfig.name over the gin files and bindings.')
flags.DEFINE_integer('num_envs', 4, 'Envs stepped by this process (k).')
flags.DEFINE_integer('num_splits', 1, 'Groups the k envs are split into (at most k), one '
                     'stream each: the actor steps one group while another waits for actions.')
flags.DEFINE_multi_string('gin_file', [], 'Gin config files (only env bindings apply here).')
flags.DEFINE_multi_string('gin_bindings', [], 'Gin bindings.')
flags.DEFINE_bool('eval', False, 'Evaluation actor: its envs act with the evaluation policy, '
                  'are not trained on, and log eval/episode_return.')
flags.DEFINE_integer('seed', 0, 'Base seed; env i of actor a uses seed + 1000·a + i.')
flags.DEFINE_integer('max_steps', 0, 'Stop after this many steps of all k envs (0: never).')
flags.DEFINE_string('stats_file', None, 'Write steps and round-trip latency percentiles '
                    'here (JSON) on exit.')
flags.DEFINE_string('tls_ca_file', None, 'PEM CA certificate: connect over TLS.')
flags.DEFINE_string('auth_token_file', None, 'File with the learner\'s shared token (or put '
                    'the token itself in SEED_AUTH_TOKEN).')


def main(argv):
  del argv
  malloc_tuning.keep_large_buffers()
  logging.getLogger().setLevel(logging.INFO)
  try:  # A config mistake: say it in one line, no traceback, before any env starts.
    flag_env.require(FLAGS.server_address, 'server_address', "the learner's host:port")
    security.check_address(FLAGS.server_address, '--server_address')
    if FLAGS.actor_id < 0:
      raise ValueError(f'--actor_id={FLAGS.actor_id}; expected an integer >= 0, unique '
                       'among the actors of this learner')
    credentials = security.channel_credentials(FLAGS.tls_ca_file)
    auth_token = security.read_token(FLAGS.auth_token_file)
    config.parse_gin(FLAGS.gin_file, FLAGS.gin_bindings, skip_unknown=True, env_name=FLAGS.env)
    env_config = EnvConfig()
    envs = make_envs(env_config.make, FLAGS.num_envs, FLAGS.actor_id, FLAGS.seed)
  except (ValueError, FileNotFoundError) as e:
    logging.error('actor %d: %s', FLAGS.actor_id, e)
    sys.exit(2)
  actor = Actor(envs, env_spec(envs[0]), env_config.name, FLAGS.actor_id, FLAGS.server_address,
                num_splits=min(FLAGS.num_splits, FLAGS.num_envs), evaluation=FLAGS.eval,
                max_steps=FLAGS.max_steps, credentials=credentials, auth_token=auth_token)
  try:
    asyncio.run(_run(actor))
  except LearnerRefused as e:
    what = ('the learner refused our auth token' if e.code == grpc.StatusCode.UNAUTHENTICATED
            else 'the learner refused us')
    logging.error('actor %d: %s: %s', FLAGS.actor_id, what, e)
    sys.exit(2)
  except ConnectionMisconfigured as e:
    logging.error('actor %d: cannot connect: %s', FLAGS.actor_id, e)
    sys.exit(2)
  stats = actor_stats(actor)
  logging.info('actor %d stopped after %d steps, %d episodes; round trip p50 %.2f ms, '
               'p99 %.2f ms', FLAGS.actor_id, stats['steps'], stats['episodes'],
               stats['round_trip_ms_p50'], stats['round_trip_ms_p99'])
  if FLAGS.stats_file:
    with open(FLAGS.stats_file, 'w') as f:
      json.dump(stats, f)


async def _run(actor: Actor) -> None:
  loop = asyncio.get_running_loop()
  for signum in (signal.SIGINT, signal.SIGTERM):
    loop.add_signal_handler(signum, actor.stop)
  await actor.run()


def run():
  flag_env.run(main, __name__)


if __name__ == '__main__':
  run()
