"""Actor process: k envs, one stream to the learner. Never imports TensorFlow.

  python -m seed.actors.main --actor_id=0 --num_envs=4 --gin_file=gin/toy/vtrace.gin
  SEED_SERVER_ADDRESS=learner:8686 SEED_ACTOR_ID=3 SEED_ENV=Catch seed-actor

Every flag may also come from SEED_<FLAG> (see seed.flag_env); the token from
--auth_token_file or SEED_AUTH_TOKEN, never from the command line.
"""
import dataclasses
import logging
import sys

from absl import flags

from seed import flag_env, malloc_tuning
from seed.actor import launch

FLAGS = flags.FLAGS
flags.DEFINE_string('server_address', 'localhost:8686', 'Learner host:port.')
flags.DEFINE_integer('actor_id', 0, 'Unique id of this actor process (>= 0; on Kubernetes '
                     'the actors Job\'s completion index).')
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
flags.DEFINE_string('heartbeat_file', None, 'Touch this file every 10 s while the actor '
                    'runs (stepping, or retrying a learner it lost); older than a minute, the '
                    'actor hangs (an env step that never returns): a liveness probe\'s signal.')
flags.DEFINE_string('tls_ca_file', None, 'PEM CA certificate: connect over TLS.')
flags.DEFINE_string('auth_token_file', None, 'File with the learner\'s shared token (or put '
                    'the token itself in SEED_AUTH_TOKEN).')


def main(argv):
  del argv
  malloc_tuning.keep_large_buffers()
  logging.getLogger().setLevel(logging.INFO)
  flags_given = launch.ActorFlags(**{field.name: getattr(FLAGS, field.name)
                                     for field in dataclasses.fields(launch.ActorFlags)})
  sys.exit(launch.launch(flags_given))


def run():
  flag_env.run(main, __name__)


if __name__ == '__main__':
  run()
