"""Batcher, per-env state, unroll building and backpressure on the real server."""
import queue
import time

import numpy as np
import pytest

from seed import protocol
from seed import types
from seed.inference import step_processor
from seed.inference.step_processor import padded_batch_sizes
from seed.inference.unroll_builder import UnrollBuilder
from seed.replay.fifo import UnrollFifo
from tests.server_harness import LockstepClient, ServerHarness, hello, step

pytestmark = pytest.mark.timeout(60)


def counts_of(reply):
  return protocol.decode_tensor(reply.actions.actions, 'actions')


def wait_until(condition, timeout_s=10.0):
  deadline = time.monotonic() + timeout_s
  while not condition():
    assert time.monotonic() < deadline, 'condition not met in time'
    time.sleep(0.01)


def connect(harness, actor_id=0, run_id='run-a', num_envs=2):
  client = LockstepClient(harness.address)
  client.send(hello(actor_id=actor_id, run_id=run_id, num_envs=num_envs))
  assert client.recv().WhichOneof('kind') == 'welcome'
  return client


def test_batch_arrays_are_aligned_padded_with_zeros_and_hold_every_request():
  frame = (84, 84, 4)  # Batches of 8 Pong frames (226 KB) and more are aligned.
  assert 8 * np.prod(frame) < step_processor.ALIGNED_BATCH_MIN_BYTES <= 16 * np.prod(frame)
  for size in (8, 16):
    parts = [np.full((k,) + frame, k, np.uint8) for k in (1, 2, 4)]
    for _ in range(20):  # Whatever address the allocator hands out.
      batch = step_processor._concat_padded(parts, size)  # pylint: disable=protected-access
      assert batch.flags.c_contiguous and batch.shape == (size,) + frame
      assert batch.dtype == np.uint8
      np.testing.assert_array_equal(batch[:, 0, 0, 0], [1, 2, 2, 4, 4, 4, 4] + [0] * (size - 7))
      if size == 16:
        assert batch.ctypes.data % step_processor.BATCH_ALIGNMENT_BYTES == 0
  odd = step_processor.aligned_empty((3, 7), np.float32)
  assert odd.ctypes.data % 64 == 0 and odd.shape == (3, 7) and odd.dtype == np.float32


def test_padded_batch_sizes():
  assert padded_batch_sizes(64) == [1, 2, 4, 8, 16, 32, 64]
  assert padded_batch_sizes(6) == [1, 2, 4, 6]
  assert padded_batch_sizes(1) == [1]


def make_step(t, observation=None, **outputs):
  """Step t of a test env: reward t, never done, action t % 3."""
  observation = np.array([t, t]) if observation is None else observation
  return types.Steps(observation, np.float32(t), np.bool_(False), np.bool_(False),
                     np.int32(t % 3), policy_outputs=outputs)


def test_unrolls_share_their_boundary_step_and_keep_the_initial_state():
  builder = UnrollBuilder(unroll_length=3, env_id=7)
  unrolls = []
  for t in range(10):
    unroll = builder.append(make_step(t, logits=np.float32([t, -t])),
                            core_state_before=(np.array(100 + t),))
    if unroll is not None:
      unrolls.append(unroll)
  assert len(unrolls) == 3  # steps 0-3, 3-6, 6-9
  np.testing.assert_array_equal(unrolls[0].steps.observation[:, 0], [0, 1, 2, 3])
  np.testing.assert_array_equal(unrolls[1].steps.reward, [3, 4, 5, 6])
  np.testing.assert_array_equal(unrolls[2].steps.reward, [6, 7, 8, 9])
  np.testing.assert_array_equal(unrolls[2].steps.policy_outputs['logits'][:, 1], [-6, -7, -8, -9])
  assert [int(u.core_state[0]) for u in unrolls] == [100, 103, 106]
  assert [int(u.env_id) for u in unrolls] == [7, 7, 7]
  assert unrolls[0].batch_shape == (4,)
  # Handed-out buffers are never written again.
  np.testing.assert_array_equal(unrolls[0].steps.reward, [0, 1, 2, 3])


def test_unroll_builder_refuses_a_policy_output_named_like_a_step_field():
  builder = UnrollBuilder(unroll_length=2)
  with pytest.raises(ValueError, match="policy output 'reward' clashes"):
    builder.append(make_step(0, reward=np.float32(1)), ())


def test_unroll_builder_reset_drops_the_partial_unroll():
  builder = UnrollBuilder(unroll_length=2)
  builder.append(make_step(1), ())
  builder.append(make_step(2), ())
  builder.reset()
  assert builder.num_buffered_steps == 0
  assert builder.append(make_step(3), ()) is None


def _unroll(i, core_state=None):
  steps = types.Steps(np.full((3, 2), i), np.zeros(3, np.float32), np.zeros(3, bool),
                      np.zeros(3, bool), np.zeros(3, np.int32), policy_outputs={})
  core_state = (np.array([i]),) if core_state is None else core_state
  return types.Unroll(steps=steps, core_state=core_state, env_id=np.int64(i))


def test_fifo_samples_in_arrival_order_with_unit_weights():
  fifo = UnrollFifo(4)
  for i in range(3):
    fifo.put(_unroll(i))
  sample = fifo.sample(2)
  np.testing.assert_array_equal(sample.data.steps.observation[:, 0, 0], [0, 1])
  assert sample.data.core_state[0].shape == (2, 1)
  np.testing.assert_array_equal(sample.ids, [0, 1])
  np.testing.assert_array_equal(sample.weights, [1.0, 1.0])
  np.testing.assert_array_equal(sample.data.env_id, [0, 1])
  assert fifo.sample(2, timeout_s=0.05) is None
  assert len(fifo) == 1
  with pytest.raises(TypeError, match='no priorities'):
    fifo.update_priorities(sample.ids, np.ones(2))


def test_stack_unrolls_without_state():
  batch = types.stack_unrolls([_unroll(0, core_state=())] * 2)
  assert batch.steps.observation.shape == (2, 3, 2) and batch.core_state == ()
  assert batch.batch_shape == (2, 3)


def test_state_persists_per_env_and_resets_on_episode_end():
  with ServerHarness() as harness:
    client = connect(harness)
    seen = []
    for t in range(4):
      client.send(step(terminated=[False, t == 2]))
      seen.append(counts_of(client.recv()))
    # CountingAgent: state = steps since episode start, action = count % 3.
    np.testing.assert_array_equal(np.array(seen), [[1, 1], [2, 2], [0, 1], [1, 2]])
    client.close()


def test_state_lives_as_long_as_its_stream():
  with ServerHarness() as harness:
    client = connect(harness, run_id='first')
    for _ in range(4):
      client.send(step())
      client.recv()
    assert harness.table.num_envs == 2
    client.close()
    wait_until(lambda: harness.table.num_envs == 0)  # Nothing kept of a closed stream ...
    # ... so a reconnection (the actor resets its envs) starts from a fresh state.
    client = connect(harness, run_id='first')
    client.send(step())
    assert counts_of(client.recv()).tolist() == [1, 1]
    slot = harness.table._slots[(0, 0)][0]
    assert slot.unroll.num_buffered_steps == 1
    client.close()


def test_many_dead_actors_leave_only_the_live_envs():
  with ServerHarness() as harness:
    live = connect(harness, actor_id=0)
    for actor_id in range(1, 41):  # Actors that step once and vanish, some mid-unroll.
      dead = connect(harness, actor_id=actor_id, num_envs=1 + actor_id % 3)
      dead.send(step(num_envs=1 + actor_id % 3))
      dead.recv()
      dead.close()
    live.send(step())
    live.recv()
    wait_until(lambda: harness.table.num_envs == 2)
    assert list(harness.table._slots) == [(0, 0)]
    live.close()


def test_steps_from_two_actors_share_one_batch():
  with ServerHarness(max_batch_envs=8, max_wait_ms=2000) as harness:
    a, b = connect(harness, actor_id=0), connect(harness, actor_id=1, num_envs=3)
    harness.agent.batch_shapes.clear()
    a.send(step())
    b.send(step(num_envs=3))
    assert counts_of(a.recv()).shape == (2,)
    assert counts_of(b.recv()).shape == (3,)
    # Both were waiting (all connected envs), so one batch of 5 padded to 8 ran.
    assert harness.agent.batch_shapes == [8]
    a.close()
    b.close()


def test_partial_batch_runs_after_max_wait():
  with ServerHarness(max_batch_envs=8, max_wait_ms=50) as harness:
    a, idle = connect(harness, actor_id=0), connect(harness, actor_id=1)
    harness.agent.batch_shapes.clear()
    a.send(step())
    assert counts_of(a.recv(timeout=10)).shape == (2,)
    assert harness.agent.batch_shapes == [2]
    a.close()
    idle.close()


def test_unrolls_and_episodes_reach_the_input():
  with ServerHarness() as harness:
    client = connect(harness, num_envs=1)
    rewards = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    for t, reward in enumerate(rewards):
      client.send(step(num_envs=1, rewards=[reward], terminated=[t == 4]))
      client.recv()
    client.close()
    assert harness.episodes == [(1.0 + 2.0 + 3.0 + 4.0, 4)]
    assert harness.counters.get('env_steps') == 6
    batch = harness.fifo.sample(2, timeout_s=1.0).data
    np.testing.assert_array_equal(batch.steps.reward[0], [0, 1, 2, 3])
    np.testing.assert_array_equal(batch.steps.reward[1], [3, 4, 5, 6])
    np.testing.assert_array_equal(batch.steps.terminated[1], [False, True, False, False])
    np.testing.assert_array_equal(batch.steps.policy_outputs['count'][1], [4, 1, 2, 3])
    # Outputs the agent does not train on stay out of the unrolls.
    assert set(batch.steps.policy_outputs) == {'count'}
    assert batch.core_state[0].tolist() == [0, 3]  # state before steps 0 and 3


def test_a_lost_life_ends_the_value_target_but_not_the_episode():
  # Atari's episodic_life: the agent and the unrolls see a termination (the count, its
  # recurrent state, restarts), the episode's return and length run on to the game's end.
  with ServerHarness() as harness:
    client = connect(harness, num_envs=1)
    rewards = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    for t, reward in enumerate(rewards):
      client.send(step(num_envs=1, rewards=[reward], life_lost=[t == 2],
                       terminated=[t == 4]))
      client.recv()
    client.close()
    assert harness.episodes == [(1.0 + 2.0 + 3.0 + 4.0, 4)]
    batch = harness.fifo.sample(2, timeout_s=1.0).data
    np.testing.assert_array_equal(batch.steps.terminated[0], [False, False, True, False])
    np.testing.assert_array_equal(batch.steps.terminated[1], [False, True, False, False])
    np.testing.assert_array_equal(batch.steps.policy_outputs['count'][0], [1, 2, 1, 2])


def test_a_full_input_holds_back_inference():
  with ServerHarness(fifo_capacity=1) as harness:
    client = connect(harness, num_envs=1)
    # Steps 0-3 make the first unroll (it fills the FIFO); step 6 completes a
    # second one, whose put must wait: its reply is held back.
    for _ in range(6):
      client.send(step(num_envs=1))
      client.recv()
    client.send(step(num_envs=1))
    with pytest.raises(queue.Empty):
      client.recv(timeout=1.0)
    # The trainer takes a batch: the blocked step completes.
    assert harness.fifo.sample(1, timeout_s=1.0) is not None
    assert counts_of(client.recv(timeout=10)).shape == (1,)
    client.close()


def test_overlapping_unrolls_restart_with_their_last_steps_and_matching_state():
  builder = UnrollBuilder(unroll_length=4, overlap=2)  # 5 steps, the next starts 3 back
  unrolls = []
  for t in range(12):
    unroll = builder.append(make_step(t), core_state_before=(np.array(100 + t),))
    if unroll is not None:
      unrolls.append(unroll)
  assert [u.steps.reward.tolist() for u in unrolls] == [[0, 1, 2, 3, 4], [2, 3, 4, 5, 6],
                                                        [4, 5, 6, 7, 8], [6, 7, 8, 9, 10]]
  assert [int(u.core_state[0]) for u in unrolls] == [100, 102, 104, 106]
  with pytest.raises(ValueError, match='overlap must be in'):
    UnrollBuilder(unroll_length=4, overlap=4)
