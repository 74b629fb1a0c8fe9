"""Flags from SEED_* variables, and the token check."""
import hmac

from absl import flags
import pytest

from seed.transport import security
from seed.process import flag_env


@pytest.fixture
def flag_values():
  values = flags.FlagValues()
  flags.DEFINE_string('server_address', 'localhost:8686', '', flag_values=values)
  flags.DEFINE_integer('num_envs', 4, '', flag_values=values)
  flags.DEFINE_bool('eval', False, '', flag_values=values)
  flags.DEFINE_multi_string('gin_bindings', [], '', flag_values=values)
  return values


def test_variables_set_defaults_and_the_command_line_wins(flag_values):
  flag_env.apply_environment(flag_values, ['server_address', 'num_envs', 'eval', 'gin_bindings'], {
      'SEED_SERVER_ADDRESS': 'learner:8686', 'SEED_NUM_ENVS': '16', 'SEED_EVAL': 'true',
      'SEED_GIN_BINDINGS': "EnvConfig.name = 'Catch'\n\n  VTraceConfig.unroll_length = 20\n",
      'SEED_UNRELATED': 'x'})
  flag_values(['prog', '--num_envs=2'])
  assert flag_values.server_address == 'learner:8686'
  assert flag_values.num_envs == 2  # The flag beats SEED_NUM_ENVS.
  assert flag_values.eval is True
  assert flag_values.gin_bindings == ["EnvConfig.name = 'Catch'",
                                      'VTraceConfig.unroll_length = 20']


def test_only_the_named_flags_are_read(flag_values):
  flag_env.apply_environment(flag_values, ['server_address'], {'SEED_NUM_ENVS': '16'})
  flag_values(['prog'])
  assert flag_values.num_envs == 4


@pytest.mark.parametrize('variable,value', [('SEED_NUM_ENVS', 'four'), ('SEED_EVAL', 'maybe')])
def test_a_bad_value_names_the_variable_and_the_flag(flag_values, variable, value):
  with pytest.raises(ValueError, match=f"{variable}='{value}' is not a valid value for --"):
    flag_env.apply_environment(flag_values, ['num_envs', 'eval'], {variable: value})


def test_token_from_file_then_variable(tmp_path):
  path = tmp_path / 'token'
  path.write_text('abc123\n')
  assert security.read_token(str(path), environ={'SEED_AUTH_TOKEN': 'other'}) == 'abc123'
  assert security.read_token(None, environ={'SEED_AUTH_TOKEN': ' xyz '}) == 'xyz'
  assert security.read_token(None, environ={}) is None


def test_tokens_are_compared_in_constant_time(monkeypatch):
  calls = []

  def spy(a, b):
    calls.append((a, b))
    return a == b
  monkeypatch.setattr(hmac, 'compare_digest', spy)
  assert security.token_matches({'authorization': 'Bearer s3cret'}, 's3cret')
  assert not security.token_matches({'authorization': 'Bearer s3cre'}, 's3cret')
  assert not security.token_matches(None, 's3cret')
  assert len(calls) == 3


def test_both_sides_keep_the_connection_alive_within_a_minute():
  client = dict(security.channel_options(1 << 20))
  server = dict(security.server_options(1 << 20))
  for options in (client, server):
    assert options['grpc.keepalive_time_ms'] + options['grpc.keepalive_timeout_ms'] <= 60_000
  # The server must accept the client's pings, or it would end the connection as abusive.
  assert server['grpc.http2.min_ping_interval_without_data_ms'] <= client['grpc.keepalive_time_ms']
