"""The trainer thread under bad numbers and failed checkpoints (fakes, no TensorFlow)."""
import threading

import numpy as np
import pytest

from seed import types
from seed.learner.checkpoint import CheckpointWriteError
from seed.learner.counters import Counters
from seed.learner.trainer import NonFiniteTraining, Trainer

pytestmark = pytest.mark.timeout(60)


class ScriptedAgent:
  """Returns the scripted number of skipped updates, one entry per train step."""
  batch_unrolls = 2

  def __init__(self, skipped_per_step):
    self._script = list(skipped_per_step)
    self.steps = 0

  def observe_env_frames(self, env_frames):
    self.env_frames = env_frames

  def train_step(self, sample):
    skipped = self._script[min(self.steps, len(self._script) - 1)]
    self.steps += 1
    return types.TrainResult(logs={'loss': float('nan') if skipped else 1.0},
                             priorities=np.full(len(sample.ids), np.nan if skipped else 1.0),
                             skipped_updates=skipped)


class RecordingInput:
  def __init__(self, stop_after_samples, stop_event):
    self.updates = []
    self._left = stop_after_samples
    self._stop_event = stop_event

  def sample(self, batch):
    self._left -= 1
    if self._left < 0:
      self._stop_event.set()
      return None
    return types.Sample(ids=np.arange(batch), data=None, weights=np.ones(batch))

  def update_priorities(self, ids, priorities):
    self.updates.append(np.asarray(priorities))

  def stats(self):
    return {}


class FailingCheckpointer:
  """Fails the saves whose number (1-based) is in `failing`."""
  latest = '/run/ckpt/ckpt-1'

  def __init__(self, failing=()):
    self.failing, self.attempts, self.written = set(failing), 0, 0

  def save(self):
    self.attempts += 1
    if self.attempts in self.failing:
      raise CheckpointWriteError('could not write checkpoint 2 (No space left on device); '
                                 'the previous checkpoint /run/ckpt/ckpt-1 is intact')
    self.written += 1


def run_trainer(agent, samples, checkpointer=None, interval_s=1e9, max_nonfinite_steps=5):
  stop = threading.Event()
  agent_input = RecordingInput(samples, stop)
  counters, logs = Counters(), []
  trainer = Trainer(agent, agent_input, counters, logs.append,
                    checkpointer or FailingCheckpointer(), interval_s, stop,
                    max_nonfinite_steps=max_nonfinite_steps)
  trainer.start()
  trainer.join(timeout=30)
  assert not trainer.is_alive()
  return trainer, agent_input, counters, logs


def test_skipped_steps_are_counted_and_their_priorities_ignored():
  agent = ScriptedAgent([0, 1, 2, 0, 0])
  trainer, agent_input, counters, logs = run_trainer(agent, samples=5)
  assert trainer.error is None
  assert trainer.nonfinite_steps == 2
  assert counters.get('learner_steps') == 3  # Only the steps that changed the model.
  assert len(agent_input.updates) == 3
  assert all(np.isfinite(p).all() for p in agent_input.updates)
  assert [entry['train/nonfinite_steps'] for entry in logs] == [0, 1, 2, 2, 2]


def test_too_many_nonfinite_steps_in_a_row_stop_training_without_a_checkpoint():
  agent = ScriptedAgent([0, 1, 0, 1, 1, 1, 1, 1, 0])
  checkpointer = FailingCheckpointer()
  trainer, _, counters, _ = run_trainer(agent, samples=100, checkpointer=checkpointer)
  assert isinstance(trainer.error, NonFiniteTraining)
  message = str(trainer.error)
  assert '5 train steps in a row had a NaN or Inf loss' in message
  assert '--max_nonfinite_steps=5' in message and '/run/ckpt/ckpt-1' in message
  assert agent.steps == 8 and counters.get('learner_steps') == 2
  assert checkpointer.attempts == 0


def test_a_failed_checkpoint_is_counted_and_training_goes_on():
  checkpointer = FailingCheckpointer(failing={2, 3})
  trainer, _, counters, logs = run_trainer(ScriptedAgent([0]), samples=6,
                                           checkpointer=checkpointer, interval_s=0)
  assert trainer.error is None
  assert counters.get('learner_steps') == 6
  assert checkpointer.attempts == 6 and checkpointer.written == 4
  assert trainer.checkpoint_failures == 2 and logs[-1]['checkpoint/failures'] == 2


class ScalingAgent(ScriptedAgent):
  """Records the learning-rate fraction in force at each train step."""

  def __init__(self):
    super().__init__([0])
    self.fraction, self.fractions_used = 1.0, []

  def scale_learning_rates(self, fraction):
    self.fraction = fraction

  def train_step(self, sample):
    self.fractions_used.append(self.fraction)
    return super().train_step(sample)


def test_each_train_step_runs_at_the_annealed_learning_rate():
  agent, fractions = ScalingAgent(), iter([1.0, 0.75, 0.5, 0.0])
  stop = threading.Event()
  trainer = Trainer(agent, RecordingInput(4, stop), Counters(), lambda logs: None,
                    FailingCheckpointer(), 1e9, stop,
                    learning_rate_fraction=lambda: next(fractions))
  trainer.start()
  trainer.join(timeout=30)
  assert trainer.error is None and agent.fractions_used == [1.0, 0.75, 0.5, 0.0]


class FramesAgent(ScriptedAgent):
  """Records the env frames it was told of before each train step."""

  def __init__(self):
    super().__init__([0])
    self.frames_seen = []

  def train_step(self, sample):
    self.frames_seen.append(self.env_frames)
    return super().train_step(sample)


def test_each_train_step_follows_the_env_frames_played_so_far():
  # What R2D2's decaying epsilon ladder reads: the counter as the step starts.
  agent, counters, stop = FramesAgent(), Counters(), threading.Event()

  class PlayingInput(RecordingInput):
    def sample(self, batch):
      counters.add(env_frames=100)  # Acting went on while the last step trained.
      return super().sample(batch)

  trainer = Trainer(agent, PlayingInput(3, stop), counters, lambda logs: None,
                    FailingCheckpointer(), 1e9, stop)
  trainer.start()
  trainer.join(timeout=30)
  assert trainer.error is None and agent.frames_seen == [100, 200, 300]


def test_the_learners_fraction_falls_with_the_frames_played_and_needs_a_budget():
  from types import SimpleNamespace  # pylint: disable=g-import-not-at-top
  from seed.learner import runtime as learner_runtime  # pylint: disable=g-import-not-at-top
  counters = Counters()
  learner = SimpleNamespace(counters=counters, options=learner_runtime.LearnerOptions(
      logdir='unused', max_env_frames=1000, anneal_learning_rate=True))
  fraction = learner_runtime.Learner._learning_rate_fraction  # pylint: disable=protected-access
  assert fraction(learner) == 1.0
  counters.add(env_frames=250)
  assert fraction(learner) == pytest.approx(0.75)
  counters.add(env_frames=1000)  # Past the budget (the last batch): never negative.
  assert fraction(learner) == 0.0
  with pytest.raises(ValueError, match=r'--anneal_learning_rate lowers the step sizes to 0 '
                     r'at --max_env_frames; set --max_env_frames to a frame count > 0 '
                     r'\(got 0\)'):
    learner_runtime.Learner(learner_runtime.LearnerOptions(logdir='unused',
                                                           anneal_learning_rate=True))
