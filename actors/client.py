"""Actor loop: k envs, one stream to the learner, reconnect with backoff."""
import asyncio
import collections
import contextlib
import logging
import random
import time
import uuid
from typing import List, Optional, Sequence

import grpc
from grpc import aio
import numpy as np

from seed.transport import unix_socket
from seed.transport import unix_address
from seed import protocol
from seed.transport import security
from seed.envs import batch as batch_lib
from seed.envs import EnvConfig
from seed.envs.spec import EnvSpec
from seed.proto import actor_learner_pb2 as pb
from seed.proto import actor_learner_pb2_grpc as pb_grpc

_log = logging.getLogger(__name__)

# Statuses that mean "the learner refused what we sent": retrying the same
# envs and specs cannot help, so the actor stops and says why. ALREADY_EXISTS is
# not one: after a crash the learner may still hold our old connection until its
# keepalive notices, so the actor retries until the id is free.
REFUSALS = frozenset({grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.FAILED_PRECONDITION,
                      grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.RESOURCE_EXHAUSTED,
                      grpc.StatusCode.UNIMPLEMENTED})


# Retries of an unreachable learner back off to this. A restarted learner is then
# found within MAX_BACKOFF_S of listening again; each attempt at a learner that is
# down costs one refused TCP connection.
MAX_BACKOFF_S = 4.0


class LearnerRefused(Exception):
  """The learner ended our stream with a refusal status."""

  def __init__(self, code: grpc.StatusCode, details: str):
    super().__init__(f'{code.name}: {details}')
    self.code = code


class _RunFinished(Exception):
  """The learner answered with Finished: the run is over."""


class ConnectionMisconfigured(Exception):
  """Connecting failed in a way retrying cannot mend (e.g. TLS on one side only)."""


class LearnerLost(Exception):
  """No learner answered for longer than the actor's learner_lost_limit_s."""


class Actor:
  """Steps its env batches in lockstep with the learner's actions.

  Each batch (a split of the actor's envs, `seed.envs.batch`) has its own stream:
  with several, while one waits for its actions the process steps another, so env
  stepping overlaps the learner's inference instead of alternating with it. Each
  (re)connection of a split uses a fresh run id, so the learner drops whatever it held
  for it; its envs are reset too, so no episode straddles two runs.
  """

  def __init__(self, batches: Sequence[batch_lib.EnvBatch], env_name: str, actor_id: int,
               server_address: str, *, evaluation: bool = False, max_steps: int = 0,
               credentials: Optional[grpc.ChannelCredentials] = None,
               auth_token: Optional[str] = None, initial_backoff_s: float = 0.5,
               max_backoff_s: float = MAX_BACKOFF_S, max_message_bytes: int = 64 << 20,
               learner_lost_limit_s: float = 0.0):
    self._splits = list(batches)
    if not self._splits:
      raise ValueError('An actor needs at least one env batch.')
    self._spec = self._splits[0].spec
    if any(b.spec != self._spec for b in self._splits):
      raise ValueError(f'The env batches of one actor must share a spec, got '
                       f'{sorted({b.spec.describe() for b in self._splits})}')
    self._num_envs = sum(b.num_envs for b in self._splits)
    self._env_name = env_name
    self._actor_id = actor_id
    self._address = server_address
    self._max_env_steps = max_steps * self._num_envs
    self._evaluation = evaluation
    self._auth_token = auth_token
    self._initial_backoff_s = initial_backoff_s
    self._max_backoff_s = max_backoff_s
    self._credentials = credentials
    self._channel_options = security.channel_options(max_message_bytes)
    self._max_message_bytes = max_message_bytes
    # A learner gone for this long (0: never) ends the actor: see _check_lost.
    self._learner_lost_limit_s = learner_lost_limit_s
    self._last_contact = time.monotonic()  # the latest message from a learner (or the start)
    self._stop = asyncio.Event()
    self._welcomed = set()  # splits connected since their last failure
    self.env_steps_done = 0
    self.episodes_done = 0
    # Why the learner ended the run (its Finished message), once it has.
    self.finished_reason: Optional[str] = None
    self.connections = 0
    # Round trip per step (send observations -> actions back), most recent steps.
    self.round_trip_ms = collections.deque(maxlen=100_000)

  @property
  def steps_done(self) -> int:
    """Steps of all k envs (env steps / k)."""
    return self.env_steps_done // self._num_envs

  def stop(self) -> None:
    """Ends the loop after the current step (safe from a signal handler)."""
    self._stop.set()

  async def run(self) -> None:
    """Runs until stop(), max_steps, a refusal (raised as LearnerRefused), or no learner
    for learner_lost_limit_s (LearnerLost)."""
    self._last_contact = time.monotonic()
    await asyncio.gather(*(self._run_split(i, envs) for i, envs in enumerate(self._splits)))

  async def _run_split(self, split_index: int, envs: batch_lib.EnvBatch) -> None:
    backoff_s = self._initial_backoff_s
    while not self._done():
      try:
        await self._session(split_index, envs)
        backoff_s = self._initial_backoff_s
      except _RunFinished as e:
        if self.finished_reason is None:
          _log.info('actor %d: the learner finished the run (%s); stopping', self._actor_id, e)
        self.finished_reason = str(e)
        self._stop.set()  # The other groups stop too, without asking again.
        return
      except (aio.AioRpcError, asyncio.InvalidStateError) as e:
        # InvalidStateError: we wrote to a stream the learner had just ended.
        code = e.code() if isinstance(e, aio.AioRpcError) else grpc.StatusCode.CANCELLED
        details = e.details() if isinstance(e, aio.AioRpcError) else 'stream already closed'
        if code in REFUSALS:
          self._stop.set()  # The other groups would be refused too.
          raise LearnerRefused(code, details) from None
        if self._done():
          break
        if split_index in self._welcomed:  # It had worked: start the backoff over.
          self._welcomed.discard(split_index)
          backoff_s = self._initial_backoff_s
        elif not unix_address.is_local_address(self._address):
          # It never got through over TCP: say so if it never will.
          problem = await asyncio.get_running_loop().run_in_executor(
              None, security.diagnose_connect_failure, self._address, details,
              self._credentials is not None)
          if problem:
            self._stop.set()
            raise ConnectionMisconfigured(problem) from None
        self._check_lost(code, details)
        # Jittered, so that the actors of a restarted learner do not all knock at once.
        wait_s = backoff_s * random.uniform(0.5, 1.0)
        _log.warning('stream to the learner at %s ended (%s: %s); retrying in %.1f s',
                     self._address, code.name, details, wait_s)
        try:
          await asyncio.wait_for(self._stop.wait(), wait_s)
        except asyncio.TimeoutError:
          pass
        backoff_s = min(backoff_s * 2, self._max_backoff_s)

  def _check_lost(self, code: grpc.StatusCode, details: str) -> None:
    """LearnerLost once no learner has answered for learner_lost_limit_s: a learner whose
    run ended while this actor was away (a re-created pod) may never come back to say
    so, and retrying for ever would hold this actor's CPUs for nothing."""
    lost_s = time.monotonic() - self._last_contact
    if self._learner_lost_limit_s and lost_s > self._learner_lost_limit_s:
      self._stop.set()  # The other splits stop too.
      raise LearnerLost(
          f'no learner at {self._address} for {lost_s:.0f} s, more than '
          f'--learner_lost_limit_s={self._learner_lost_limit_s:g} (last: {code.name}: '
          f'{details}); giving up. If its run ended, it finished without this actor; else '
          'start the learner, then this actor again') from None

  def _done(self) -> bool:
    return self._stop.is_set() or (self._max_env_steps > 0 and
                                   self.env_steps_done >= self._max_env_steps)

  async def _session(self, split_index: int, envs: batch_lib.EnvBatch) -> None:
    run_id = uuid.uuid4().hex
    metadata = security.authorization_metadata(self._auth_token) if self._auth_token else None
    async with self._open_stream(metadata) as call:
      await call.write(protocol.make_hello(
          self._spec, actor_id=self._actor_id, run_id=run_id, num_envs=envs.num_envs,
          env_name=self._env_name, split_index=split_index, evaluation=self._evaluation))
      welcome = await self._read(call)
      self._last_contact = time.monotonic()
      if welcome.WhichOneof('kind') == 'finished':
        raise _RunFinished(welcome.finished.reason)
      if welcome.WhichOneof('kind') != 'welcome':
        raise LearnerRefused(grpc.StatusCode.FAILED_PRECONDITION,
                             f'expected a welcome, got {welcome.WhichOneof("kind")}')
      self.connections += 1
      self._welcomed.add(split_index)
      _log.info('actor %d split %d connected to learner %s (run %s)', self._actor_id,
                split_index, welcome.welcome.learner_id[:8], run_id[:8])
      num_envs = envs.num_envs
      step = batch_lib.BatchStep.first(envs.reset())
      while not self._done():
        sent = time.perf_counter()
        if isinstance(call, unix_socket.LocalCall):  # the observations beside the message
          await call.write_step(step.observations, step.rewards, step.terminated,
                                step.truncated, step.life_lost)
        else:
          await call.write(protocol.make_step(step.observations, step.rewards,
                                              step.terminated, step.truncated,
                                              step.life_lost))
        reply = await self._read(call)
        if reply.WhichOneof('kind') == 'finished':
          raise _RunFinished(reply.finished.reason)
        self.round_trip_ms.append(1000 * (time.perf_counter() - sent))
        self._last_contact = time.monotonic()
        actions = protocol.decode_tensor(reply.actions.actions, 'actions')
        protocol.check_actions(actions, self._spec, num_envs)
        step = envs.step(actions)
        self.episodes_done += step.episodes_ended
        self.env_steps_done += num_envs
      await call.done_writing()

  @contextlib.asynccontextmanager
  async def _open_stream(self, metadata):
    """An Act stream: over a Unix socket for a unix:PATH address (a learner of this host,
    seed.transport.unix_socket), else over gRPC; both raise aio.AioRpcError alike."""
    if unix_address.is_local_address(self._address):
      async with unix_socket.connect(unix_address.socket_path(self._address), metadata,
                                         self._max_message_bytes) as call:
        yield call
      return
    if self._credentials is None:
      channel = aio.insecure_channel(self._address, options=self._channel_options)
    else:
      channel = aio.secure_channel(self._address, self._credentials,
                                   options=self._channel_options)
    async with channel:
      yield pb_grpc.LearnerStub(channel).Act(metadata=metadata)

  @staticmethod
  async def _read(call) -> pb.LearnerMessage:
    message = await call.read()
    if message is aio.EOF:
      code = await call.code()
      details = await call.details()
      raise aio.AioRpcError(code, None, None, details=details or 'stream closed by learner')
    return message


def split_bounds(num_envs: int, num_splits: int) -> List[int]:
  """Where each of num_splits contiguous, (nearly) equal groups of num_envs starts, and
  the end: split i holds envs bounds[i] .. bounds[i + 1] - 1."""
  if not 1 <= num_splits <= num_envs:
    raise ValueError(f'num_splits={num_splits} must be between 1 and the number of envs '
                     f'({num_envs})')
  return [int(b) for b in np.linspace(0, num_envs, num_splits + 1).astype(int)]


def make_env_batches(env_config: EnvConfig, num_envs: int, num_splits: int, actor_id: int,
                     seed: int) -> List[batch_lib.EnvBatch]:
  """An actor's envs as num_splits batches, env i seeded seed + 1000·actor_id + i."""
  first_seed = seed + 1000 * actor_id
  bounds = split_bounds(num_envs, num_splits)
  return [env_config.make_batch(first_seed + lo, hi - lo)
          for lo, hi in zip(bounds[:-1], bounds[1:])]


def split_envs(envs: Sequence, spec: EnvSpec, num_splits: int = 1) -> List[batch_lib.EnvList]:
  """Envs already built (tests, benches) as num_splits batches."""
  bounds = split_bounds(len(envs), num_splits)
  return [batch_lib.EnvList(envs[lo:hi], spec) for lo, hi in zip(bounds[:-1], bounds[1:])]


def actor_stats(actor: Actor) -> dict:
  """Steps, episodes, reconnections and round-trip percentiles, for logs and benchmarks."""
  round_trips = np.array(actor.round_trip_ms) if actor.round_trip_ms else np.zeros(1)
  return {'steps': actor.steps_done, 'episodes': actor.episodes_done,
          'connections': actor.connections,
          'round_trip_ms_p50': float(np.percentile(round_trips, 50)),
          'round_trip_ms_p99': float(np.percentile(round_trips, 99))}
