"""Random inputs for the agent tests: observations of a spec, and one inference call."""
import numpy as np


def random_observations(spec, leading_shape, rng):
  """Observations of `spec` with `leading_shape` in front: frames in [0, 255], else normal."""
  shape = tuple(leading_shape) + spec.observation_shape
  if spec.observation_dtype == 'uint8':
    return rng.integers(0, 256, shape).astype(np.uint8)
  return rng.normal(size=shape).astype(spec.observation_dtype)


def infer(agent, observation, done, core_state):
  """agent.inference on a batch of observations with zero rewards."""
  batch = len(observation)
  return agent.inference(observation, np.zeros([batch], np.float32),
                         np.asarray(done, bool), core_state)
