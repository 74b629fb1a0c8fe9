"""seed.inputs: every agent input is an AgentInput, the build picks one per InputKind, and
lockstep (any input) draws the batches a single-threaded put-then-drain loop would."""
import threading
import time
from typing import Optional

import gin
import numpy as np
import pytest

from seed import types
from seed.inputs import build as inputs
from seed.inputs.fresh_then_replay import FreshThenReplay, ReplaySchedule
from seed.inputs.lockstep import LockstepInput
from seed.inputs.mixture import ReplayMixture
from seed.inputs.mixture_spec import ReplaySpec
from seed.inputs.prefetch import PrefetchingInput
from seed.inputs.protocol import AgentInput
from seed.inputs.replay_input import ReplayInput
from tests.unit.test_replay import make_unroll

BATCH = 2


def _unroll(number: int) -> types.Unroll:
  return make_unroll(np.full((3, 2), number, np.float32), env_id=number)


def _replay_input():
  return ReplayInput(BATCH, capacity_unrolls=50, min_fill_unrolls=4, samples_per_insert=1.5,
                     seed=3)


def _fresh_then_replay():
  return FreshThenReplay(BATCH, ReplaySchedule(2.0, 50, 4), seed=3)


def _mixture():
  return ReplayMixture([ReplaySpec('queue', 1, 0.5), ReplaySpec('uniform', 20, 0.5)], BATCH,
                       seed=3)


INPUTS = {'replay': _replay_input, 'fresh_then_replay': _fresh_then_replay,
          'queue and uniform mixture': _mixture}


@pytest.mark.parametrize('make', [*INPUTS.values(),
                                  lambda stop: PrefetchingInput(_mixture(), BATCH, 2, stop),
                                  lambda: LockstepInput(_replay_input(), BATCH)],
                         ids=[*INPUTS, 'prefetching', 'lockstep'])
def test_every_input_is_an_agent_input(make):
  stop = threading.Event()
  made = make(stop) if make.__code__.co_argcount else make()
  try:
    assert isinstance(made, AgentInput)
    assert made.saves_anything and not made.ready(BATCH)
  finally:
    stop.set()  # Ends the prefetching thread.


class _Agent:
  """What the build reads of an agent."""
  batch_unrolls = BATCH
  num_seeds = 1
  samples_per_insert = None
  reset_interval_env_steps = None
  replay_schedule = ReplaySchedule(1.0, 50, 4)
  feature_output = None
  mixture_kinds = ('queue', 'uniform')

  def __init__(self, input_kind):
    self.input_kind = input_kind


@pytest.mark.parametrize('kind, built', [('fifo', ReplayMixture), ('replay', ReplayInput),
                                         ('fresh_then_replay', FreshThenReplay)])
def test_the_build_gives_each_input_kind_its_input(kind, built):
  stop = threading.Event()
  made = inputs.agent_input(_Agent(types.InputKind(kind)), 'agent', stop)
  assert type(made) is built  # pylint: disable=unidiomatic-typecheck
  locked = inputs.agent_input(_Agent(kind), 'agent', stop, lockstep=True)
  assert isinstance(locked, LockstepInput) and type(locked.inner) is built  # pylint: disable=unidiomatic-typecheck


def test_an_unknown_input_kind_is_refused_naming_the_kinds():
  with pytest.raises(ValueError, match="'stream' is not a valid InputKind"):
    inputs.agent_input(_Agent('stream'), 'agent', threading.Event())


def test_replay_parameters_are_refused_for_an_agent_with_its_own_replay():
  with pytest.raises(ValueError, match=r'--replay_parameters is for the agents that train from '
                     r'a queue \(vtrace, ppo\); r2d2 samples its own replay'):
    inputs.agent_input(_Agent('replay'), 'r2d2', threading.Event(),
                       replay_parameters='[{"kind": "queue", "capacity": 1, "sample_ratio": 1}]')


def test_lockstep_refuses_batches_prefetched_ahead():
  with gin.unlock_config():
    gin.parse_config('ReplayMixtureConfig.prefetch_batches = 2')
  try:
    with pytest.raises(ValueError, match=r'--lockstep draws each batch when the trainer asks; '
                       r'ReplayMixtureConfig.prefetch_batches = 2 draws them ahead; accepted '
                       r'with --lockstep: 0'):
      inputs.agent_input(_Agent('fifo'), 'vtrace', threading.Event(), lockstep=True)
  finally:
    gin.clear_config()


def _priorities(sample: types.Sample) -> np.ndarray:
  """What a 'train step' sends back: a function of the batch alone."""
  return 1.0 + np.asarray(sample.data.env_id, np.float64) % 5


def _drained_in_turn(agent_input, num_unrolls):
  """One thread: put each unroll, then sample and 'train' every batch that is ready.
  [(unrolls put before the batch, env ids of the batch)]."""
  drawn = []
  for number in range(num_unrolls):
    assert agent_input.put(_unroll(number))
    while agent_input.ready(BATCH):
      sample = agent_input.sample(BATCH, timeout_s=0)
      drawn.append((number + 1, [int(x) for x in sample.data.env_id]))
      agent_input.update_priorities(sample.ids, _priorities(sample))
  return drawn


def _in_lockstep(agent_input, num_unrolls):
  """An actor thread puts while a trainer thread samples, as a learner does, through a
  LockstepInput; the trainer is slow, so without lockstep the actor would run ahead."""
  locked = LockstepInput(agent_input, BATCH)
  put_so_far = [0]
  drawn = []
  done = threading.Event()

  def train():
    while not done.is_set():
      sample: Optional[types.Sample] = locked.sample(BATCH, timeout_s=0.05)
      if sample is None:
        continue
      drawn.append((put_so_far[0], [int(x) for x in sample.data.env_id]))
      time.sleep(0.002)
      locked.update_priorities(sample.ids, _priorities(sample))

  trainer = threading.Thread(target=train)
  trainer.start()
  try:
    for number in range(num_unrolls):
      assert locked.put(_unroll(number))
      put_so_far[0] = number + 1
      # Back from put: whatever it made ready has been drawn and trained.
      assert not agent_input.ready(BATCH)
  finally:
    done.set()
    trainer.join()
  return drawn


@pytest.mark.parametrize('make', INPUTS.values(), ids=INPUTS.keys())
def test_lockstep_draws_what_putting_then_draining_in_one_thread_draws(make):
  expected = _drained_in_turn(make(), 40)
  assert len(expected) >= 10
  # Each put that made batches ready was followed by all of them, before the next put.
  # (put_so_far is set after put returns: a batch drawn during put N shows N - 1.)
  assert [(put - 1, ids) for put, ids in expected] == _in_lockstep(make(), 40)
  assert [(put - 1, ids) for put, ids in expected] == _in_lockstep(make(), 40)
