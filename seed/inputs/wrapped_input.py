"""An agent input wrapped by another (PrefetchingInput, LockstepInput): everything the
wrapper does not change goes to the input it wraps."""
from typing import Dict, Optional

from seed import types
from seed.inputs.protocol import AgentInput


class WrappedInput:
  """Delegates the agent-input interface to `inner`; subclasses override what they change."""

  def __init__(self, inner: AgentInput):
    self.inner = inner

  def put(self, unroll: types.Unroll) -> bool:
    return self.inner.put(unroll)

  def sample(self, batch_unrolls: int, timeout_s: float = 0.5) -> Optional[types.Sample]:
    return self.inner.sample(batch_unrolls, timeout_s)

  def ready(self, batch_unrolls: int) -> bool:
    return self.inner.ready(batch_unrolls)

  def update_priorities(self, ids, priorities) -> None:
    self.inner.update_priorities(ids, priorities)

  def stats(self) -> Dict[str, float]:
    return self.inner.stats()

  @property
  def fill(self) -> float:
    return self.inner.fill

  @property
  def saves_anything(self) -> bool:
    return self.inner.saves_anything

  def save(self, checkpoint_path: str) -> None:
    self.inner.save(checkpoint_path)

  def restore(self, checkpoint_path: str) -> bool:
    return self.inner.restore(checkpoint_path)

  def prune(self, directory: str, keep_checkpoints) -> None:
    self.inner.prune(directory, keep_checkpoints)
