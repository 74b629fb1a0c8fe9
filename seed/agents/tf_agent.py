"""What the TensorFlow agents share: warm-up, one concrete policy per batch size,
optimizer slots, and the configured learning rates winning over restored ones."""
import numpy as np

from seed import types


class KerasAgentMixin:
  """For agents with `inference` (a tf.function) and `_env_spec`.

  Single-network agents set `_network`, `_optimizer` (Keras 3) and
  `_configured_learning_rate`; agents with several optimizers override
  `_optimizers` instead.
  """

  @property
  def network(self):
    return self._network

  @property
  def optimizer(self):
    return self._optimizer

  def _optimizers(self):
    """(optimizer, the variables it trains, its configured learning rate) for each."""
    return ((self._optimizer, self._network.trainable_variables,
             self._configured_learning_rate),)

  def warm_up(self, batch_sizes) -> None:
    """Traces `inference` for each batch size and creates the optimizer slots."""
    for size in batch_sizes:
      self.inference(*self._example_inputs(int(size)))
    self._build_optimizer()

  def batched_policy(self, batch_size: int):
    # The traced concrete function: calling it skips tf.function's argument
    # matching, about 0.6 ms a call on the dev machine (a third of a batch of 1).
    return self.inference.get_concrete_function(*self._example_inputs(batch_size))

  def on_restored(self) -> None:
    # Optimizers checkpoint their learning rates; the configured ones win.
    for optimizer, _, learning_rate in self._optimizers():
      optimizer.learning_rate.assign(learning_rate)

  def _example_inputs(self, size: int):
    spec = self._env_spec
    return (np.zeros((size,) + spec.observation_shape, spec.observation_dtype),
            np.zeros([size], np.float32), np.zeros([size], bool),
            self.initial_core_state(size),
            types.ActingParams(epsilon=np.zeros([size], np.float32),
                               evaluation=np.zeros([size], bool)))

  def _build_optimizer(self) -> None:
    # Keras 3 creates slots in build(); a checkpoint read before that leaves the
    # slots pending, and train_step must not create variables inside a trace.
    for optimizer, variables, _ in self._optimizers():
      if not optimizer.built:
        optimizer.build(variables)
