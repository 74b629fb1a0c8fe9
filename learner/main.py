"""Learner process: flags -> gin -> build -> serve and train.

  python -m seed.learner.main --logdir=runs/x --gin_file=gin/toy/vtrace.gin
  SEED_LOGDIR=runs/x SEED_GIN_FILE=gin/toy/vtrace.gin seed-learner

Every flag may also come from SEED_<FLAG> (see seed.process.flag_env); the token from
--auth_token_file or SEED_AUTH_TOKEN, never from the command line.
"""
import logging
import sys

from absl import flags

from seed import settings
from seed.process import cpu_affinity, flag_env, malloc_tuning

FLAGS = flags.FLAGS
# Each flag is a setting of seed.settings.LEARNER (name, default, help, check).
flag_env.define(settings.LEARNER, __name__)

def main(argv):
  del argv
  # Before anything starts a thread: the threads started later keep to these cores.
  cpu_affinity.pin_or_exit(FLAGS.cpu_cores)
  malloc_tuning.keep_large_buffers()
  logging.getLogger().setLevel(logging.INFO)
  from . import launch as learner_launch  # pylint: disable=g-import-not-at-top
  flags_given = learner_launch.LearnerFlags(**flag_env.values(settings.LEARNER))
  sys.exit(learner_launch.launch(flags_given, FLAGS.flags_into_string()))


def run():
  flag_env.run(main, __name__)


if __name__ == '__main__':
  run()
