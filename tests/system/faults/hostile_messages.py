"""Hostile input for Learner.Act: generated cases, the clients that play them, a judge.

A `Case` is one stream: a script of raw messages, pauses, half-closes and
cancels, with what the learner must answer (`Expect`): a status code that fits
and details naming the problem. `Generator` draws cases from the categories in
`CATEGORIES`; `play` runs one over a gRPC channel (raw bytes both ways, so
nothing is checked or fixed on our side), `play_raw` over a bare HTTP/2
connection for what a gRPC client cannot send (a bad length prefix, a
compressed bomb, a message trickled a byte at a time, a rapid-reset burst).
`judge` says why a result breaks its expectation, or None.

Only the protocol (seed.protocol, seed.proto) is shared with the learner; no
TensorFlow, and nothing here knows how the learner checks what it gets.
"""
import asyncio
import dataclasses
import gzip
import math
import random
import struct
import time
import urllib.parse
from typing import Dict, FrozenSet, List, Optional, Sequence, Tuple, Union

import grpc
from grpc import aio
import numpy as np

from seed import protocol
from seed.envs.spec import EnvSpec
from seed.proto import actor_learner_pb2 as pb

Code = grpc.StatusCode
_CODES_BY_NUMBER = {code.value[0]: code for code in grpc.StatusCode}

# Details that say nothing about what was wrong: gRPC's own words for an
# exception that escaped the handler, or an empty string.
GENERIC_DETAILS = ('Exception iterating requests', 'Unexpected <class',
                   'Exception calling application', 'Unknown Error', 'Stream removed')
# Refusals of a message nobody can predict (random bytes) must still use these words.
PROTOCOL_WORDS = ('decode', 'hello', 'step', 'protocol version', 'run_id', 'num_envs', 'env',
                  'spec', 'dtype', 'shape', 'bytes', 'actor_id')
# Words for a stream the learner ended for silence (--hello_timeout_s, --stream_idle_timeout_s).
SILENCE_WORDS = ('idle', 'silent', 'timeout', 'timed out', 'within', 'no message', 'no step')
SIZE_WORDS = ('larger than', 'too large', 'too big', 'exceed', 'over the limit', 'max')


# --- What a case does and what must come back ---------------------------------------------

@dataclasses.dataclass(frozen=True)
class Pause:
  seconds: float


@dataclasses.dataclass(frozen=True)
class HalfClose:
  """Done writing: the learner sees the end of the request stream."""


@dataclasses.dataclass(frozen=True)
class Cancel:
  """The client goes away (RST_STREAM), e.g. while its step is in a batch."""


@dataclasses.dataclass(frozen=True)
class AwaitReplies:
  """Waits until this many replies (welcome, actions) have come."""
  count: int


Op = Union[bytes, Pause, HalfClose, Cancel, AwaitReplies]


@dataclasses.dataclass(frozen=True)
class Expect:
  """What the learner must answer.

  codes: the status codes that fit (OK among them where serving is right).
  names: groups of alternatives; the details must contain one of each group
    (case-insensitive), e.g. (('[2, 10, 6]', '(2, 10, 6)'), ('float32',)).
  replies: how many replies must come before the status (None: any).
  max_details: longer details echo the input back unbounded.
  max_s: the status must come within this long of the stream's start.
  unanswerable: no status can reach this peer (it reads nothing, and the status
    queues behind the data it does not take), so none is right; the learner's
    side of the stream ends on its idle timeout (the flood after the cases
    shows the places are free again).
  """
  codes: FrozenSet[Code]
  names: Tuple[Tuple[str, ...], ...] = ()
  replies: Optional[int] = None
  max_details: int = 2048
  max_s: float = 10.0
  unanswerable: bool = False


@dataclasses.dataclass(frozen=True)
class Case:
  """One hostile stream: `kind` groups its failures, `name` says exactly what it sent."""
  category: str
  kind: str
  name: str
  script: Tuple[Op, ...]
  expect: Expect
  # Envs of the hello this case got welcomed with: its actions beyond the first
  # are env frames the learner counts beside the real actor's.
  envs: int = 0
  metadata: Tuple[Tuple[str, str], ...] = ()
  raw: Optional['RawScript'] = None  # Played over bare HTTP/2 instead of gRPC.


@dataclasses.dataclass
class Result:
  code: Optional[Code]  # None: no status came within the case's time.
  details: str
  replies: int
  seconds: float
  note: str = ''  # What the raw client saw instead of a status (RST_STREAM, GOAWAY).
  started_at: float = 0.0  # time.time() at the stream's start, to line up with the learner's log.

  def counted_steps(self, envs: int) -> int:
    """Env steps the learner counted as transitions (actions after the first, k each)."""
    return max(0, self.replies - 2) * envs


def judge(case: Case, result: Result) -> Optional[str]:
  """Why `result` breaks `case.expect`, or None when it does not."""
  expect = case.expect
  if result.code is None and expect.unanswerable:
    return None
  if result.code is None:
    return (f'no status within {result.seconds:.1f} s{f" ({result.note})" if result.note else ""}'
            f'; expected {_codes(expect.codes)}')
  if result.code == Code.INTERNAL and result.details == 'Internal error from Core':
    return ('INTERNAL \'Internal error from Core\': gRPC\'s client says so when a write '
            'crosses the status, the learner\'s status is lost (a script to fix)')
  if result.code not in expect.codes:
    return f'{result.code.name} {short(result.details)}; expected {_codes(expect.codes)}'
  if expect.replies is not None and result.replies != expect.replies:
    return (f'{result.code.name} after {result.replies} replies; expected {expect.replies} '
            f'({short(result.details)})')
  if result.code == Code.OK:
    return None
  if result.code == Code.CANCELLED and Code.CANCELLED in expect.codes:
    return None  # We cancelled: nothing for the learner to say.
  if not result.details.strip() or any(g in result.details for g in GENERIC_DETAILS):
    return f'{result.code.name} with generic details {short(result.details)}'
  lowered = result.details.lower()
  for group in expect.names:
    if not any(word.lower() in lowered for word in group):
      return (f'{result.code.name} {short(result.details)} does not name '
              f'{" or ".join(repr(w) for w in group[:4])}')
  if len(result.details) > expect.max_details:
    return (f'{result.code.name} details of {len(result.details):,} characters (the input '
            f'echoed back unbounded): {short(result.details)}')
  if result.seconds > expect.max_s:
    return f'{result.code.name} after {result.seconds:.1f} s; expected within {expect.max_s:g} s'
  return None


def _codes(codes) -> str:
  return '/'.join(sorted(c.name for c in codes))


def short(text: str, limit: int = 160) -> str:
  """`text` as repr, cut to about `limit` characters."""
  return repr(text if len(text) <= limit else text[:limit] + f'...[{len(text):,} chars]')


# --- The learner's limits, as the scenario started it -----------------------------------

@dataclasses.dataclass(frozen=True)
class Limits:
  """The learner's limits; a `*_s` of None means it has no such flag yet.

  The generator then still expects the bound the scenario asked for
  (`planned_*`), so those cases fail and name the missing limit.
  """
  max_message_bytes: int
  max_envs_per_actor: int
  hello_timeout_s: float
  stream_idle_timeout_s: float
  max_actor_streams: int


# --- Building messages --------------------------------------------------------------------

def hello_message(spec: EnvSpec, env_name: str, actor_id: int, num_envs: int,
                  **fields) -> pb.ActorMessage:
  fields.setdefault('run_id', f'hostile-{actor_id}')
  return protocol.make_hello(spec, actor_id=actor_id, num_envs=num_envs, env_name=env_name,
                             **fields)


def step_message(spec: EnvSpec, num_envs: int, rng: np.random.Generator,
                 observations: Optional[np.ndarray] = None, rewards=None, terminated=None,
                 truncated=None, life_lost=()) -> pb.ActorMessage:
  """A step that passes every check unless told otherwise."""
  if observations is None:
    observations = rng.random((num_envs,) + spec.observation_shape).astype(
        spec.observation_dtype)
  return protocol.make_step(
      observations,
      rewards if rewards is not None else rng.integers(-1, 2, num_envs).astype(np.float32),
      terminated if terminated is not None else [False] * num_envs,
      truncated if truncated is not None else [False] * num_envs, life_lost)


def shape_words(shape: Sequence[int]) -> Tuple[str, ...]:
  """How a message may print a shape: [2, 10, 5] or (2, 10, 5)."""
  shape = [int(d) for d in shape]
  return (str(shape), str(tuple(shape)), 'x'.join(map(str, shape)))


def _varint(value: int) -> bytes:
  value &= (1 << 64) - 1
  out = bytearray()
  while True:
    byte = value & 0x7F
    value >>= 7
    if value:
      out.append(byte | 0x80)
    else:
      out.append(byte)
      return bytes(out)


def _unknown_field(rng: random.Random) -> bytes:
  """One well-formed field with a number ActorMessage, Hello and Step do not use."""
  number = rng.choice([15, 99, 1000, 2 ** 29 - 1])
  wire = rng.choice([0, 1, 2, 5])
  tag = _varint(number << 3 | wire)
  if wire == 0:
    return tag + _varint(rng.getrandbits(64))
  if wire == 1:
    return tag + rng.randbytes(8)
  if wire == 5:
    return tag + rng.randbytes(4)
  payload = rng.randbytes(rng.randint(0, 64))
  return tag + _varint(len(payload)) + payload


# Dtype strings NumPy refuses in every way it can: TypeError, ValueError, SyntaxError.
BAD_DTYPE_STRINGS = ('float33', '', 'f4 ', '(-1,)f4', '(99999999999,)f4', ',', '(1e9,)f4',
                     'M8[xyz]', 'V-1', '[(', 'float32\x00', 'S99999999999999999999')
# Real dtypes that are not the observation dtype, and kinds that cannot travel as bytes.
OTHER_DTYPES = ('uint8', 'int8', 'int16', 'int32', 'int64', 'uint64', 'float16', 'float64',
                'bool', 'complex64', 'object', 'U8', 'S4', 'V8', 'datetime64[s]',
                'timedelta64', 'f4,i4', '(2,)f4', 'float128')


class Generator:
  """Draws hostile cases for a learner serving `spec` under `env_name` and `limits`.

  Every case that gets welcomed uses its own actor id (from 1,000,000 up), so
  cases never collide with each other or with the real actor, except those
  that try to on purpose.
  """

  def __init__(self, spec: EnvSpec, env_name: str, limits: Limits, real_actor_id: int,
               seed: int = 0):
    if not spec.is_discrete:
      raise ValueError('the hostile generator speaks for discrete-action envs (Catch)')
    self.spec, self.env_name, self.limits = spec, env_name, limits
    self.real_actor_id = real_actor_id
    self._py = random.Random(seed)
    self._np = np.random.default_rng(seed)
    self._next_actor_id = 1_000_000
    self._max_message = limits.max_message_bytes
    self._gzip_bomb = None

  def cases(self, count: int) -> List[Case]:
    names, weights = zip(*((name, weight) for name, (weight, _) in CATEGORIES.items()))
    drawn = self._py.choices(names, weights, k=count)
    return [getattr(self, CATEGORIES[name][1])() for name in drawn]

  # Helpers shared by the categories.

  def _actor_id(self) -> int:
    self._next_actor_id += 1
    return self._next_actor_id

  def _k(self) -> int:
    return self._py.choice([1, 2, 4, self._py.randint(1, self.limits.max_envs_per_actor)])

  def hello_bytes(self, k: int, **fields) -> bytes:
    """A valid hello for `k` envs under a fresh actor id."""
    return self._hello(k, **fields)

  def step_bytes(self, k: int, **fields) -> bytes:
    """A valid step for `k` envs (fields as for step_message)."""
    return self._step(k, **fields)

  def _hello(self, k: int, actor_id: Optional[int] = None, **fields) -> bytes:
    actor_id = self._actor_id() if actor_id is None else actor_id
    fields.setdefault('run_id', f'hostile-{actor_id}-{self._py.getrandbits(32):08x}')
    return hello_message(self.spec, self.env_name, actor_id, k, **fields).SerializeToString()

  def _step(self, k: int, **fields) -> bytes:
    return step_message(self.spec, k, self._np, **fields).SerializeToString()

  def _welcomed(self, k: int, steps: int = 0) -> Tuple[bytes, ...]:
    """A valid hello and `steps` valid steps."""
    return (self._hello(k),) + tuple(self._step(k) for _ in range(steps))

  def _refused(self, category, kind, name, script, codes, names=(), replies=None, envs=0,
               **expect) -> Case:
    return Case(category, kind, name, tuple(script),
                Expect(frozenset(codes), tuple(names), replies, **expect), envs=envs)

  def _bad_step(self, category, kind, name, step: pb.ActorMessage, k: int, names,
                codes=(Code.INVALID_ARGUMENT,), **expect) -> Case:
    """A welcomed stream: 0-2 valid steps, then `step`; refused after those replies."""
    good = self._py.choice([0, 0, 1, 2])
    return self._refused(category, kind, name,
                         self._welcomed(k, good) + (step.SerializeToString(),), codes, names,
                         replies=1 + good, envs=k, **expect)

  def _observations(self, k: int) -> np.ndarray:
    return self._np.random((k,) + self.spec.observation_shape).astype(
        self.spec.observation_dtype)

  # --- Categories (see CATEGORIES for their weights) ---

  def random_bytes(self) -> Case:
    size = self._py.choice([self._py.randint(0, 16), self._py.randint(17, 512),
                            self._py.randint(513, 16384)])
    data = self._py.randbytes(size)
    if self._py.random() < 0.5:
      return self._refused('random_bytes', 'first message', f'{size} random bytes first',
                           [data], {Code.INVALID_ARGUMENT, Code.FAILED_PRECONDITION},
                           [PROTOCOL_WORDS])
    k = self._k()
    return self._refused('random_bytes', 'after hello', f'{size} random bytes after a hello',
                         self._welcomed(k) + (data,),
                         {Code.INVALID_ARGUMENT, Code.FAILED_PRECONDITION},
                         [PROTOCOL_WORDS], replies=1, envs=k)

  def random_hello(self) -> Case:
    """A hello with every field drawn at random (specs, ids, names, sizes)."""
    rng = self._py
    obs = pb.TensorSpec(dtype=rng.choice(['float32', 'uint8', 'x', '', 'float64']),
                        shape=[rng.choice([0, 1, 5, 10, -1, 2 ** 40, -2 ** 63])
                               for _ in range(rng.randint(0, 4))])
    if tuple(obs.shape) == self.spec.observation_shape:  # Never a spec that fits.
      obs.shape.append(1)
    action = rng.choice([pb.ActionSpec(), pb.ActionSpec(num_actions=rng.choice(
        [0, -1, 3, 2 ** 62])), pb.ActionSpec(box=pb.BoxSpec(
            spec=pb.TensorSpec(dtype=rng.choice(['float32', 'int8', '?']),
                               shape=[rng.randint(-2, 3)]),
            low=[rng.uniform(-1e30, 1e30)], high=[float('nan')]))])
    hello = pb.Hello(protocol_version=rng.choice([0, 1, 1, 2, 2 ** 32 - 1]),
                     actor_id=rng.getrandbits(63) - 2 ** 62, run_id=rng.choice(['', 'r', 'é' * 9]),
                     num_envs=rng.choice([0, 1, 64, 2 ** 32 - 1]),
                     env_name=rng.choice([self.env_name, '', 'atari:Pong', '\x00']),
                     observation_spec=obs, action_spec=action,
                     split_index=rng.getrandbits(32), evaluation=rng.random() < 0.5)
    return self._refused('random_fields', 'random hello', f'hello {_brief(hello)}',
                         [pb.ActorMessage(hello=hello).SerializeToString()],
                         {Code.INVALID_ARGUMENT, Code.FAILED_PRECONDITION}, [PROTOCOL_WORDS])

  def random_step(self) -> Case:
    """After a valid hello, a step with random dtype, shape, data and counts."""
    k, rng = self._k(), self._py
    shape = [rng.choice([0, 1, k, 10, 5, 3]) for _ in range(rng.randint(0, 4))]
    if tuple(shape) == (k,) + self.spec.observation_shape:
      shape.append(1)
    tensor = pb.Tensor(dtype=rng.choice(['float32', 'uint8', 'int64', 'float64']), shape=shape,
                       data=rng.randbytes(rng.choice([0, 4, 400, rng.randint(0, 2000)])))
    step = pb.ActorMessage(step=pb.Step(
        observations=tensor, rewards=[rng.uniform(-1, 1) for _ in range(rng.randint(0, 3))],
        terminated=[rng.random() < 0.5 for _ in range(rng.randint(0, 3))]))
    return self._bad_step('random_fields', 'random step',
                          f'step {tensor.dtype}{shape} with {len(tensor.data)} bytes, k={k}',
                          step, k, [('step', 'observations', 'bytes', 'shape')])

  def wrong_dtype(self) -> Case:
    k = self._k()
    expected = self.spec.observation_dtype
    if self._py.random() < 0.4:
      dtype = self._py.choice(BAD_DTYPE_STRINGS)
      tensor = pb.Tensor(data=b'\0' * 4 * k * int(np.prod(self.spec.observation_shape)),
                         dtype=dtype, shape=(k,) + self.spec.observation_shape)
      step = pb.ActorMessage(step=pb.Step(observations=tensor, rewards=[0] * k,
                                          terminated=[False] * k, truncated=[False] * k))
      return self._bad_step('wrong_dtype', 'no such dtype', f'observations dtype {dtype!r}',
                            step, k, [(dtype.strip('\x00') or "''", repr(dtype)), ('dtype',)])
    dtype = self._py.choice(OTHER_DTYPES)
    numpy_dtype = np.dtype(dtype)
    count = k * int(np.prod(self.spec.observation_shape))
    data = b'\0' * (numpy_dtype.itemsize * count)
    step = pb.ActorMessage(step=pb.Step(
        observations=pb.Tensor(data=data, dtype=dtype, shape=(k,) + self.spec.observation_shape),
        rewards=[0] * k, terminated=[False] * k, truncated=[False] * k))
    return self._bad_step('wrong_dtype', 'other dtype', f'observations {dtype} for {expected}',
                          step, k, [(dtype, numpy_dtype.name, str(numpy_dtype)), (expected,)])

  def wrong_shape(self) -> Case:
    k = self._k()
    expected = (k,) + self.spec.observation_shape
    rng = self._py
    shape = rng.choice([(k + 1,) + self.spec.observation_shape, (max(k - 1, 0),) +
                        self.spec.observation_shape, (k,), (), expected + (1,),
                        (k, int(np.prod(self.spec.observation_shape))),
                        (k,) + tuple(d + 1 for d in self.spec.observation_shape),
                        tuple(reversed(expected))])
    if shape == expected:
      shape = expected + (1,)
    observations = np.zeros(shape, self.spec.observation_dtype)
    step = step_message(self.spec, k, self._np, observations=observations)
    return self._bad_step('wrong_shape', 'shape', f'observations {list(shape)} for '
                          f'{list(expected)}', step, k,
                          [shape_words(shape), shape_words(expected)])

  def data_length(self) -> Case:
    k = self._k()
    step = step_message(self.spec, k, self._np)
    needed = len(step.step.observations.data)
    size = self._py.choice([0, 1, needed - 1, needed + 1, needed * 2, self._py.randint(0, needed)])
    if size == needed:
      size += 3
    step.step.observations.data = self._py.randbytes(size)
    return self._bad_step('data_length', 'bytes for shape', f'{size} bytes for {needed}', step,
                          k, [(f'{size} bytes', f'{size}'), (str(needed),)])

  def huge_shape(self) -> Case:
    """Declared shapes whose element or byte count is huge or overflows int64."""
    k = self._k()
    shape = self._py.choice([
        [2 ** 32, 2 ** 32], [2 ** 63 - 1, 2], [2 ** 31] * 3, [k, 2 ** 40, 5], [2 ** 62, 4],
        [k, 2 ** 61, 1], [2 ** 21] * 3, [0, 2 ** 63 - 1], [2 ** 32, 2 ** 32, 0, 7],
        [3, 3, 3, 2 ** 60]])
    size = self._py.choice([0, 0, 4, 400, 4 * k * 50])
    step = pb.ActorMessage(step=pb.Step(
        observations=pb.Tensor(data=self._py.randbytes(size), dtype='float32', shape=shape),
        rewards=[0] * k, terminated=[False] * k, truncated=[False] * k))
    elements = math.prod(shape)
    # The details must not state a wrong size (an int64 overflow would say 0 or
    # a negative count): the true one, or words saying it is too large.
    size_words = (str(elements * 4), 'too large', 'too many', 'overflow', 'exceed',
                  'larger than', str(list(shape)) if elements == 0 else '\x00never')
    return self._bad_step('huge_shape', 'declared shape', f'shape {shape} with {size} bytes',
                          step, k, [shape_words(shape), size_words])

  def nonfinite(self) -> Case:
    k = self._k()
    bad = self._py.choice([np.nan, np.inf, -np.inf])
    if self._py.random() < 0.6:
      observations = self._observations(k)
      env = self._py.randrange(k)
      index = (env,) + tuple(self._py.randrange(d) for d in self.spec.observation_shape)
      observations[index] = bad
      step = step_message(self.spec, k, self._np, observations=observations)
      return self._bad_step('nonfinite', 'observations', f'{bad} observation of env {env}',
                            step, k, [('observation',), ('nan', 'inf', 'finite')])
    rewards = np.zeros(k, np.float32)
    rewards[self._py.randrange(k)] = bad
    step = step_message(self.spec, k, self._np, rewards=rewards)
    return self._bad_step('nonfinite', 'rewards', f'{bad} reward', step, k,
                          [('reward',), ('nan', 'inf', 'finite')])

  def extreme_finite(self) -> Case:
    """Finite but extreme values (float32 max): refused, or served without harm."""
    k = self._k()
    big = float(np.finfo(np.float32).max) * self._py.choice([1, -1])
    if self._py.random() < 0.5:
      step = step_message(self.spec, k, self._np, rewards=[big] * k)
      what = f'rewards {big:g}'
    else:
      step = step_message(self.spec, k, self._np,
                          observations=np.full((k,) + self.spec.observation_shape, big,
                                               self.spec.observation_dtype))
      what = f'observations {big:g}'
    return Case('extreme_finite', what.split()[0], what,
                lockstep(self._welcomed(k) + (step.SerializeToString(),)) + (HalfClose(),),
                Expect(frozenset({Code.OK, Code.INVALID_ARGUMENT}),
                       (('reward', 'observation'),)), envs=k)

  def poison_rewards(self) -> Case:
    """Rewards at float32's edge for whole unrolls (every env, 45 steps): finite one by
    one, their discounted sums overflow to Inf in training. Refused, or served while the
    learner goes on training (a non-finite loss must skip its update, not stop it)."""
    k = self.limits.max_envs_per_actor
    big = float(np.finfo(np.float32).max)
    steps = 45  # Two unrolls of the toy configs' 20 steps, and some.
    poison = self._step(k, rewards=[big] * k)
    return Case('poison_rewards', 'float32 max rewards', f'{steps} steps of {k} rewards {big:g}',
                lockstep((self._hello(k),) + (poison,) * steps) + (HalfClose(),),
                Expect(frozenset({Code.OK, Code.INVALID_ARGUMENT}), (('reward',),),
                       max_s=60), envs=k)

  def counts(self) -> Case:
    k = self._k()
    field = self._py.choice(['rewards', 'terminated', 'truncated', 'life_lost'])
    # life_lost may be empty (no env lost a life); a set flag keeps it in the message.
    n = self._py.choice([k - 1, k + 1, 2 * k + 3, 10_000] + ([] if field == 'life_lost' else [0]))
    if field == 'life_lost' and n == 0:
      n = k + 1
    values = ({'rewards': [0.0] * n} if field == 'rewards' else
              {field: [field == 'life_lost'] * n})
    step = step_message(self.spec, k, self._np, **values)
    return self._bad_step('counts', field, f'{n} {field} for {k} envs', step, k,
                          [(field,), (str(n),), (str(k),)])

  def order(self) -> Case:
    k = self._k()
    kind = self._py.choice(['step before hello', 'duplicate hello', 'hello after steps',
                            'empty message first', 'empty message after hello',
                            'hello with another actor id'])
    codes = {Code.FAILED_PRECONDITION, Code.INVALID_ARGUMENT}
    if kind == 'step before hello':
      return self._refused('order', kind, kind, [self._step(k)], codes, [('hello',), ('step',)])
    if kind == 'empty message first':
      return self._refused('order', kind, kind, [b''], codes, [('hello',), ('empty',)])
    steps = self._py.randint(1, 3) if kind == 'hello after steps' else 0
    second = {'duplicate hello': self._hello(k), 'hello after steps': self._hello(k),
              'empty message after hello': b'',
              'hello with another actor id': self._hello(k)}[kind]
    words = ('empty',) if kind == 'empty message after hello' else ('hello',)
    return self._refused('order', kind, kind, self._welcomed(k, steps) + (second,), codes,
                         [words], replies=1 + steps, envs=k)

  def protocol_version(self) -> Case:
    version = self._py.choice([0, protocol.PROTOCOL_VERSION - 1, protocol.PROTOCOL_VERSION + 1,
                               99, 2 ** 31, 2 ** 32 - 1])
    return self._refused('protocol_version', 'version', f'protocol version {version}',
                         [self._hello(self._k(), protocol_version=version)],
                         {Code.FAILED_PRECONDITION}, [(str(version),), ('version',)])

  def env_spec(self) -> Case:
    """A hello naming another env, or other specs, or specs no env can have."""
    k = self._k()
    kind = self._py.choice(['env name', 'observation shape', 'observation dtype',
                            'no such dtype', 'negative dimension', 'num_actions', 'box actions',
                            'no action spec', 'empty run_id'])
    codes = {Code.FAILED_PRECONDITION, Code.INVALID_ARGUMENT}
    message = hello_message(self.spec, self.env_name, self._actor_id(), k)
    hello = message.hello
    if kind == 'env name':
      name = self._py.choice(['', 'atari:Pong', self.env_name.lower(), self.env_name + ' ',
                              'é' * 40, 'Catch\x00'])
      hello.env_name = name
      names = [(repr(name), name.strip() or "''"), (self.env_name,)]
    elif kind == 'observation shape':
      shape = self._py.choice([[], [10], [5, 10], [10, 5, 1], [84, 84, 4]])
      del hello.observation_spec.shape[:]
      hello.observation_spec.shape.extend(shape)
      names = [shape_words(shape), shape_words(self.spec.observation_shape)]
    elif kind == 'observation dtype':
      hello.observation_spec.dtype = self._py.choice(['uint8', 'float64', 'int32', 'bool'])
      names = [(hello.observation_spec.dtype,), (self.spec.observation_dtype,)]
    elif kind == 'no such dtype':
      # Not '': an unset dtype means uint8 (the proto3 default).
      hello.observation_spec.dtype = self._py.choice([d for d in BAD_DTYPE_STRINGS if d])
      names = [(hello.observation_spec.dtype.strip('\x00') or "''",
                repr(hello.observation_spec.dtype)), ('dtype',)]
    elif kind == 'negative dimension':
      hello.observation_spec.shape[0] = self._py.choice([-1, -2 ** 63])
      names = [(str(hello.observation_spec.shape[0]),)]
    elif kind == 'num_actions':
      n = self._py.choice([0, -1, 2, 4, 2 ** 62])
      hello.action_spec.num_actions = n
      names = [(str(n),), ('action',)]
    elif kind == 'box actions':
      hello.action_spec.box.spec.dtype = self._py.choice(['float32', 'float64', 'q'])
      hello.action_spec.box.spec.shape.extend([self._py.choice([1, 2, -1])])
      hello.action_spec.box.low.extend([self._py.choice([-1.0, float('nan')])] *
                                       self._py.randint(0, 3))
      hello.action_spec.box.high.extend([1.0] * self._py.randint(0, 3))
      names = [('action',)]
    elif kind == 'no action spec':
      hello.ClearField('action_spec')
      names = [('action',)]
    else:
      hello.run_id = ''
      names = [('run_id',)]
    return self._refused('env_spec', kind, f'{kind}: {_brief(hello)}',
                         [message.SerializeToString()], codes, names)

  def num_envs(self) -> Case:
    n = self._py.choice([0, self.limits.max_envs_per_actor + 1, 2 ** 31, 2 ** 32 - 1,
                         self._py.randint(self.limits.max_envs_per_actor + 1, 2 ** 32 - 1)])
    return self._refused('num_envs', 'num_envs', f'num_envs={n}', [self._hello(n)],
                         {Code.INVALID_ARGUMENT}, [(str(n),), ('num_envs', 'envs')])

  def identity(self) -> Case:
    """Valid hellos under odd ids (negative, int64 extremes, huge split): served or refused."""
    k = self._k()
    actor_id = self._py.choice([-1, -2 ** 63, 2 ** 63 - 1, self._actor_id(), self._actor_id()])
    split = self._py.choice([0, 1, 2 ** 32 - 1, self._py.getrandbits(32)])
    steps = self._py.randint(1, 2)
    script = lockstep((self._hello(k, actor_id=actor_id, split_index=split,
                                   evaluation=self._py.random() < 0.3),)
                      + tuple(self._step(k) for _ in range(steps))) + (HalfClose(),)
    # The fixed odd ids recur: a case running beside another with the same id and
    # split is rightly refused as a second connection of that actor (ALREADY_EXISTS).
    return Case('identity', 'odd ids', f'actor_id {actor_id} split {split} k={k}', script,
                Expect(frozenset({Code.OK, Code.INVALID_ARGUMENT, Code.ALREADY_EXISTS}),
                       (('actor_id', 'split'),)), envs=k)

  def hijack(self) -> Case:
    """The real actor's id and split while it is connected."""
    k = self._k()
    kind = self._py.choice(['same id', 'same id then steps'])
    script = [self._hello(k, actor_id=self.real_actor_id, split_index=0)]
    if kind == 'same id then steps':
      script += [self._step(k), self._step(k)]
    return self._refused('hijack', kind, f'actor_id {self.real_actor_id} split 0 ({kind})',
                         lockstep(script), {Code.ALREADY_EXISTS},
                         [(f'actor_id {self.real_actor_id}', str(self.real_actor_id)),
                          ('already', 'connected')], replies=0)

  def oversize(self) -> Case:
    """A message over --max_message_mb, as the first message or as a step."""
    size = self._max_message + self._py.choice([1, 1024, self._max_message])
    if self._py.random() < 0.5:
      data = pb.ActorMessage(hello=pb.Hello(run_id='x' * size)).SerializeToString()
      return self._refused('oversize', 'first message', f'{len(data):,}-byte hello', [data],
                           {Code.RESOURCE_EXHAUSTED}, [SIZE_WORDS])
    k = self._k()
    step = step_message(self.spec, k, self._np)
    step.step.observations.data = bytes(size)
    return self._refused('oversize', 'step', f'{size:,}-byte step',
                         self._welcomed(k) + (step.SerializeToString(),),
                         {Code.RESOURCE_EXHAUSTED}, [SIZE_WORDS], replies=1, envs=k)

  def near_limit(self) -> Case:
    """Just under --max_message_mb and wrong: read, then refused by content."""
    k = self._k()
    room = self._max_message - 4096
    if self._py.random() < 0.5:
      n = room // 5  # Packed floats: 4 bytes each.
      step = step_message(self.spec, k, self._np, rewards=np.zeros(n, np.float32))
      return self._bad_step('near_limit', 'rewards', f'{n:,} rewards', step, k,
                            [('rewards',), (str(n),)])
    step = step_message(self.spec, k, self._np)
    step.step.observations.data = bytes(room)
    return self._bad_step('near_limit', 'observations', f'{room:,} observation bytes', step, k,
                          [(f'{room} bytes', str(room)),])

  def truncated(self) -> Case:
    k = self._k()
    if self._py.random() < 0.5:
      whole = self._hello(k)
      cut = whole[:self._py.randrange(1, len(whole))]
      return self._refused('truncated', 'hello', f'hello cut at {len(cut)}/{len(whole)} bytes',
                           [cut], {Code.INVALID_ARGUMENT, Code.FAILED_PRECONDITION},
                           [PROTOCOL_WORDS])
    whole = self._step(k)
    cut = whole[:self._py.randrange(1, len(whole))]
    return self._refused('truncated', 'step', f'step cut at {len(cut)}/{len(whole)} bytes',
                         self._welcomed(k) + (cut,),
                         {Code.INVALID_ARGUMENT, Code.FAILED_PRECONDITION},
                         [PROTOCOL_WORDS], replies=1, envs=k)

  def unknown_fields(self) -> Case:
    """Fields from a newer protocol: ignored, the stream served as usual."""
    k = self._k()
    extra = b''.join(_unknown_field(self._py) for _ in range(self._py.randint(1, 4)))
    steps = self._py.randint(1, 2)
    script = lockstep((self._hello(k) + extra,) +
                      tuple(self._step(k) + extra for _ in range(steps))) + (HalfClose(),)
    return Case('unknown_fields', 'ignored', f'{len(extra)} bytes of unknown fields', script,
                Expect(frozenset({Code.OK}), replies=1 + steps), envs=k)

  def wire_garbage(self) -> Case:
    """Known fields with the wrong wire type, overlong varints, lengths past the end."""
    kind = self._py.choice(['wrong wire type', 'overlong varint', 'length past end',
                            'negative length'])
    data = {
        'wrong wire type': b'\x08\x01',            # field 1 (hello) as a varint
        'overlong varint': b'\x0a' + b'\xff' * 11,  # a length of 11 varint bytes
        'length past end': b'\x0a\x7f\x08\x01',
        'negative length': b'\x0a' + _varint(-1),
    }[kind]
    return self._refused('wire_garbage', kind, f'{kind}: {data.hex()}', [data],
                         {Code.INVALID_ARGUMENT, Code.FAILED_PRECONDITION}, [PROTOCOL_WORDS])

  def disconnect(self) -> Case:
    """The client leaves: mid-batch, right after its hello, or by half-closing early."""
    k = self._k()
    kind = self._py.choice(['cancel mid-batch', 'cancel after hello', 'half-close at once',
                            'half-close after hello', 'half-close after steps'])
    if kind == 'cancel mid-batch':
      script = self._welcomed(k, 1) + (Cancel(),)
      codes = {Code.CANCELLED}
    elif kind == 'cancel after hello':
      script = self._welcomed(k) + (AwaitReplies(1), Cancel())
      codes = {Code.CANCELLED}
    elif kind == 'half-close at once':
      script = (HalfClose(),)  # Nothing said, nothing held: OK, or a refusal naming the hello.
      codes = {Code.OK, Code.FAILED_PRECONDITION, Code.INVALID_ARGUMENT}
    elif kind == 'half-close after hello':
      script = self._welcomed(k) + (HalfClose(),)
      codes = {Code.OK}
    else:
      script = self._welcomed(k, 2) + (HalfClose(),)
      codes = {Code.OK}
    return Case('disconnect', kind, kind, script, Expect(frozenset(codes), (('hello',),)),
                envs=k)

  def half_open(self) -> Case:
    """Streams that go silent: never a hello, or silent after it."""
    k = self._k()
    kind = self._py.choice(['open, never send', 'hello, then silent',
                            'hello and a step, then silent'])
    if kind == 'open, never send':
      limit = self.limits.hello_timeout_s
      return self._refused('half_open', kind, kind, [Pause(limit + 30)],
                           {Code.DEADLINE_EXCEEDED}, [('hello',)], max_s=limit + 3)
    steps = 0 if kind == 'hello, then silent' else 1
    limit = self.limits.stream_idle_timeout_s
    return self._refused('half_open', kind, kind, self._welcomed(k, steps) + (Pause(limit + 30),),
                         {Code.DEADLINE_EXCEEDED, Code.ABORTED, Code.UNAVAILABLE},
                         [SILENCE_WORDS], replies=1 + steps, envs=k, max_s=limit + 3)

  def slow(self) -> Case:
    """Long pauses between messages: served while under the idle limit, ended past it."""
    k = self._k()
    limit = self.limits.stream_idle_timeout_s
    steps = self._py.randint(1, 3)
    script = [self._hello(k)]
    if self._py.random() < 0.7:
      for i in range(steps):
        script += [AwaitReplies(1 + i), Pause(self._py.uniform(0.2, 0.6) * limit),
                   self._step(k)]
      script += [AwaitReplies(1 + steps), HalfClose()]
      return Case('slow', 'pauses under the idle limit', f'{steps} steps, pauses < {limit:g} s',
                  tuple(script), Expect(frozenset({Code.OK}), replies=1 + steps,
                                        max_s=steps * limit + 10), envs=k)
    script += [AwaitReplies(1), Pause(limit * 1.5 + 30), self._step(k)]
    return self._refused('slow', 'pause over the idle limit', f'pause > {limit:g} s', script,
                         {Code.DEADLINE_EXCEEDED, Code.ABORTED, Code.UNAVAILABLE},
                         [SILENCE_WORDS], replies=1, envs=k, max_s=limit + 3)

  def silent_stream(self) -> Case:
    """A valid hello, then nothing: ended for silence, or refused past the stream limit."""
    limit = self.limits.stream_idle_timeout_s
    return self._refused('silent', 'hello, then silent', 'hello, then silent',
                         [self._hello(1), Pause(limit + 30)],
                         {Code.DEADLINE_EXCEEDED, Code.ABORTED, Code.UNAVAILABLE},
                         [SILENCE_WORDS + ('max_actor_streams',)],
                         envs=1, max_s=limit + 3)

  def served_stream(self, name: str) -> Case:
    """A well-behaved actor: hello, two steps, half-close; served to the end."""
    k = self._k()
    return Case('served', 'well-behaved', name,
                self._welcomed(k, 2) + (AwaitReplies(3), HalfClose()),
                Expect(frozenset({Code.OK}), replies=3), envs=k)

  def metadata(self) -> Case:
    """Request headers over gRPC's limits: refused by gRPC, the learner unmoved."""
    size = self._py.choice([20_000, 100_000, 1_000_000])
    case = self._refused('metadata', 'huge header', f'{size:,}-byte header', [self._hello(1)],
                         {Code.RESOURCE_EXHAUSTED, Code.INTERNAL, Code.UNAVAILABLE},
                         [('metadata', 'header')])
    return dataclasses.replace(case, metadata=(('x-hostile', 'x' * size),))

  def echo_bomb(self) -> Case:
    """Huge strings and shapes that a careless refusal would echo, or parse slowly."""
    room = self._max_message - 4096
    kind = self._py.choice(['env_name', 'hello dtype', 'step dtype', 'shape dims'])
    k = self._k()
    if kind == 'env_name':
      message = hello_message(self.spec, self.env_name, self._actor_id(), k)
      message.hello.env_name = 'A' * room
      return self._refused('echo_bomb', kind, f'{room:,}-character env_name',
                           [message.SerializeToString()], {Code.FAILED_PRECONDITION,
                                                           Code.INVALID_ARGUMENT}, [('env',)])
    # A dtype of many comma-separated fields: NumPy builds a structured dtype,
    # taking a second or more for a megabyte (the event loop stalls meanwhile).
    bomb = ','.join(['f4'] * (room // 3))
    if kind == 'hello dtype':
      message = hello_message(self.spec, self.env_name, self._actor_id(), k)
      message.hello.observation_spec.dtype = bomb
      return self._refused('echo_bomb', kind, f'{len(bomb):,}-character dtype in the hello',
                           [message.SerializeToString()], {Code.FAILED_PRECONDITION,
                                                           Code.INVALID_ARGUMENT}, [('dtype',)],
                           max_s=2.0)
    if kind == 'step dtype':
      step = step_message(self.spec, k, self._np)
      step.step.observations.dtype = bomb
      return self._bad_step('echo_bomb', kind, f'{len(bomb):,}-character dtype in a step',
                            step, k, [('dtype',)], max_s=2.0)
    dims = [1] * (room // 2)
    step = pb.ActorMessage(step=pb.Step(observations=pb.Tensor(dtype='float32', shape=dims,
                                                               data=b'\0' * 4),
                                        rewards=[0] * k, terminated=[False] * k,
                                        truncated=[False] * k))
    return self._bad_step('echo_bomb', kind, f'shape of {len(dims):,} dimensions', step, k,
                          [('shape', 'dimension')])

  def framing(self) -> Case:
    """What only a bare HTTP/2 client sends: a bad length prefix, bombs, trickles."""
    kind = self._py.choice(['declared 4 GiB', 'declared more than sent', 'compressed, no encoding',
                            'gzip bomb', 'unknown encoding', 'hello a byte at a time',
                            'wrong content-type', 'no such method', 'rapid reset',
                            'never reads replies'])
    hello = self._hello(1)
    size_codes = {Code.RESOURCE_EXHAUSTED}
    if kind == 'declared 4 GiB':
      raw = RawScript(data=[_grpc_frame(hello, length=2 ** 32 - 1)])
      expect = Expect(frozenset(size_codes), (SIZE_WORDS,))
    elif kind == 'declared more than sent':
      # gRPC drops a message cut short by the end of the stream: the learner sees
      # a stream that ended before its hello (OK, as for 'half-close at once').
      raw = RawScript(data=[_grpc_frame(hello, length=len(hello) + 100)], end_stream=True)
      expect = Expect(frozenset({Code.OK, Code.INTERNAL, Code.INVALID_ARGUMENT}),
                      (('incomplete', 'truncated', 'partial', 'message', 'end of stream'),),
                      replies=0)
    elif kind == 'compressed, no encoding':
      raw = RawScript(data=[_grpc_frame(hello, compressed=True)])
      expect = Expect(frozenset({Code.INTERNAL, Code.UNIMPLEMENTED, Code.INVALID_ARGUMENT}),
                      (('compress', 'encoding'),))
    elif kind == 'gzip bomb':
      if self._gzip_bomb is None:  # 64 MiB of zeros in a message, gzipped to ~64 KiB.
        self._gzip_bomb = gzip.compress(b'\n\x80\x80\x80\x20' + bytes(64 << 20), 9)
      raw = RawScript(data=[_grpc_frame(self._gzip_bomb, compressed=True)],
                      headers=(('grpc-encoding', 'gzip'),))
      expect = Expect(frozenset({Code.RESOURCE_EXHAUSTED, Code.INTERNAL}), (SIZE_WORDS,))
    elif kind == 'unknown encoding':
      raw = RawScript(data=[_grpc_frame(hello, compressed=True)],
                      headers=(('grpc-encoding', 'hostile-zip'),))
      expect = Expect(frozenset({Code.UNIMPLEMENTED, Code.INTERNAL}),
                      (('hostile-zip', 'encoding', 'compress'),))
    elif kind == 'hello a byte at a time':
      interval = (self.limits.hello_timeout_s + 2) / len(_grpc_frame(hello))
      raw = RawScript(data=[_grpc_frame(hello)], trickle_s=max(interval, 0.02))
      expect = Expect(frozenset({Code.DEADLINE_EXCEEDED}), (('hello',),),
                      max_s=self.limits.hello_timeout_s + 3)
    elif kind == 'wrong content-type':
      # gRPC serves it as any request: the first message decides.
      raw = RawScript(data=[_grpc_frame(b'')], content_type='text/plain')
      expect = Expect(frozenset({Code.FAILED_PRECONDITION, Code.INVALID_ARGUMENT,
                                 Code.UNIMPLEMENTED}),
                      (('hello', 'content-type', 'content type'),))
    elif kind == 'no such method':
      raw = RawScript(data=[_grpc_frame(hello)], path='/seed.proto.Learner/Hostile')
      expect = Expect(frozenset({Code.UNIMPLEMENTED}), (('method', 'Hostile'),))
    elif kind == 'never reads replies':
      # A window of 0: the learner cannot send its welcome; its handler must not
      # wait for ever (it ends on the idle timeout), but the status it ends with
      # queues behind the welcome this peer never takes.
      raw = RawScript(data=[_grpc_frame(hello)], window=0)
      limit = self.limits.stream_idle_timeout_s
      expect = Expect(frozenset({Code.DEADLINE_EXCEEDED, Code.ABORTED, Code.UNAVAILABLE,
                                 Code.RESOURCE_EXHAUSTED, Code.CANCELLED}),
                      (SILENCE_WORDS + ('read', 'window', 'flow'),), max_s=limit + 3,
                      unanswerable=True)
    else:
      raw = RawScript(data=[_grpc_frame(hello)], rapid_resets=500)
      expect = Expect(frozenset({Code.OK}), max_s=30)
    return Case('framing', kind, kind, (), expect, raw=raw)


def lockstep(messages: Sequence[bytes]) -> Tuple[Op, ...]:
  """Each message after the first sent once the reply to the one before has come.

  As a real actor does; needed where the learner may refuse a message that is
  not the last: a write that crosses its status makes gRPC's Python client
  report INTERNAL 'Internal error from Core' instead of the learner's status.
  """
  script: List[Op] = []
  for i, message in enumerate(messages):
    if i:
      script.append(AwaitReplies(i))
    script.append(message)
  return tuple(script) + (AwaitReplies(len(messages)),)


def _brief(hello: pb.Hello) -> str:
  text = str(hello).replace('\n', ' ')
  return text if len(text) < 200 else text[:200] + '...'


# Category -> (weight, Generator method). The weights favour the cheap, fast
# cases; those that hold a stream for seconds (half_open, slow) are few.
CATEGORIES: Dict[str, Tuple[float, str]] = {
    'random_bytes': (8, 'random_bytes'),
    'random_hello': (5, 'random_hello'),
    'random_step': (5, 'random_step'),
    'wrong_dtype': (7, 'wrong_dtype'),
    'wrong_shape': (6, 'wrong_shape'),
    'data_length': (5, 'data_length'),
    'huge_shape': (5, 'huge_shape'),
    'nonfinite': (6, 'nonfinite'),
    'extreme_finite': (2, 'extreme_finite'),
    'poison_rewards': (0.3, 'poison_rewards'),
    'counts': (6, 'counts'),
    'order': (6, 'order'),
    'protocol_version': (3, 'protocol_version'),
    'env_spec': (7, 'env_spec'),
    'num_envs': (4, 'num_envs'),
    'identity': (4, 'identity'),
    'hijack': (2, 'hijack'),
    'oversize': (2, 'oversize'),
    'near_limit': (1, 'near_limit'),
    'truncated': (5, 'truncated'),
    'unknown_fields': (3, 'unknown_fields'),
    'wire_garbage': (3, 'wire_garbage'),
    'disconnect': (4, 'disconnect'),
    'half_open': (1.5, 'half_open'),
    'slow': (1, 'slow'),
    'metadata': (0.5, 'metadata'),
    'echo_bomb': (0.5, 'echo_bomb'),
    'framing': (2, 'framing'),
}


# --- Playing a case over gRPC --------------------------------------------------------------

def channel_options() -> List[Tuple[str, int]]:
  """No client-side size limits (oversized messages must reach the learner), and a
  connection of its own (gRPC would otherwise share one between channels)."""
  return [('grpc.max_send_message_length', -1), ('grpc.max_receive_message_length', -1),
          ('grpc.use_local_subchannel_pool', 1), ('grpc.enable_retries', 0)]


async def play(channel: aio.Channel, case: Case, limit_s: float) -> Result:
  """Runs `case.script` on a new Act stream; the status the learner ends it with.

  Gives up (code None) `limit_s` after the start: a learner that holds a stream
  open with no status fails the case.
  """
  start, started_at = time.monotonic(), time.time()
  call = channel.stream_stream(protocol.ACT_METHOD, request_serializer=None,
                               response_deserializer=None)(metadata=case.metadata or None)
  replies = 0
  arrived = asyncio.Event()

  async def read_all():
    nonlocal replies
    try:
      while True:
        reply = await call.read()
        if reply is aio.EOF:
          return
        replies += 1
        arrived.set()
    except asyncio.CancelledError:
      return  # gRPC cancels a pending read when the call is cancelled (Cancel()).

  reader = asyncio.ensure_future(read_all())

  async def run_script():
    for op in case.script:
      if reader.done():
        return  # The learner ended the stream: the rest cannot be sent.
      if isinstance(op, bytes):
        await call.write(op)
      elif isinstance(op, Pause):
        await asyncio.wait([reader], timeout=op.seconds)
      elif isinstance(op, AwaitReplies):
        while replies < op.count and not reader.done():
          arrived.clear()
          waiter = asyncio.ensure_future(arrived.wait())
          await asyncio.wait([reader, waiter], return_when=asyncio.FIRST_COMPLETED)
          waiter.cancel()
      elif isinstance(op, HalfClose):
        await call.done_writing()
      elif isinstance(op, Cancel):
        call.cancel()
        return

  try:
    await asyncio.wait_for(run_script(), limit_s)
  except asyncio.TimeoutError:
    pass
  except Exception:  # pylint: disable=broad-except
    pass  # A write after the learner ended the stream: its status says why.
  try:
    await asyncio.wait_for(asyncio.shield(reader), max(0.1, limit_s - (time.monotonic() - start)))
  except asyncio.TimeoutError:
    call.cancel()
    reader.cancel()
    return Result(None, '', replies, time.monotonic() - start, started_at=started_at)
  except Exception:  # pylint: disable=broad-except
    pass  # The read failed with the stream's status, asked for below.
  code, details = await call.code(), await call.details()
  return Result(code, details or '', replies, time.monotonic() - start, started_at=started_at)


# --- Bare HTTP/2 ---------------------------------------------------------------------------

def _grpc_frame(message: bytes, length: Optional[int] = None, compressed: bool = False) -> bytes:
  """gRPC's 5-byte prefix (compressed flag, big-endian length) and the message."""
  return bytes([1 if compressed else 0]) + struct.pack(
      '>I', len(message) if length is None else length) + message


@dataclasses.dataclass(frozen=True)
class RawScript:
  """One request on a bare HTTP/2 connection (stream 1).

  data: DATA payloads (gRPC-framed), sent in order; end_stream after the last.
  trickle_s: send the data one byte per this many seconds.
  rapid_resets: first open and reset this many streams (HEADERS, RST_STREAM).
  window: the stream receive window we announce (0: we never take a reply).
  """
  data: Sequence[bytes]
  end_stream: bool = False
  trickle_s: float = 0.0
  path: str = protocol.ACT_METHOD
  content_type: str = 'application/grpc'
  headers: Tuple[Tuple[str, str], ...] = ()
  rapid_resets: int = 0
  window: Optional[int] = None


_PREFACE = b'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'
DATA, HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = (
    0, 1, 3, 4, 6, 7, 8, 9)
END_STREAM, ACK, END_HEADERS = 0x1, 0x1, 0x4
_MAX_FRAME = 16384


def h2_frame(kind: int, flags: int, stream: int, payload: bytes = b'') -> bytes:
  return struct.pack('>I', len(payload))[1:] + bytes([kind, flags]) + struct.pack(
      '>I', stream) + payload


SETTINGS_INITIAL_WINDOW_SIZE = 0x4


def h2_preface(window: Optional[int] = None) -> bytes:
  """What a client sends first: the preface and SETTINGS (a stream window, if given)."""
  settings = b'' if window is None else struct.pack('>HI', SETTINGS_INITIAL_WINDOW_SIZE, window)
  return _PREFACE + h2_frame(SETTINGS, 0, 0, settings)


def _hpack_int(value: int, prefix_bits: int, first: int = 0) -> bytes:
  limit = (1 << prefix_bits) - 1
  if value < limit:
    return bytes([first | value])
  out, value = bytearray([first | limit]), value - limit
  while value >= 128:
    out.append(value % 128 + 128)
    value //= 128
  out.append(value)
  return bytes(out)


def _hpack_literal(name: str, value: str) -> bytes:
  """A literal header field without indexing, new name, no Huffman coding."""
  name_b, value_b = name.encode(), value.encode()
  return (b'\x00' + _hpack_int(len(name_b), 7) + name_b + _hpack_int(len(value_b), 7) + value_b)


def _request_headers(script: RawScript, authority: str) -> bytes:
  fields = [(':method', 'POST'), (':scheme', 'http'), (':path', script.path),
            (':authority', authority), ('content-type', script.content_type),
            ('te', 'trailers')] + list(script.headers)
  return b''.join(_hpack_literal(n, v) for n, v in fields)


# RFC 7541 appendix A: the names (and values) of the static table, index 1 on.
_STATIC_TABLE = [(':authority', ''), (':method', 'GET'), (':method', 'POST'), (':path', '/'),
                 (':path', '/index.html'), (':scheme', 'http'), (':scheme', 'https'),
                 (':status', '200'), (':status', '204'), (':status', '206'),
                 (':status', '304'), (':status', '400'), (':status', '404'),
                 (':status', '500')] + [(name, '') for name in (
                     'accept-charset accept-encoding accept-language accept-ranges accept '
                     'access-control-allow-origin age allow authorization cache-control '
                     'content-disposition content-encoding content-language content-length '
                     'content-location content-range content-type cookie date etag expect '
                     'expires from host if-match if-modified-since if-none-match if-range '
                     'if-unmodified-since last-modified link location max-forwards '
                     'proxy-authenticate proxy-authorization range referer refresh '
                     'retry-after server set-cookie strict-transport-security '
                     'transfer-encoding user-agent vary via www-authenticate').split()]
_STATIC_TABLE[15] = ('accept-encoding', 'gzip, deflate')


class HpackDecoder:
  """Enough HPACK to read a gRPC status: static and dynamic tables, no Huffman
  (gRPC sends its status and message as plain literals; a Huffman string reads
  as '<huffman>')."""

  def __init__(self):
    self._dynamic: List[Tuple[str, str]] = []
    self._max_size = 4096

  def decode(self, block: bytes) -> List[Tuple[str, str]]:
    fields, i = [], 0
    while i < len(block):
      byte = block[i]
      if byte & 0x80:
        index, i = self._int(block, i, 7)
        fields.append(self._entry(index))
      elif byte & 0xC0 == 0x40:
        field, i = self._literal(block, i, 6)
        fields.append(field)
        self._dynamic.insert(0, field)
        self._evict()
      elif byte & 0xE0 == 0x20:
        self._max_size, i = self._int(block, i, 5)
        self._evict()
      else:
        field, i = self._literal(block, i, 4)
        fields.append(field)
    return fields

  def _entry(self, index: int) -> Tuple[str, str]:
    if 1 <= index <= len(_STATIC_TABLE):
      return _STATIC_TABLE[index - 1]
    return self._dynamic[index - len(_STATIC_TABLE) - 1]

  def _literal(self, block: bytes, i: int, prefix_bits: int):
    index, i = self._int(block, i, prefix_bits)
    if index:
      name = self._entry(index)[0]
    else:
      name, i = self._string(block, i)
    value, i = self._string(block, i)
    return (name, value), i

  @staticmethod
  def _int(block: bytes, i: int, prefix_bits: int):
    limit = (1 << prefix_bits) - 1
    value, i = block[i] & limit, i + 1
    if value < limit:
      return value, i
    shift = 0
    while True:
      byte, i = block[i], i + 1
      value += (byte & 0x7F) << shift
      shift += 7
      if not byte & 0x80:
        return value, i

  def _string(self, block: bytes, i: int):
    huffman = block[i] & 0x80
    length, i = self._int(block, i, 7)
    text = '<huffman>' if huffman else block[i:i + length].decode('utf-8', 'replace')
    return text, i + length

  def _evict(self):
    while sum(32 + len(n) + len(v) for n, v in self._dynamic) > self._max_size:
      self._dynamic.pop()


async def read_frame(reader: asyncio.StreamReader) -> Tuple[int, int, int, bytes]:
  header = await reader.readexactly(9)
  length = int.from_bytes(header[:3], 'big')
  stream = int.from_bytes(header[5:9], 'big') & 0x7FFFFFFF
  return header[3], header[4], stream, await reader.readexactly(length)


async def play_raw(host: str, port: int, case: Case, limit_s: float) -> Result:
  """Plays `case.raw` on a fresh HTTP/2 connection; the status of stream 1 (last one)."""
  script = case.raw
  start, started_at = time.monotonic(), time.time()
  reader, writer = await asyncio.open_connection(host, port)
  hpack = HpackDecoder()
  target = 2 * script.rapid_resets + 1  # Client streams are odd: 1, 3, 5, ...
  outcome = {'headers': {}, 'replies': 0, 'note': '', 'done': asyncio.Event(), 'block': b''}

  async def read_loop():
    try:
      while True:
        kind, flags, stream, payload = await read_frame(reader)
        if kind == SETTINGS and not flags & ACK:
          writer.write(h2_frame(SETTINGS, ACK, 0))
        elif kind == PING and not flags & ACK:
          writer.write(h2_frame(PING, ACK, 0, payload))
        elif kind in (HEADERS, CONTINUATION):
          # Every header block must be decoded (the HPACK table is per connection);
          # END_STREAM rides on HEADERS, END_HEADERS on the block's last frame.
          outcome['block'] += _header_block(kind, flags, payload)
          if kind == HEADERS:
            outcome['ends'] = bool(flags & END_STREAM)
          if flags & END_HEADERS:
            fields = hpack.decode(outcome['block'])
            outcome['block'] = b''
            if stream == target:
              outcome['headers'].update(fields)
              if outcome['ends']:
                outcome['done'].set()
        elif kind == DATA and stream == target:
          outcome['replies'] += 1  # Small replies: one message a frame.
          if flags & END_STREAM:
            outcome['done'].set()
        elif kind == RST_STREAM and stream == target:
          outcome['note'] = f'RST_STREAM error {int.from_bytes(payload[:4], "big")}'
          outcome['done'].set()
        elif kind == GOAWAY:
          error = int.from_bytes(payload[4:8], 'big')
          outcome['note'] = f'GOAWAY error {error} {payload[8:][:200]!r}'
          if int.from_bytes(payload[:4], 'big') & 0x7FFFFFFF < target:
            outcome['done'].set()
    except (asyncio.IncompleteReadError, ConnectionError):
      outcome['note'] = outcome['note'] or 'connection closed'
      outcome['done'].set()

  reading = asyncio.ensure_future(read_loop())
  headers = _request_headers(script, f'{host}:{port}')
  try:
    writer.write(h2_preface(script.window))
    for i in range(script.rapid_resets):
      writer.write(h2_frame(HEADERS, END_HEADERS, 2 * i + 1, headers) +
                   h2_frame(RST_STREAM, 0, 2 * i + 1, struct.pack('>I', 8)))  # CANCEL
    writer.write(h2_frame(HEADERS, END_HEADERS, target, headers))
    await writer.drain()
    payload = b''.join(script.data)
    if script.trickle_s:
      for i in range(len(payload)):
        if outcome['done'].is_set():
          break
        last = script.end_stream and i == len(payload) - 1
        writer.write(h2_frame(DATA, END_STREAM if last else 0, target, payload[i:i + 1]))
        await writer.drain()
        await asyncio.wait([reading], timeout=script.trickle_s)
    else:
      chunks = [payload[i:i + _MAX_FRAME] for i in range(0, len(payload), _MAX_FRAME)] or [b'']
      for i, chunk in enumerate(chunks):
        last = script.end_stream and i == len(chunks) - 1
        writer.write(h2_frame(DATA, END_STREAM if last else 0, target, chunk))
      await writer.drain()
    if script.rapid_resets:  # The stream after the burst must be served: half-close it.
      await asyncio.wait([reading], timeout=1.0)
      writer.write(h2_frame(DATA, END_STREAM, target))
      await writer.drain()
    await asyncio.wait_for(outcome['done'].wait(), max(0.1, limit_s - (time.monotonic() - start)))
  except (asyncio.TimeoutError, ConnectionError):
    pass
  finally:
    reading.cancel()
    writer.close()
  seconds = time.monotonic() - start
  fields = outcome['headers']
  if 'grpc-status' not in fields:
    return Result(None, '', outcome['replies'], seconds, outcome['note'] or 'no trailers',
                  started_at)
  code = _CODES_BY_NUMBER.get(int(fields['grpc-status']), Code.UNKNOWN)
  details = urllib.parse.unquote(fields.get('grpc-message', ''))
  return Result(code, details, outcome['replies'], seconds, outcome['note'], started_at)


def _header_block(kind: int, flags: int, payload: bytes) -> bytes:
  """A HEADERS payload less its padding and priority fields."""
  if kind != HEADERS:
    return payload
  start, end = 0, len(payload)
  if flags & 0x8:  # PADDED
    start, end = 1, len(payload) - payload[0]
  if flags & 0x20:  # PRIORITY
    start += 5
  return payload[start:end]
