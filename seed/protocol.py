"""Encoding and checking of actor<->learner messages (no TensorFlow here).

Every check raises `ProtocolError` carrying the gRPC status the learner sends
back, with a message naming the bad value and what is accepted.
"""
import dataclasses
import math
from typing import Optional, Sequence

import grpc
import numpy as np

from seed.envs.spec import EnvSpec
from seed.proto import actor_learner_pb2 as pb

# 2: Step.life_lost (a version-1 learner would drop it and train on other targets).
PROTOCOL_VERSION = 2
SERVICE_NAME = 'seed.proto.Learner'
ACT_METHOD = f'/{SERVICE_NAME}/Act'


class ProtocolError(Exception):
  """A message the learner refuses; `code` is the gRPC status to answer with."""

  def __init__(self, code: grpc.StatusCode, message: str):
    super().__init__(message)
    self.code = code


# Deeper arrays cannot be made by NumPy (its limit is 64); no env needs more than a few.
MAX_TENSOR_DIMS = 32
# Rewards and float observations beyond this magnitude are refused: a reward of
# 1e38 is finite, yet its square overflows the loss, and every update is skipped.
DEFAULT_MAX_ABS_INPUT = 1e9


_MAX_TENSOR_BYTES = 1 << 40

_WIRE_DTYPES = {name: np.dtype(name) for name in (
    'bool', 'int8', 'int16', 'int32', 'int64', 'uint8', 'uint16', 'uint32', 'uint64',
    'float16', 'float32', 'float64')}


def shorten(text: str, limit: int = 200) -> str:
  """`text`, cut to `limit` characters: a hostile value must not make a huge status."""
  return text if len(text) <= limit else f'{text[:limit]}... ({len(text)} characters)'


def encode_tensor(array: np.ndarray) -> pb.Tensor:
  array = np.ascontiguousarray(array)
  return pb.Tensor(data=array.tobytes(), dtype=array.dtype.name, shape=array.shape)


def decode_tensor(tensor: pb.Tensor, what: str, data: Optional[bytes] = None) -> np.ndarray:
  """Bytes + dtype + shape -> array (a view on the message's bytes, no copy). `data`: the
  bytes when they travelled beside the message (RawObservationsStep), the tensor's own
  then empty."""
  # Only plain names, looked up in a fixed table: np.dtype() would also parse
  # structured and subarray specs ('(1000000000,)i4'), each a way to misbehave.
  dtype = _WIRE_DTYPES.get(tensor.dtype)
  if dtype is None:
    raise ProtocolError(grpc.StatusCode.INVALID_ARGUMENT,
                        f'{what}: dtype {shorten(repr(tensor.dtype))} cannot travel as raw '
                        f'bytes; expected one of {", ".join(_WIRE_DTYPES)}')
  shape = tuple(tensor.shape)
  if len(shape) > MAX_TENSOR_DIMS:
    raise ProtocolError(grpc.StatusCode.INVALID_ARGUMENT,
                        f'{what}: shape has {len(shape)} dimensions; at most '
                        f'{MAX_TENSOR_DIMS} are accepted')
  if shape and min(shape) < 0:
    raise ProtocolError(grpc.StatusCode.INVALID_ARGUMENT,
                        f'{what}: negative dimension in shape {list(shape)}')
  # Python integers: a huge declared shape must not wrap around to a small size.
  # Zero dimensions aside too: NumPy cannot even make an empty [0, 2**63 - 1].
  if math.prod(max(d, 1) for d in shape) * dtype.itemsize > _MAX_TENSOR_BYTES:
    raise ProtocolError(grpc.StatusCode.INVALID_ARGUMENT,
                        f'{what}: shape {list(shape)} is far larger than any message')
  if data is None:
    data = tensor.data  # Read once: each read of a bytes field copies it.
  elif tensor.data:
    raise ProtocolError(grpc.StatusCode.INVALID_ARGUMENT,
                        f'{what}: {len(tensor.data)} bytes in the message and {len(data)} '
                        'beside it; expected them in one place')
  expected_bytes = math.prod(shape) * dtype.itemsize
  if len(data) != expected_bytes:
    raise ProtocolError(
        grpc.StatusCode.INVALID_ARGUMENT,
        f'{what}: {len(data)} bytes cannot be a {dtype.name} array of shape '
        f'{list(shape)}, which needs {expected_bytes} bytes')
  return np.frombuffer(data, dtype=dtype).reshape(shape)


def make_hello(spec: EnvSpec, *, actor_id: int, run_id: str, num_envs: int, env_name: str,
               split_index: int = 0, evaluation: bool = False,
               protocol_version: int = PROTOCOL_VERSION) -> pb.ActorMessage:
  return pb.ActorMessage(hello=pb.Hello(
      protocol_version=protocol_version, actor_id=actor_id, run_id=run_id,
      num_envs=num_envs, env_name=env_name, split_index=split_index, evaluation=evaluation,
      observation_spec=pb.TensorSpec(dtype=spec.observation_dtype,
                                     shape=spec.observation_shape),
      action_spec=_action_spec_to_proto(spec)))


def _action_spec_to_proto(spec: EnvSpec) -> pb.ActionSpec:
  if spec.is_discrete:
    return pb.ActionSpec(num_actions=spec.num_actions)
  return pb.ActionSpec(box=pb.BoxSpec(
      spec=pb.TensorSpec(dtype=spec.action_dtype, shape=spec.action_shape),
      low=spec.action_low or (), high=spec.action_high or ()))


def spec_from_hello(hello: pb.Hello) -> EnvSpec:
  """The env spec an actor announced (frames_per_step is the learner's business)."""
  observation = _checked_tensor_spec(hello.observation_spec, 'hello.observation_spec')
  action = hello.action_spec
  kind = action.WhichOneof('kind')
  if kind == 'num_actions':
    return EnvSpec(*observation, num_actions=int(action.num_actions))
  if kind == 'box':
    action_shape, action_dtype = _checked_tensor_spec(action.box.spec, 'hello.action_spec.box')
    return EnvSpec(*observation, action_shape=action_shape, action_dtype=action_dtype,
                   action_low=tuple(action.box.low), action_high=tuple(action.box.high))
  raise ProtocolError(grpc.StatusCode.INVALID_ARGUMENT,
                      'hello: action_spec is empty; expected num_actions or box')


def _checked_tensor_spec(spec: pb.TensorSpec, what: str):
  """(shape, dtype name) of a TensorSpec, refused if it names no wire dtype or is too deep."""
  dtype = spec.dtype or 'uint8'
  if dtype not in _WIRE_DTYPES:
    raise ProtocolError(grpc.StatusCode.INVALID_ARGUMENT,
                        f'{what}: dtype {shorten(repr(dtype))} is not one of '
                        f'{", ".join(_WIRE_DTYPES)}')
  if len(spec.shape) > MAX_TENSOR_DIMS:
    raise ProtocolError(grpc.StatusCode.INVALID_ARGUMENT,
                        f'{what}: shape has {len(spec.shape)} dimensions; at most '
                        f'{MAX_TENSOR_DIMS} are accepted')
  return tuple(spec.shape), dtype


def check_hello(hello: pb.Hello, learner_spec: EnvSpec, learner_env_name: str,
                max_envs_per_actor: int) -> None:
  """Refuses an actor whose protocol, env or specs differ from the learner's."""
  if hello.protocol_version != PROTOCOL_VERSION:
    raise ProtocolError(
        grpc.StatusCode.FAILED_PRECONDITION,
        f'protocol version {hello.protocol_version} is not supported; this learner speaks '
        f'version {PROTOCOL_VERSION}: run actors and learner from the same seed release')
  if not hello.run_id:
    raise ProtocolError(grpc.StatusCode.INVALID_ARGUMENT,
                        'hello: run_id is empty; expected a fresh random id per connection')
  if not 1 <= hello.num_envs <= max_envs_per_actor:
    raise ProtocolError(
        grpc.StatusCode.INVALID_ARGUMENT,
        f'hello: num_envs={hello.num_envs}; this learner accepts 1 to {max_envs_per_actor} '
        'envs per actor (raise --inference_batch_size to allow more)')
  if hello.env_name != learner_env_name:
    raise ProtocolError(
        grpc.StatusCode.FAILED_PRECONDITION,
        f'actor env {shorten(repr(hello.env_name))} differs from the learner env '
        f'{learner_env_name!r}')
  actor_spec = spec_from_hello(hello)
  learner_side = _comparable(learner_spec)
  if _comparable(actor_spec) != learner_side:
    raise ProtocolError(
        grpc.StatusCode.FAILED_PRECONDITION,
        f'actor spec ({actor_spec.describe()}) differs from the learner spec '
        f'({learner_spec.describe()})')


def _comparable(spec: EnvSpec):
  bounds = (None if spec.is_discrete else
            (tuple(np.float32(spec.action_low)), tuple(np.float32(spec.action_high))))
  return (spec.observation_shape, spec.observation_dtype, spec.num_actions,
          () if spec.is_discrete else spec.action_shape, bounds)


def decode_step(step: pb.Step, spec: EnvSpec, num_envs: int,
                max_abs_input: float = DEFAULT_MAX_ABS_INPUT,
                observation_bytes: Optional[bytes] = None):
  """Checks one Step message; returns (observations, rewards, terminated, truncated,
  life_lost), life_lost all False where the step names none.
  `observation_bytes`: the observations' bytes where they travelled beside the message
  (RawObservationsStep; its step.observations then names only their dtype and shape).

  Float observations and rewards must be finite and at most `max_abs_input` in
  magnitude: values that overflow the network or the loss would stop training.
  Once per actor step on the learner's event loop: a few envs' scalars are checked in
  Python, faster than NumPy's per-call cost at these sizes.
  """
  observations = decode_tensor(step.observations, 'step.observations', observation_bytes)
  expected_shape = (num_envs,) + spec.observation_shape
  if (observations.shape != expected_shape or
      observations.dtype != _WIRE_DTYPES.get(spec.observation_dtype)):
    raise ProtocolError(
        grpc.StatusCode.INVALID_ARGUMENT,
        f'step.observations is {observations.dtype.name}{list(observations.shape)}; expected '
        f'{spec.observation_dtype}{list(expected_shape)} ({num_envs} envs as in the hello)')
  if observations.dtype.kind == 'f':
    _check_float_observations(observations, max_abs_input)
  rewards, terminated, truncated = list(step.rewards), list(step.terminated), list(step.truncated)
  life_lost = list(step.life_lost) or [False] * num_envs
  for name, values in (('rewards', rewards), ('terminated', terminated),
                       ('truncated', truncated), ('life_lost', life_lost)):
    if len(values) != num_envs:
      raise ProtocolError(grpc.StatusCode.INVALID_ARGUMENT,
                          f'step.{name} has {len(values)} entries; expected {num_envs}'
                          + (' or none' if name == 'life_lost' else ''))
  # NaN fails every comparison, so this one test lets only finite, bounded rewards by.
  if not all(-max_abs_input <= r <= max_abs_input for r in rewards):
    if not all(math.isfinite(r) for r in rewards):
      raise ProtocolError(grpc.StatusCode.INVALID_ARGUMENT,
                          f'step.rewards holds non-finite values: {shorten(str(rewards))}')
    raise ProtocolError(grpc.StatusCode.INVALID_ARGUMENT,
                        f'step.rewards {shorten(str(rewards))} exceed {max_abs_input:g} '
                        'in magnitude (--max_abs_input); scale or clip them in the env')
  return (observations, np.array(rewards, np.float32), np.array(terminated, bool),
          np.array(truncated, bool), np.array(life_lost, bool))


def _check_float_observations(observations: np.ndarray, max_abs_input: float) -> None:
  if not np.all(np.isfinite(observations)):
    bad = int(np.argwhere(~np.isfinite(observations))[0][0])
    raise ProtocolError(grpc.StatusCode.INVALID_ARGUMENT,
                        f'step.observations of env {bad} hold NaN or Inf; observations must '
                        'be finite (they would poison the shared model)')
  if np.any(np.abs(observations) > max_abs_input):
    bad = int(np.argwhere(np.abs(observations) > max_abs_input)[0][0])
    raise ProtocolError(grpc.StatusCode.INVALID_ARGUMENT,
                        f'step.observations of env {bad} exceed {max_abs_input:g} in '
                        'magnitude (--max_abs_input); scale or clip them in the env')


def make_step(observations: np.ndarray, rewards: Sequence[float], terminated: Sequence[bool],
              truncated: Sequence[bool], life_lost: Sequence[bool] = ()) -> pb.ActorMessage:
  """A Step; `life_lost` is left out (empty) where no env lost a life."""
  return pb.ActorMessage(step=pb.Step(observations=encode_tensor(observations),
                                      rewards=rewards, terminated=terminated,
                                      truncated=truncated, life_lost=_any_or_empty(life_lost)))


def make_step_header(observations: np.ndarray, rewards: Sequence[float],
                     terminated: Sequence[bool], truncated: Sequence[bool],
                     life_lost: Sequence[bool] = ()) -> pb.ActorMessage:
  """make_step without the observations' bytes, which travel beside it (C order): their
  dtype and shape only. For seed.transport.unix_socket's raw steps."""
  return pb.ActorMessage(step=pb.Step(
      observations=pb.Tensor(dtype=observations.dtype.name, shape=observations.shape),
      rewards=rewards, terminated=terminated, truncated=truncated,
      life_lost=_any_or_empty(life_lost)))


def _any_or_empty(flags: Sequence[bool]) -> Sequence[bool]:
  """`flags` where one is set, else empty: most steps lose no life and send nothing."""
  return flags if any(flags) else ()


@dataclasses.dataclass(frozen=True)
class RawObservationsStep:
  """An ActorMessage whose step's observations came beside it, raw (seed.transport.unix_socket's
  raw step frames): `message` names their dtype and shape, `observation_bytes` holds
  them. decode_step checks them as it checks a Step's own."""
  message: pb.ActorMessage
  observation_bytes: bytes


def parse_actor_message(data) -> pb.ActorMessage:
  """An ActorMessage from its bytes (gRPC's, or a view: seed.transport.unix_socket parses where
  a frame lands), or the message itself when it is one already (or a
  RawObservationsStep's)."""
  if isinstance(data, pb.ActorMessage):
    return data
  if isinstance(data, RawObservationsStep):
    return data.message
  try:
    return pb.ActorMessage.FromString(data)
  except Exception as e:  # protobuf raises DecodeError, sometimes others on garbage.
    raise ProtocolError(grpc.StatusCode.INVALID_ARGUMENT,
                        f'could not decode an ActorMessage from {len(data)} bytes ({e}); '
                        'expected a serialized seed.proto.ActorMessage') from None


def check_actions(actions: np.ndarray, spec: EnvSpec, num_envs: int,
                  what: Optional[str] = 'actions') -> np.ndarray:
  """Checks actions against the action spec: shape, dtype and range.

  Discrete actions are int32 in [0, num_actions); continuous ones float32 vectors
  within the box's bounds (a relative tolerance of 1e-6 forgives float rounding).
  The learner checks what it sends and the actor what it receives.
  """
  expected = (num_envs,) + spec.action_shape
  if actions.shape != expected:
    raise ProtocolError(grpc.StatusCode.INTERNAL,
                        f'{what} have shape {list(actions.shape)}; expected {list(expected)}')
  if spec.is_discrete:
    if actions.dtype.kind not in 'iu':
      raise ProtocolError(grpc.StatusCode.INTERNAL,
                          f'{what} are {actions.dtype.name}; discrete actions are integers')
    num_actions = spec.num_actions  # Python on a few envs' actions: NumPy costs more here.
    if not all(0 <= a < num_actions for a in actions.tolist()):
      raise ProtocolError(grpc.StatusCode.INTERNAL,
                          f'{what} {actions.tolist()} out of range [0, {spec.num_actions})')
    return actions
  if actions.dtype != np.float32:
    raise ProtocolError(grpc.StatusCode.INTERNAL,
                        f'{what} are {actions.dtype.name}; continuous actions are float32')
  if not np.all(np.isfinite(actions)):
    raise ProtocolError(grpc.StatusCode.INTERNAL, f'{what} hold non-finite values')
  low = np.asarray(spec.action_low, np.float32).reshape(spec.action_shape)
  high = np.asarray(spec.action_high, np.float32).reshape(spec.action_shape)
  slack = 1e-6 * np.maximum(1.0, np.maximum(np.abs(low), np.abs(high)))
  outside = (actions < low - slack) | (actions > high + slack)
  if np.any(outside):
    row = int(np.argwhere(outside)[0][0])
    raise ProtocolError(grpc.StatusCode.INTERNAL,
                        f'{what} for env {row}: {actions[row].tolist()} outside the bounds '
                        f'[{low.tolist()}, {high.tolist()}]')
  return actions
