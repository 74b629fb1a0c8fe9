"""Random inputs for the agent tests: observations of a spec, acting parameters, one
inference call, and samples of unrolls with behaviour logits (V-trace, ACER), of
replayed sequences (R2D2) and of replayed n-step transitions (SAC, DDPG)."""
import numpy as np

from seed import types


def random_observations(spec, leading_shape, rng):
  """Observations of `spec` with `leading_shape` in front: frames in [0, 255], bits for
  bool, else normal."""
  shape = tuple(leading_shape) + spec.observation_shape
  if spec.observation_dtype == 'uint8':
    return rng.integers(0, 256, shape).astype(np.uint8)
  if spec.observation_dtype == 'bool':
    return rng.random(shape) < 0.2
  return rng.normal(size=shape).astype(spec.observation_dtype)


def acting_params(batch, epsilon=0.0, evaluation=False) -> types.ActingParams:
  """ActingParams of `batch` envs; a scalar epsilon or evaluation is given to every env."""
  return types.ActingParams(
      epsilon=np.broadcast_to(np.asarray(epsilon, np.float32), [batch]).copy(),
      evaluation=np.broadcast_to(np.asarray(evaluation, bool), [batch]).copy(),
      seed_index=np.zeros([batch], np.int32))


def infer(agent, observation, done, core_state, acting=None):
  """agent.inference on a batch of observations with zero rewards.

  `acting` defaults to training envs without epsilon (acting_params(batch)).
  """
  batch = len(observation)
  if acting is None:
    acting = acting_params(batch)
  return agent.inference(observation, np.zeros([batch], np.float32),
                         np.asarray(done, bool), core_state, acting)


def logits_sample(observation, reward, terminated, truncated, action, logits, core_state):
  """The Sample a FIFO hands over: arrays [B, T + 1, ...], uniform weights."""
  rows = len(reward)
  steps = types.Steps(observation, reward, terminated, truncated, action,
                      policy_outputs={'logits': logits})
  return types.Sample(ids=np.arange(rows, dtype=np.int64),
                      data=types.Unroll(steps, tuple(core_state),
                                        env_id=np.arange(rows, dtype=np.int64)),
                      weights=np.ones(rows, np.float32))


def random_logits_sample(agent, spec, rng, done_probability=0.2):
  """A [batch_unrolls, T + 1] sample with random steps and behaviour logits."""
  shape = (agent.batch_unrolls, agent.unroll_length + 1)
  core_state = tuple(rng.normal(size=x.shape).astype(np.float32)
                     for x in agent.initial_core_state(agent.batch_unrolls))
  return logits_sample(
      observation=random_observations(spec, shape, rng),
      reward=rng.normal(size=shape).astype(np.float32),
      terminated=rng.random(shape) < done_probability,
      truncated=rng.random(shape) < done_probability / 2,
      action=rng.integers(0, spec.num_actions, shape).astype(np.int32),
      logits=rng.normal(size=shape + (spec.num_actions,)).astype(np.float32),
      core_state=core_state)


def random_sequence_sample(agent, spec, rng, done_probability=0.2):
  """A [batch_sequences, burn_in_steps + trained_steps + 1] Sample, as the replay hands it."""
  rows, shape = agent.batch_unrolls, (agent.batch_unrolls, agent.unroll_length + 1)
  steps = types.Steps(
      observation=random_observations(spec, shape, rng),
      reward=rng.normal(0.0, 3.0, shape).astype(np.float32),
      terminated=rng.random(shape) < done_probability,
      truncated=rng.random(shape) < done_probability / 2,
      action=rng.integers(0, spec.num_actions, shape).astype(np.int32), policy_outputs={})
  core_state = tuple(rng.normal(size=x.shape).astype(np.float32)
                     for x in agent.initial_core_state(rows))
  return types.Sample(
      ids=np.arange(rows, dtype=np.int64),
      data=types.Unroll(steps, core_state, env_id=np.arange(rows, dtype=np.int64)),
      weights=rng.uniform(0.2, 1.0, rows).astype(np.float32))


def random_transition_sample(agent, spec, rng, done_probability=0.2):
  """A [num_seeds * batch_transitions, n_steps + 1] Sample of a continuous-action spec,
  seed by seed, as the replay hands it to SAC and DDPG."""
  rows = agent.num_seeds * agent.batch_transitions
  shape = (rows, agent.unroll_length + 1)
  low, high = np.asarray(spec.action_low), np.asarray(spec.action_high)
  steps = types.Steps(
      observation=random_observations(spec, shape, rng),
      reward=rng.normal(0.0, 2.0, shape).astype(np.float32),
      terminated=rng.random(shape) < done_probability,
      truncated=rng.random(shape) < done_probability / 2,
      action=rng.uniform(low, high, shape + spec.action_shape).astype(np.float32),
      policy_outputs={})
  return types.Sample(ids=np.arange(rows, dtype=np.int64),
                      data=types.Unroll(steps, (), env_id=np.arange(rows, dtype=np.int64)),
                      weights=np.ones(rows, np.float32))
