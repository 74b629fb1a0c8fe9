"""Actor process: k envs, one stream to the learner. Never imports TensorFlow.

  python -m seed.actors.main --actor_id=0 --num_envs=4 --gin_file=gin/toy/vtrace.gin
  SEED_SERVER_ADDRESS=learner:8686 SEED_ACTOR_ID=3 SEED_ENV=Catch seed-actor

Every flag may also come from SEED_<FLAG> (see seed.process.flag_env); the token from
--auth_token_file or SEED_AUTH_TOKEN, never from the command line.
"""
import logging
import sys

from absl import flags

from seed import settings
from seed.process import cpu_affinity, flag_env, malloc_tuning
from seed.actor import launch

FLAGS = flags.FLAGS
# Each flag is a setting of seed.settings.ACTOR (name, default, help, check).
flag_env.define(settings.ACTOR, __name__)

def main(argv):
  del argv
  # Before anything starts a thread: the threads started later keep to these cores.
  cpu_affinity.pin_or_exit(FLAGS.cpu_cores)
  malloc_tuning.keep_large_buffers()
  logging.getLogger().setLevel(logging.INFO)
  flags_given = launch.ActorFlags(**flag_env.values(settings.ACTOR))
  sys.exit(launch.launch(flags_given))


def run():
  flag_env.run(main, __name__)


if __name__ == '__main__':
  run()
