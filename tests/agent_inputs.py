"""Random inputs for the agent tests: observations of a spec, acting parameters, and one
inference call."""
import numpy as np

from seed import types


def random_observations(spec, leading_shape, rng):
  """Observations of `spec` with `leading_shape` in front: frames in [0, 255], else normal."""
  shape = tuple(leading_shape) + spec.observation_shape
  if spec.observation_dtype == 'uint8':
    return rng.integers(0, 256, shape).astype(np.uint8)
  return rng.normal(size=shape).astype(spec.observation_dtype)


def acting_params(batch, epsilon=0.0, evaluation=False) -> types.ActingParams:
  """ActingParams of `batch` envs; a scalar epsilon or evaluation is given to every env."""
  return types.ActingParams(
      epsilon=np.broadcast_to(np.asarray(epsilon, np.float32), [batch]).copy(),
      evaluation=np.broadcast_to(np.asarray(evaluation, bool), [batch]).copy())


def infer(agent, observation, done, core_state, acting=None):
  """agent.inference on a batch of observations with zero rewards.

  `acting` defaults to training envs without epsilon (acting_params(batch)).
  """
  batch = len(observation)
  if acting is None:
    acting = acting_params(batch)
  return agent.inference(observation, np.zeros([batch], np.float32),
                         np.asarray(done, bool), core_state, acting)
