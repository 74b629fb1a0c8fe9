"""What both ACER agents share: the data schedule they ask for, the optimizer, and the
Polyak-averaged network the trust region measures against."""
import keras
import tensorflow as tf

from seed.agents import base
from seed.losses import sac as sac_losses
from seed.replay.fresh_then_replay import ReplaySchedule


def make_optimizer(config) -> keras.optimizers.Optimizer:
  """Adam, or RMSProp with the paper's decay 0.99 and no momentum."""
  if config.optimizer == 'adam':
    return keras.optimizers.Adam(config.learning_rate, epsilon=config.adam_epsilon)
  return keras.optimizers.RMSprop(config.learning_rate, rho=0.99, momentum=0.0,
                                  epsilon=config.rmsprop_epsilon)


def copy_into_average(variables, average_variables) -> None:
  """theta_a <- theta: the average starts as the online network."""
  sac_losses.polyak_update(variables, average_variables, tau=1.0)


def update_average_if(applied, variables, average_variables, average_decay: float) -> None:
  """theta_a <- alpha theta_a + (1 - alpha) theta, only after an applied update (a
  skipped non-finite step leaves the average alone). Inside a tf.function."""

  def update():
    sac_losses.polyak_update(variables, average_variables, tau=1.0 - average_decay)
    return tf.constant(True)

  tf.cond(applied, update, lambda: tf.constant(False))


class ACERAgentBase(base.Agent):
  """The schedule and sizes both ACER agents take from their config
  (an ACERSharedConfig)."""

  input_kind = 'fresh_then_replay'

  @property
  def unroll_length(self) -> int:
    return self.config.unroll_length

  @property
  def batch_unrolls(self) -> int:
    return self.config.batch_unrolls

  @property
  def replay_schedule(self) -> ReplaySchedule:
    """What FreshThenReplay needs: the replay ratio and the replay's size."""
    return ReplaySchedule(replay_ratio=self.config.replay_ratio,
                          capacity_unrolls=self.config.replay_capacity_unrolls,
                          replay_start_unrolls=self.config.replay_start_unrolls)
