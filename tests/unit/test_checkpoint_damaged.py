"""A damaged newest checkpoint (a truncated or garbled file, not a killed save): the
learner resumes from the one before it, saying why; when none reads, a clear error."""
import os

import numpy as np
import pytest

from seed.learner.checkpoint import Checkpointer, CheckpointReadError
from tests.unit.test_checkpoint_full_disk import make_state

pytestmark = pytest.mark.timeout(120)


def _two_checkpoints(directory: str):
  """ckpt-1 at learner step 1 and ckpt-2 at step 6, with different variables."""
  items, counters, replay = make_state(seed=0)
  checkpointer = Checkpointer(directory, items, counters, replay=replay)
  first = checkpointer.save()
  first_variables = [v.numpy().copy() for v in items['variables']]
  for variable in items['variables']:
    variable.assign_add(np.ones(variable.shape, np.float32))
  counters.add(learner_steps=5)
  second = checkpointer.save()
  return first, second, first_variables, replay.fill


def _truncate(path: str, keep_fraction: float = 0.5) -> None:
  with open(path, 'r+b') as f:
    f.truncate(int(os.path.getsize(path) * keep_fraction))


def _garble(path: str) -> None:
  with open(path, 'r+b') as f:
    f.seek(os.path.getsize(path) // 3)
    f.write(b'\xff' * 4096)


@pytest.mark.parametrize('damage', [
    ('.data-00000-of-00001', _truncate), ('.data-00000-of-00001', _garble),
    ('.index', _truncate), ('.replay.npz', _truncate), ('.replay.npz', _garble)],
    ids=['data_truncated', 'data_garbled', 'index_truncated', 'replay_truncated',
         'replay_garbled'])
def test_a_damaged_newest_checkpoint_resumes_from_the_one_before(tmp_path, caplog, damage):
  suffix, damage_file = damage
  first, second, first_variables, replay_fill = _two_checkpoints(str(tmp_path))
  damage_file(second + suffix)
  items, counters, replay = make_state(seed=1)
  assert Checkpointer(str(tmp_path), items, counters, replay=replay).restore_latest()
  assert counters.get('learner_steps') == 1  # ckpt-1's, not ckpt-2's nor a mix
  for expected, restored in zip(first_variables, items['variables']):
    np.testing.assert_array_equal(expected, restored.numpy())
  assert replay.fill == replay_fill
  errors = [r.getMessage() for r in caplog.records if r.levelname == 'ERROR']
  assert len(errors) == 1 and errors[0].startswith(f'cannot resume from {second} (')
  assert errors[0].endswith('trying the checkpoint before it')


def test_no_readable_checkpoint_is_a_clear_error(tmp_path):
  first, second, _, _ = _two_checkpoints(str(tmp_path))
  _truncate(first + '.data-00000-of-00001')
  _truncate(second + '.replay.npz')
  items, counters, replay = make_state(seed=1)
  with pytest.raises(CheckpointReadError) as error:
    Checkpointer(str(tmp_path), items, counters, replay=replay).restore_latest()
  message = str(error.value)
  assert message.startswith(f'no checkpoint in {tmp_path} could be read (ckpt-2: ')
  assert '; ckpt-1: ' in message and 'move the directory aside to start afresh' in message
  assert counters.get('learner_steps') == 2  # make_state's own, untouched


@pytest.mark.parametrize('index', ['deleted', 'garbled'])
def test_a_lost_index_is_rebuilt_from_the_checkpoints_on_disk(tmp_path, index):
  # TensorFlow ignores an index it cannot parse: every checkpoint would then look
  # like a stray of a killed save, be deleted, and the run start afresh.
  first, second, _, _ = _two_checkpoints(str(tmp_path))
  files = sorted(os.listdir(tmp_path))
  if index == 'deleted':
    os.remove(tmp_path / 'checkpoint')
  else:
    (tmp_path / 'checkpoint').write_bytes(b'\x00garbage {{{ model_checkpoint_path')
  items, counters, replay = make_state(seed=1)
  checkpointer = Checkpointer(str(tmp_path), items, counters, replay=replay)
  assert sorted(os.listdir(tmp_path)) == files  # nothing deleted
  assert checkpointer.restore_latest() and counters.get('learner_steps') == 6
  assert checkpointer.save().endswith('ckpt-3')  # numbers go on, nothing overwritten
