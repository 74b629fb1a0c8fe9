"""The actor<->learner contract: every refusal names the bad value, others keep going."""
import time

import grpc
import numpy as np
import pytest

from seed import protocol
from seed.envs.spec import EnvSpec
from seed.inference.server import StreamLimits
from tests.server_harness import LockstepClient, ServerHarness, hello, step

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(params=['grpc', 'unix'])
def transport(request):
  """Every refusal reads the same over gRPC and over the Unix socket
  (seed.transport.unix_socket)."""
  return request.param


@pytest.fixture
def server(transport):
  with ServerHarness(transport=transport) as harness:
    yield harness


def welcomed_client(server, **hello_fields):
  """A client that has said hello (actor_id 1 unless given) and been welcomed."""
  client = LockstepClient(server.address)
  hello_fields.setdefault('actor_id', 1)
  client.send(hello(**hello_fields))
  assert client.recv().WhichOneof('kind') == 'welcome'
  return client


@pytest.fixture
def good_actor(server):
  """A well-behaved actor that stays connected through each test."""
  client = welcomed_client(server, actor_id=100, run_id='good')
  yield client
  client.close()


def assert_still_served(client):
  client.send(step())
  reply = client.recv()
  actions = protocol.decode_tensor(reply.actions.actions, 'actions')
  assert actions.shape == (2,)


def refusal(client, *messages):
  for message in messages:
    client.send(message)
  with pytest.raises(grpc.RpcError) as info:
    while True:
      client.recv()
  client.close()
  return info.value.code(), info.value.details()


def test_a_good_actor_gets_one_action_per_env(good_actor):
  for _ in range(5):
    assert_still_served(good_actor)


def test_spec_mismatch_names_both_specs(server, good_actor):
  wrong = EnvSpec((84, 84, 4), 'uint8', num_actions=6)
  code, details = refusal(LockstepClient(server.address), hello(spec=wrong))
  assert code == grpc.StatusCode.FAILED_PRECONDITION
  assert 'uint8[84, 84, 4]' in details and 'float32[10, 5]' in details
  assert '6 discrete actions' in details and '3 discrete actions' in details
  assert_still_served(good_actor)


def test_env_name_mismatch(server, good_actor):
  code, details = refusal(LockstepClient(server.address), hello(env_name='atari:Pong'))
  assert code == grpc.StatusCode.FAILED_PRECONDITION
  assert "'atari:Pong'" in details and "'Catch'" in details
  assert_still_served(good_actor)


def test_wrong_protocol_version(server, good_actor):
  code, details = refusal(LockstepClient(server.address), hello(protocol_version=99))
  assert code == grpc.StatusCode.FAILED_PRECONDITION
  assert 'protocol version 99' in details and f'version {protocol.PROTOCOL_VERSION}' in details
  assert_still_served(good_actor)


@pytest.mark.parametrize('shape,dtype,named', [
    ((10, 6), np.float32, 'float32[2, 10, 6]'),
    ((10, 5), np.uint8, 'uint8[2, 10, 5]'),
])
def test_wrong_observation_shape_or_dtype(server, good_actor, shape, dtype, named):
  client = welcomed_client(server)
  code, details = refusal(client, step(shape=shape, dtype=dtype))
  assert code == grpc.StatusCode.INVALID_ARGUMENT
  assert named in details and 'expected float32[2, 10, 5]' in details
  assert_still_served(good_actor)


def test_observation_bytes_that_do_not_fit_the_shape(server, good_actor):
  client = welcomed_client(server)
  message = step()
  message.step.observations.data = b'\x00' * 7
  code, details = refusal(client, message)
  assert code == grpc.StatusCode.INVALID_ARGUMENT
  assert '7 bytes' in details and '400 bytes' in details
  assert_still_served(good_actor)


def test_step_before_hello(server, good_actor):
  code, details = refusal(LockstepClient(server.address), step())
  assert code == grpc.StatusCode.FAILED_PRECONDITION
  assert 'first message is a step' in details and 'expected a hello' in details
  assert_still_served(good_actor)


def test_undecodable_bytes(server, good_actor):
  code, details = refusal(LockstepClient(server.address), b'\xff\xff\xff\xff garbage')
  assert code == grpc.StatusCode.INVALID_ARGUMENT
  assert 'could not decode an ActorMessage from 12 bytes' in details
  assert_still_served(good_actor)


def test_oversized_message(server, good_actor):
  client = welcomed_client(server)
  code, details = refusal(client, step(num_envs=2, shape=(1024, 1024)))  # 8 MiB > 1 MiB
  assert code == grpc.StatusCode.RESOURCE_EXHAUSTED
  assert 'larger than max' in details and str(1 << 20) in details
  assert_still_served(good_actor)


def test_wrong_number_of_rewards(server, good_actor):
  client = welcomed_client(server)
  code, details = refusal(client, step(rewards=[1.0]))
  assert code == grpc.StatusCode.INVALID_ARGUMENT
  assert 'step.rewards has 1 entries; expected 2' in details
  assert_still_served(good_actor)


def test_wrong_number_of_lost_lives(server, good_actor):
  # None (no env lost a life) or one per env; anything else is refused by name.
  client = welcomed_client(server)
  client.send(step(life_lost=[False, True]))
  assert client.recv().WhichOneof('kind') == 'actions'
  code, details = refusal(client, step(life_lost=[True, False, True]))
  assert code == grpc.StatusCode.INVALID_ARGUMENT
  assert 'step.life_lost has 3 entries; expected 2 or none' in details
  assert_still_served(good_actor)


def test_too_many_envs_for_one_actor(server, good_actor):
  code, details = refusal(LockstepClient(server.address), hello(actor_id=1, num_envs=9))
  assert code == grpc.StatusCode.INVALID_ARGUMENT
  assert 'num_envs=9' in details and '1 to 8' in details
  assert_still_served(good_actor)


def test_duplicate_actor_id_while_connected(server, good_actor):
  code, details = refusal(LockstepClient(server.address), hello(actor_id=100, run_id='other'))
  assert code == grpc.StatusCode.ALREADY_EXISTS
  assert 'actor_id 100 (split 0) is already connected' in details
  assert_still_served(good_actor)


def test_auth_token_required_when_configured(transport):
  with ServerHarness(auth_token='s3cret', transport=transport) as harness:
    code, details = refusal(LockstepClient(harness.address), hello())
    assert code == grpc.StatusCode.UNAUTHENTICATED
    client = LockstepClient(harness.address, metadata=(('authorization', 'Bearer s3cret'),))
    client.send(hello())
    assert client.recv().WhichOneof('kind') == 'welcome'
    client.close()


def test_non_finite_observations_are_refused(server, good_actor):
  client = welcomed_client(server)
  message = step()
  observations = np.zeros((2, 10, 5), np.float32)
  observations[1, 3, 2] = np.nan
  message.step.observations.data = observations.tobytes()
  code, details = refusal(client, message)
  assert code == grpc.StatusCode.INVALID_ARGUMENT
  assert 'observations of env 1 hold NaN or Inf' in details
  assert_still_served(good_actor)


def test_an_object_dtype_is_refused(server, good_actor):
  client = welcomed_client(server)
  message = step()
  message.step.observations.dtype = 'object'
  code, details = refusal(client, message)
  assert code == grpc.StatusCode.INVALID_ARGUMENT
  assert "dtype 'object' cannot travel as raw bytes" in details
  assert_still_served(good_actor)


@pytest.mark.parametrize('dtype', ['(1000000000,)i4', 'i4,i4', 'M8', '<f4', 'U10'])
def test_only_plain_dtype_names_are_parsed(server, good_actor, dtype):
  client = welcomed_client(server)
  message = step()
  message.step.observations.dtype = dtype
  code, details = refusal(client, message)
  assert code == grpc.StatusCode.INVALID_ARGUMENT
  assert f'dtype {dtype!r} cannot travel as raw bytes; expected one of bool' in details
  assert_still_served(good_actor)


def test_a_declared_shape_too_big_for_int64_is_refused(server, good_actor):
  client = welcomed_client(server)
  message = step()
  # 2**32 * 2**32 elements wrap around to 0 in int64: the size check must not believe it.
  message.step.observations.shape[:] = [2**32, 2**32]
  message.step.observations.data = b''
  code, details = refusal(client, message)
  assert code == grpc.StatusCode.INVALID_ARGUMENT
  assert 'shape [4294967296, 4294967296] is far larger than any message' in details
  assert_still_served(good_actor)


def test_a_hello_with_a_hostile_spec_is_refused(server, good_actor):
  wrong = hello()
  wrong.hello.observation_spec.dtype = '(1000000000,)i4'
  code, details = refusal(LockstepClient(server.address), wrong)
  assert code == grpc.StatusCode.INVALID_ARGUMENT
  assert "hello.observation_spec: dtype '(1000000000,)i4' is not one of" in details
  deep = hello()
  deep.hello.observation_spec.shape[:] = [1] * 100
  code, details = refusal(LockstepClient(server.address), deep)
  assert 'shape has 100 dimensions; at most 32' in details
  long_name = hello(env_name='x' * 100_000)
  code, details = refusal(LockstepClient(server.address), long_name)
  assert code == grpc.StatusCode.FAILED_PRECONDITION and len(details) < 500
  assert '(100002 characters)' in details
  assert_still_served(good_actor)


def test_silent_streams_are_ended_after_their_timeouts(transport):
  limits = StreamLimits(max_envs_per_actor=8, hello_timeout_s=0.5, stream_idle_timeout_s=0.5)
  with ServerHarness(limits=limits, transport=transport) as harness:
    code, details = refusal(LockstepClient(harness.address))  # Opens, says nothing.
    assert code == grpc.StatusCode.DEADLINE_EXCEEDED
    assert 'no hello within 0.5 s of opening the stream' in details
    client = welcomed_client(harness)
    code, details = refusal(client)  # Hello, then silence.
    assert code == grpc.StatusCode.DEADLINE_EXCEEDED
    assert 'no step within 0.5 s of the last actions' in details
    assert harness.table.num_envs == 0


def test_streams_beyond_the_limit_are_refused(transport):
  with ServerHarness(limits=StreamLimits(max_envs_per_actor=8, max_actor_streams=2),
                     transport=transport) as harness:
    first, second = welcomed_client(harness, actor_id=1), welcomed_client(harness, actor_id=2)
    code, details = refusal(LockstepClient(harness.address), hello(actor_id=3))
    assert code == grpc.StatusCode.UNAVAILABLE
    assert 'already serves 2 actor streams, its limit (--max_actor_streams)' in details
    first.close()
    deadline = time.monotonic() + 10
    while harness.service.open_streams > 1 and time.monotonic() < deadline:
      time.sleep(0.01)
    third = welcomed_client(harness, actor_id=3)  # A freed place is taken again.
    assert_still_served(third)
    second.close()
    third.close()


def test_a_stalled_stream_does_not_hold_back_the_others(transport):
  # Batches wait up to max_wait for every env that may still step: 60 s here,
  # so waiting for the stalled stream would time the steps below out.
  with ServerHarness(max_wait_ms=60_000, transport=transport) as harness:
    welcomed_client(harness, actor_id=1)  # Says hello, never steps.
    time.sleep(1.2)  # Longer than ACTIVE_WINDOW_S.
    active = welcomed_client(harness, actor_id=2)
    for _ in range(5):
      assert_still_served(active)


def test_a_bug_met_by_one_stream_ends_that_stream_only(server, good_actor):
  def broken_inference(*args):
    raise ZeroDivisionError('hypothetical bug')
  client = welcomed_client(server)
  server.agent.inference, working = broken_inference, server.agent.inference
  code, details = refusal(client, step())
  server.agent.inference = working
  assert code == grpc.StatusCode.INTERNAL
  assert 'ZeroDivisionError: hypothetical bug' in details
  assert_still_served(good_actor)


def test_huge_finite_rewards_and_observations_are_refused(server, good_actor):
  # Finite, yet their squares overflow the loss: every update would be skipped.
  code, details = refusal(welcomed_client(server), step(rewards=[1.0, 3e38]))
  assert code == grpc.StatusCode.INVALID_ARGUMENT
  assert 'exceed 1e+09 in magnitude (--max_abs_input)' in details
  message = step()
  observations = np.zeros((2, 10, 5), np.float32)
  observations[1, 0, 0] = -3e38
  message.step.observations.data = observations.tobytes()
  code, details = refusal(welcomed_client(server), message)
  assert 'step.observations of env 1 exceed 1e+09 in magnitude' in details
  assert_still_served(good_actor)


@pytest.mark.parametrize('shape', [[0, 2**63 - 1], [2**32, 2**32, 0, 7]])
def test_an_empty_array_with_a_huge_declared_shape_is_refused(server, good_actor, shape):
  message = step()
  message.step.observations.shape[:] = shape
  message.step.observations.data = b''
  code, details = refusal(welcomed_client(server), message)
  assert code == grpc.StatusCode.INVALID_ARGUMENT
  assert f'shape {shape} is far larger than any message' in details
  assert_still_served(good_actor)
