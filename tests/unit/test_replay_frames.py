"""Tests for seed.replay.frames: stacked frames kept once each, and compression."""
import tracemalloc

import gymnasium
from gymnasium import spaces
from gymnasium import wrappers as gym_wrappers
import numpy as np
import pytest

from seed.replay import frames
from tests.unit.test_replay import stacked_frames


def _round_trip(observations, stack):
  pool, full = frames.split_stacks(observations)
  rebuilt = frames.join_stacks(pool, frames.stack_indices(full, stack))
  assert rebuilt.dtype == observations.dtype and rebuilt.shape == observations.shape
  np.testing.assert_array_equal(rebuilt, observations)
  return pool, full


def test_pool_and_ends_by_hand():
  # T = 5, S = 3, a reset at step 2: steps 0 and 2 keep their 3 frames, the others
  # one each: 3 + 1 + 3 + 1 + 1 = 9 frames, newest frames at 2, 3, 6, 7, 8.
  observations = stacked_frames(np.random.default_rng(0), 5, stack=3, resets=(2,))
  pool, full = _round_trip(observations, 3)
  np.testing.assert_array_equal(full, [True, False, True, False, False])
  np.testing.assert_array_equal(frames.stack_indices(full, 3),
                                [[0, 1, 2], [1, 2, 3], [4, 5, 6], [5, 6, 7], [6, 7, 8]])
  # A batch of flags gives a batch of indices.
  np.testing.assert_array_equal(frames.stack_indices(np.stack([full, full]), 3)[1],
                                frames.stack_indices(full, 3))
  assert pool.shape == (9, 4, 4)
  np.testing.assert_array_equal(pool[:3], observations[0])
  np.testing.assert_array_equal(pool[3], observations[1, -1])
  np.testing.assert_array_equal(pool[4:7], observations[2])


@pytest.mark.parametrize('resets', [(), (1,), (5, 6), (9,), (2, 4, 6, 8)])
def test_round_trip_is_exact_across_resets(resets):
  observations = stacked_frames(np.random.default_rng(len(resets)), 10, stack=4,
                                frame_shape=(6, 5), resets=resets)
  pool, _ = _round_trip(observations, 4)
  assert pool.shape[0] == 10 + 3 * (1 + len(resets))


class _FrameEnv(gymnasium.Env):
  """Random uint8 frames; an episode ends after `episode_steps` steps."""

  def __init__(self, episode_steps):
    self.observation_space = spaces.Box(0, 255, (5, 7), np.uint8)
    self.action_space = spaces.Discrete(2)
    self._episode_steps = episode_steps
    self._t = 0

  def reset(self, *, seed=None, options=None):
    super().reset(seed=seed)
    self._t = 0
    return self.np_random.integers(0, 256, (5, 7), dtype=np.uint8), {}

  def step(self, action):
    self._t += 1
    frame = self.np_random.integers(0, 256, (5, 7), dtype=np.uint8)
    return frame, 0.0, self._t == self._episode_steps, False, {}


def test_round_trip_of_gymnasium_frame_stacks_with_resets():
  # The wrapper the Atari envs use (seed.envs.atari), resets and all.
  env = gym_wrappers.FrameStackObservation(_FrameEnv(episode_steps=7), 4)
  observation, _ = env.reset(seed=3)
  observations = [observation]
  for _ in range(30):
    observation, _, terminated, _, _ = env.step(0)
    if terminated:
      observation, _ = env.reset()
    observations.append(observation)
  observations = np.stack(observations)
  _, full = _round_trip(observations, 4)
  # Whole stacks kept at step 0 and at each reset (the reset's observation replaces
  # the terminal one, every 7th step), nowhere else.
  np.testing.assert_array_equal(np.nonzero(full)[0], [0, 7, 14, 21, 28])


def test_the_shift_is_checked_not_assumed():
  observations = stacked_frames(np.random.default_rng(1), 6, stack=3)
  observations[3, 0, 2, 2] ^= 1  # Step 3's oldest frame differs from step 2's middle one.
  _, full = _round_trip(observations, 3)
  np.testing.assert_array_equal(full, [True, False, False, True, False, False])


def test_observations_that_are_no_stacks_come_back_whole():
  # E.g. RGB channels first: nothing shifts, every step keeps its 3 planes.
  observations = np.random.default_rng(2).integers(0, 256, (5, 3, 4, 4), dtype=np.uint8)
  pool, full = _round_trip(observations, 3)
  assert full.all() and pool.shape == (15, 4, 4)


@pytest.mark.parametrize('shape', [(1, 4, 3, 3), (7, 1, 3, 3), (4, 2, 3)])
def test_edge_shapes(shape):
  # One step; stacks of one frame (every step shifts trivially); 1-D frames.
  observations = np.random.default_rng(3).integers(0, 256, shape, dtype=np.uint8)
  _round_trip(observations, shape[1])


def test_join_refuses_a_pool_of_the_wrong_size():
  observations = stacked_frames(np.random.default_rng(4), 4, stack=2)
  pool, full = frames.split_stacks(observations)
  with pytest.raises(ValueError, match=r'4 frames do not fit the stack layout, which takes 5'):
    frames.join_stacks(pool[:-1], frames.stack_indices(full, 2))


def test_split_refuses_non_stacks():
  with pytest.raises(ValueError, match=r'observations must be \[T >= 1, S, \.\.\.\] stacks'):
    frames.split_stacks(np.zeros(3, np.uint8))


@pytest.mark.parametrize('codec', frames.CODECS)
def test_codecs_round_trip(codec):
  data = np.random.default_rng(5).integers(0, 4, 10_000, dtype=np.uint8)
  blob = frames.compress(data.data, codec)
  assert isinstance(blob, bytes)
  if codec is not None:
    assert len(blob) < data.nbytes  # Two bits of entropy a byte.
  np.testing.assert_array_equal(np.frombuffer(frames.decompress(blob, codec), np.uint8), data)


@pytest.mark.parametrize('codec', ['zstd', 'zlib'])
def test_a_compressed_blob_holds_no_more_memory_than_its_size(codec):
  data = np.zeros(1_000_000, np.uint8)
  tracemalloc.start()
  try:
    start_bytes = tracemalloc.get_traced_memory()[0]
    blob = frames.compress(data.data, codec)
    held_bytes = tracemalloc.get_traced_memory()[0] - start_bytes
  finally:
    tracemalloc.stop()
  assert len(blob) < 10_000 and held_bytes < 20_000, (len(blob), held_bytes)


@pytest.mark.parametrize('codec', frames.CODECS)
def test_decompress_into_a_scratch_buffer(codec):
  data = np.random.default_rng(6).integers(0, 4, 10_000, dtype=np.uint8)
  blob = frames.compress(data.data, codec)
  scratch = np.empty((3, 5000), np.uint8)  # Any shape; bigger than the data.
  np.testing.assert_array_equal(frames.decompress_into(blob, codec, scratch), data)
  if codec is not None:
    with pytest.raises(ValueError, match=r'stored data is corrupt'):
      frames.decompress_into(blob, codec, np.empty(9_999, np.uint8))
    with pytest.raises(Exception, match=r'corrupt|incomplete|truncated'):  # zlib's own error.
      frames.decompress_into(blob[:-4], codec, scratch)


def test_unknown_codec():
  with pytest.raises(ValueError, match=r"must be one of \('zstd', 'zlib', None\), got 'lz4'"):
    frames.check_codec('lz4')
  with pytest.raises(ValueError, match=r"unknown codec 'lz4'"):
    frames.compress(b'x', 'lz4')
