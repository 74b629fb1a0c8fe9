"""Actor process: k envs, one stream to the learner. Never imports TensorFlow.

  python -m seed.actors.main --actor_id=0 --num_envs=4 --gin_file=gin/toy/vtrace.gin
  SEED_SERVER_ADDRESS=learner:8686 SEED_ACTOR_ID=3 SEED_ENV=Catch seed-actor

Every flag may also come from SEED_<FLAG> (see seed.process.flag_env); the token from
--auth_token_file or SEED_AUTH_TOKEN, never from the command line.
"""
from seed import settings
from seed.process import flag_env

from . import launch

# Each flag is a setting of seed.settings.ACTOR (name, default, help, check).
flag_env.define(settings.ACTOR, __name__)


def _launch(values, flags_text: str) -> int:
  del flags_text  # An actor writes no run directory.
  return launch.launch(launch.ActorFlags(**values))


def run():
  flag_env.run_process(settings.ACTOR, __name__, _launch)


if __name__ == '__main__':
  run()
