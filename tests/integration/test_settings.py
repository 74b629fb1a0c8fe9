"""One table per process (seed/settings.py), and every surface derived from it agrees:
the absl flags, SEED_* variables, the checks a start runs, the values a launch gets,
README's tables, gcp/submit.py's and slurm/submit.sh's flag checks."""
import os
import subprocess
import sys
import types

from absl import flags
import pytest

from seed import settings
from seed.process import flag_env
from tests.processes import REPO, _env

ENTRY_POINTS = {'learner': 'seed.learner.main', 'actor': 'seed.actors.main',
                'job': 'seed.cluster.job'}
# absl's flag class for each kind.
FLAG_CLASSES = {'string': 'Flag', 'integer': 'Flag', 'float': 'Flag', 'bool': 'BooleanFlag',
                'enum': 'EnumFlag', 'multi_string': 'MultiFlag'}


def _defined(schema):
  flag_values = flags.FlagValues()
  flag_env.define(schema, 'probe', flag_values)
  flag_values(['probe'])
  return flag_values


@pytest.mark.parametrize('name', sorted(settings.SCHEMAS))
def test_the_flags_are_the_settings(name):
  schema = settings.SCHEMAS[name]
  flag_values = _defined(schema)
  assert sorted(flag_values) == sorted(s.name for s in schema)
  for setting in schema:
    flag = flag_values[setting.name]
    assert type(flag).__name__ == FLAG_CLASSES[setting.kind], setting.name
    default = list(setting.default) if setting.kind == 'multi_string' else setting.default
    # absl adds to a multi-value or enum flag's help (how to repeat it, the choices).
    assert flag.default == default and setting.help in flag.help, setting.name
    if setting.kind == 'enum':
      assert tuple(flag.parser.enum_values) == setting.choices


@pytest.mark.parametrize('name', sorted(ENTRY_POINTS))
def test_each_entry_point_defines_its_table_and_nothing_else(name):
  # A process of its own: the learner's and the actor's flags share names.
  code = ('import sys; from absl import flags; import importlib; '
          f'module = importlib.import_module({ENTRY_POINTS[name]!r}); '
          'print(" ".join(sorted(f.name for f in flags.FLAGS.get_key_flags_for_module(module))))')
  out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, cwd=REPO,
                       env=_env(), timeout=120, check=True).stdout.split()
  assert out == sorted(s.name for s in settings.SCHEMAS[name])


@pytest.mark.parametrize('setting', settings.LEARNER + settings.ACTOR,
                         ids=lambda s: s.name)
def test_every_flag_reads_its_seed_variable(setting):
  samples = {'string': ('x:1', 'x:1'), 'integer': ('7', 7), 'float': ('2.5', 2.5),
             'bool': ('true', True), 'multi_string': ('a\nb', ['a', 'b'])}
  raw, parsed = (samples[setting.kind] if setting.kind != 'enum'
                 else (setting.choices[-1], setting.choices[-1]))
  flag_values = flags.FlagValues()
  flag_env.define([setting], 'probe', flag_values)
  flag_env.apply_environment(flag_values, [setting.name], {f'SEED_{setting.name.upper()}': raw})
  flag_values(['probe'])
  assert flag_env.values([setting], flag_values) == {setting.name: parsed}


def _learner_values(**changes):
  values = {s.name: s.default for s in settings.LEARNER}
  values.update({'logdir': '/tmp/run', **changes})
  return settings.values_class('LearnerFlags', settings.LEARNER)(**values)


@pytest.mark.parametrize('changes,message', [
    ({'logdir': None}, 'the run directory is not set: pass --logdir or set SEED_LOGDIR'),
    ({'health_port': 70000}, '--health_port=70000; expected a port 1-65535, or 0 for none'),
    ({'init_counters': 'resume'}, "--init_counters='resume'; expected one of restart, continue"),
    ({'seed': -1}, '--seed=-1; expected an int >= 0'),
    ({'num_seeds': 0}, '--num_seeds=0; expected an int >= 1'),
    ({'shutdown_limit_s': 0.0}, '--shutdown_limit_s=0.0; expected seconds > 0'),
    ({'stopped_exit_code': 300}, '--stopped_exit_code=300; expected 0-255'),
    ({'eval_episodes': 0}, '--eval_episodes=0; expected episodes >= 1'),
])
def test_a_bad_learner_value_is_named_with_what_is_accepted(changes, message):
  with pytest.raises(ValueError) as raised:
    settings.check(settings.LEARNER, _learner_values(**changes))
  assert str(raised.value) == message


def test_the_defaults_pass_their_checks():
  settings.check(settings.LEARNER, _learner_values())
  actor = {s.name: s.default for s in settings.ACTOR}
  settings.check(settings.ACTOR, types.SimpleNamespace(**actor))
  with pytest.raises(ValueError, match=r'^--actor_id=-1; expected an integer >= 0, unique'):
    settings.check(settings.ACTOR, types.SimpleNamespace(**{**actor, 'actor_id': -1}))


def test_the_launch_values_are_one_field_per_setting():
  from seed.actors import launch as actor_launch  # pylint: disable=g-import-not-at-top
  assert [f for f in actor_launch.ActorFlags.__dataclass_fields__] == [
      s.name for s in settings.ACTOR]


def test_the_usage_pages_tables_are_the_settings():
  with open(os.path.join(REPO, 'docs', 'usage.md'), encoding='utf-8') as f:
    usage = f.read()
  for name in settings.SCHEMAS:
    if name != 'job':
      assert f'<!-- settings:{name} -->' in usage
  assert settings.readme_with_tables(usage) == usage, (
      'docs/usage.md\'s flag tables differ from seed/settings.py: run '
      'python -m seed.settings --readme docs/usage.md')


def test_gcp_and_slurm_read_the_same_table():
  sys.path.insert(0, os.path.join(REPO, 'gcp'))
  try:
    import repo_source  # pylint: disable=g-import-not-at-top,import-outside-toplevel
  finally:
    sys.path.pop(0)
  known = repo_source.read_flags(REPO)
  for name in ('learner', 'actor', 'job'):
    assert getattr(known, name) == {s.name: s.kind for s in settings.SCHEMAS[name]}
  # slurm/submit.sh lists them with any python3: no absl, no venv.
  listed = subprocess.run(['python3', '-m', 'seed.settings', '--list', 'learner', '--list',
                           'actor'], capture_output=True, text=True, cwd=REPO, timeout=60,
                          check=True, env={'PATH': os.environ['PATH']}).stdout.splitlines()
  assert listed == [f'{s.name} {s.kind}' for s in settings.LEARNER + settings.ACTOR]


def test_the_job_roles_are_seed_jobs():
  from seed.cluster import roles  # pylint: disable=g-import-not-at-top
  assert settings.by_name(settings.JOB)['role'].choices == ('auto', *roles.ROLES)


def test_the_docs_name_the_status_a_stream_past_the_limit_gets():
  # The server answers UNAVAILABLE (seed/inference/server.py), which actors retry; the
  # docs said RESOURCE_EXHAUSTED, which actors take as a refusal and give up on.
  import grpc  # pylint: disable=g-import-not-at-top
  from seed.actors import client  # pylint: disable=g-import-not-at-top
  help_text = settings.by_name(settings.LEARNER)['max_actor_streams'].help
  assert 'UNAVAILABLE' in help_text and 'RESOURCE_EXHAUSTED' not in help_text
  assert 'retries' in help_text
  assert grpc.StatusCode.UNAVAILABLE not in client.REFUSALS
  for page in ('docs/usage.md', 'docs/reliability.md', 'docs/architecture.md'):
    with open(os.path.join(REPO, page)) as f:
      for line in f:
        if 'max_actor_streams' in line or 'keep new actors out' in line:
          assert 'RESOURCE_EXHAUSTED' not in line, (page, line)
