"""A stand-in for deepmind_lab with the API seed/envs/dmlab.py uses (Lab: reset(seed),
observations(), step(action, num_steps), is_running(), close()), for tests: put this
directory on sys.path. Frames are filled with the level seed and the step count, each
step's reward is the action's forward component, and an episode lasts EPISODE_FRAMES
frames. Every Lab made is kept in LABS, and records its calls."""
import numpy as np

EPISODE_FRAMES = 12
LABS = []


class Lab:

  def __init__(self, level, observations, config=None, renderer='software', level_cache=None):
    self.level, self.observation_names, self.config = level, list(observations), dict(config)
    self.renderer, self.level_cache = renderer, level_cache
    for key, value in self.config.items():
      if not isinstance(value, str):  # The engine takes strings only.
        raise TypeError(f'config {key!r} must be a str, got {value!r}')
    self.steps = []  # (action, num_steps) per call
    self.seeds = []
    self._frames = 0
    self._running = False
    LABS.append(self)

  def reset(self, seed=None):
    self.seeds.append(seed)
    self._frames = 0
    self._running = True

  def is_running(self):
    return self._running

  def observations(self):
    if not self._running:
      raise RuntimeError('observations() after the episode ended')
    height, width = int(self.config['height']), int(self.config['width'])
    frame = np.full((height, width, 3), (self.seeds[-1] + self._frames) % 256, np.uint8)
    frame[0, 0] = (1, 2, 3)  # Channels told apart.
    return {'RGB_INTERLEAVED': frame}

  def step(self, action, num_steps=1):
    assert action.dtype == np.intc and action.shape == (7,), action
    self.steps.append((tuple(int(a) for a in action), num_steps))
    self._frames += num_steps
    if self._frames >= EPISODE_FRAMES:
      self._running = False
    return float(action[3])

  def close(self):
    self._running = False
