"""AgentInput: what the learner asks of the input it trains from.

The inference thread `put`s each finished unroll; the trainer thread `sample`s batches,
trains, and sends `update_priorities` back; the checkpointer `save`s and `restore`s
what the input holds next to each checkpoint and `prune`s files of dropped ones. Data
flows one way (seed.types): Unroll in, Sample out, priorities back by the Sample's ids.
"""
from typing import Dict, Optional, Protocol, Sequence, runtime_checkable

from seed import types


@runtime_checkable
class AgentInput(Protocol):
  """Implemented by ReplayMixture, ReplayInput and FreshThenReplay, and by the wrappers
  PrefetchingInput and LockstepInput."""

  def put(self, unroll: types.Unroll) -> bool:
    """Takes an unroll, blocking the inference thread while the input holds the actors
    back; False (dropping the unroll) once stopping."""

  def sample(self, batch_unrolls: int, timeout_s: float = 0.5) -> Optional[types.Sample]:
    """The next batch of `batch_unrolls` unrolls, or None if none is due within the
    timeout."""

  def ready(self, batch_unrolls: int) -> bool:
    """Whether `sample(batch_unrolls)` would return a batch now without waiting (what
    lockstep waits on)."""

  def update_priorities(self, ids, priorities) -> None:
    """New priorities for a Sample's ids (inputs without priorities ignore or refuse
    them)."""

  def stats(self) -> Dict[str, float]:
    """Figures for the learner's logs ('replay/...')."""

  @property
  def fill(self) -> float:
    """The fraction of what holds the actors back that is in use, in [0, 1]."""

  @property
  def saves_anything(self) -> bool:
    """Whether a checkpoint has contents of this input to keep."""

  def save(self, checkpoint_path: str) -> None:
    """Writes what the input keeps next to a checkpoint (before it is committed)."""

  def restore(self, checkpoint_path: str) -> bool:
    """Reads back what `save` wrote; False if nothing was saved with that checkpoint."""

  def prune(self, directory: str, keep_checkpoints: Sequence[str]) -> None:
    """Deletes files saved with checkpoints not in `keep_checkpoints`."""
