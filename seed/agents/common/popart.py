"""PopArt's running statistics as checkpointed variables, and the update that keeps
a value head's unnormalised output unchanged (see `seed.losses.popart`)."""
import keras
import tensorflow as tf

from seed.losses import popart


class PopArtStatistics(tf.Module):
  """mu, nu and the update count of one value head's targets.

  Before the first update mu = 0 and nu = 1 (sigma = 1), so V(x) = n(x).
  """

  def __init__(self, step_size: float, name: str = 'popart'):
    """step_size: beta in (0, 1], the statistics' EMA step once past 1 / beta updates."""
    super().__init__(name=name)
    self._step_size = float(step_size)
    self.mean = tf.Variable(0.0, trainable=False, name='mean')
    self.second_moment = tf.Variable(1.0, trainable=False, name='second_moment')
    self.updates = tf.Variable(0, dtype=tf.int64, trainable=False, name='updates')

  def moments(self) -> popart.Moments:
    return popart.Moments(tf.convert_to_tensor(self.mean),
                          tf.convert_to_tensor(self.second_moment))

  def scale(self) -> tf.Tensor:
    """sigma, float32 scalar."""
    return popart.scale(self.moments())

  def denormalize(self, normalized) -> tf.Tensor:
    """The value sigma * n(x) + mu from the head's output n(x)."""
    return self.scale() * normalized + self.mean

  def normalize(self, targets) -> tf.Tensor:
    """Targets in the head's units: (targets - mu) / sigma."""
    return (targets - self.mean) / self.scale()

  def update(self, targets, weights, head: keras.layers.Dense) -> None:
    """ART on `targets` (weighted, see popart.updated_moments), then POP on `head`,
    the Dense layer whose single output is the normalised value n(x)."""
    old = self.moments()
    old_scale = popart.scale(old)
    new = popart.updated_moments(old, targets, weights, self._step_size,
                                 self.updates + 1)
    new_scale = popart.scale(new)
    kernel, bias = popart.preserved_head(head.kernel, head.bias, old.mean, old_scale,
                                         new.mean, new_scale)
    head.kernel.assign(kernel)
    head.bias.assign(bias)
    self.mean.assign(new.mean)
    self.second_moment.assign(new.second_moment)
    self.updates.assign_add(1)
