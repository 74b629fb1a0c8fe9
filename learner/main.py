"""Learner process: flags -> gin -> build -> serve and train.

  python -m seed.learner.main --logdir=runs/x --gin_file=gin/toy/vtrace.gin
  SEED_LOGDIR=runs/x SEED_GIN_FILE=gin/toy/vtrace.gin seed-learner

Every flag may also come from SEED_<FLAG> (see seed.process.flag_env); the token from
--auth_token_file or SEED_AUTH_TOKEN, never from the command line.
"""
from seed import settings
from seed.process import flag_env

# Each flag is a setting of seed.settings.LEARNER (name, default, help, check).
flag_env.define(settings.LEARNER, __name__)


def _launch(values, flags_text: str) -> int:
  # Imported once the flags parsed: --help and a refused flag answer without it.
  from . import launch  # pylint: disable=g-import-not-at-top
  return launch.launch(launch.LearnerFlags(**values), flags_text)


def run():
  flag_env.run_process(settings.LEARNER, __name__, _launch)


if __name__ == '__main__':
  run()
