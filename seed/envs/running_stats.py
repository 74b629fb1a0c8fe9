"""Running mean and variance for observation normalisation (NumPy only, no TensorFlow).

Batches are merged with Chan et al.'s parallel form of Welford's update: for stats
(n_a, mean_a, M2_a) and a batch (n_b, mean_b, M2_b), with delta = mean_b - mean_a,
  n    = n_a + n_b
  mean = mean_a + delta * n_b / n
  M2   = M2_a + M2_b + delta^2 * n_a * n_b / n,     var = M2 / n (population variance).
This is numerically stable (no sum of squares of raw values) and order-independent up
to rounding, so stats from several actors can be merged with `update_from_moments`.
Kept in float64: float32 accumulators drift after millions of observations.
"""
from typing import Any, Dict, Sequence

import numpy as np

DEFAULT_CLIP = 10.0
DEFAULT_EPSILON = 1e-8


class RunningMeanStd:
  """Per-element running mean and population variance of arrays of shape `shape`.

  Before any update the mean is 0 and the variance 1, so `normalize` is then just the
  clip: an env can be normalised from its first step without a special case.

  Attributes:
    shape: the shape of one observation.
    count: number of observations seen (float, so huge counts stay exact enough).
    mean: float64 array of `shape`.
    var: float64 array of `shape`.
  """

  def __init__(self, shape: Sequence[int] = (), clip: float = DEFAULT_CLIP,
               epsilon: float = DEFAULT_EPSILON):
    """Creates empty stats.

    Args:
      shape: the shape of one observation.
      clip: bound on |normalised value|; 10 is the usual MuJoCo setting.
      epsilon: added to the variance under the square root, so a constant feature
        maps to 0 instead of dividing by zero.
    """
    if not clip > 0:
      raise ValueError(f'clip must be positive, got {clip}.')
    if not epsilon > 0:
      raise ValueError(f'epsilon must be positive, got {epsilon}.')
    self.shape = tuple(int(d) for d in shape)
    self.clip = float(clip)
    self.epsilon = float(epsilon)
    self.count = 0.0
    self.mean = np.zeros(self.shape, np.float64)
    self.var = np.ones(self.shape, np.float64)

  def update(self, batch) -> None:
    """Adds a batch of observations, shape [N, *shape] (N may be 0)."""
    batch = np.asarray(batch, dtype=np.float64)
    if batch.ndim != len(self.shape) + 1 or batch.shape[1:] != self.shape:
      raise ValueError(f'batch has shape {batch.shape}, expected [N, *{self.shape}] = '
                       f'(N, {", ".join(map(str, self.shape))}).')
    if batch.shape[0] == 0:
      return
    if not np.all(np.isfinite(batch)):
      # One inf or NaN would poison the stats for the rest of the run.
      raise ValueError('batch contains non-finite values; refusing to update the stats.')
    self.update_from_moments(batch.mean(axis=0), batch.var(axis=0), batch.shape[0])

  def update_from_moments(self, batch_mean, batch_var, batch_count) -> None:
    """Merges stats of another set: its mean and population variance [*shape], and count."""
    batch_mean = np.asarray(batch_mean, dtype=np.float64)
    batch_var = np.asarray(batch_var, dtype=np.float64)
    for name, value in (('batch_mean', batch_mean), ('batch_var', batch_var)):
      if value.shape != self.shape:
        raise ValueError(f'{name} has shape {value.shape}, expected {self.shape}.')
    if batch_count < 0:
      raise ValueError(f'batch_count must be non-negative, got {batch_count}.')
    if batch_count == 0:
      return
    if self.count == 0:
      # The prior (mean 0, var 1) is a display default, not data: replace it.
      self.mean, self.var, self.count = batch_mean.copy(), batch_var.copy(), float(batch_count)
      return
    total = self.count + batch_count
    delta = batch_mean - self.mean
    m2 = (self.var * self.count + batch_var * batch_count +
          np.square(delta) * self.count * batch_count / total)
    self.mean = self.mean + delta * (batch_count / total)
    self.var = m2 / total
    self.count = total

  def merge(self, other: 'RunningMeanStd') -> None:
    """Adds the observations summarised by `other` (e.g. another actor's stats)."""
    self.update_from_moments(other.mean, other.var, other.count)

  @property
  def std(self) -> np.ndarray:
    """sqrt(var + epsilon), the denominator `normalize` uses."""
    return np.sqrt(self.var + self.epsilon)

  def normalize(self, x) -> np.ndarray:
    """clip((x - mean) / sqrt(var + epsilon), -clip, clip) as float32; x is [..., *shape]."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim < len(self.shape) or x.shape[x.ndim - len(self.shape):] != self.shape:
      raise ValueError(f'x has shape {x.shape}, expected [..., *{self.shape}].')
    return np.clip((x - self.mean) / self.std, -self.clip, self.clip).astype(np.float32)

  def state_dict(self) -> Dict[str, Any]:
    """The stats as plain NumPy values, for a checkpoint (copies, safe to keep)."""
    return {
        'count': np.float64(self.count),
        'mean': self.mean.copy(),
        'var': self.var.copy(),
    }

  def load_state_dict(self, state: Dict[str, Any]) -> None:
    """Restores what `state_dict` returned; the shapes must match this object's."""
    missing = {'count', 'mean', 'var'} - set(state)
    if missing:
      raise ValueError(f'state is missing {sorted(missing)}; expected keys count, mean, var.')
    mean = np.asarray(state['mean'], dtype=np.float64)
    var = np.asarray(state['var'], dtype=np.float64)
    count = float(np.asarray(state['count']))
    for name, value in (('mean', mean), ('var', var)):
      if value.shape != self.shape:
        raise ValueError(f'state {name} has shape {value.shape}, expected {self.shape}: '
                         'the checkpoint is for a different observation shape.')
    if count < 0 or np.any(var < 0):
      raise ValueError(f'state has count {count} and min var {var.min(initial=0.0)}; '
                       'both must be non-negative.')
    self.mean, self.var, self.count = mean.copy(), var.copy(), count
