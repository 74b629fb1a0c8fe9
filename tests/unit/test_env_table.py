"""EnvTable: slots live with their stream; ordinals are reused, so they stay bounded."""
import grpc
import numpy as np
import pytest

from seed import types
from seed.inference.env_state import EnvTable
from seed.protocol import ProtocolError


def _table():
  def acting_params(ordinal, evaluation):
    # The ordinal as epsilon, so a test can read which rung an env got.
    return types.ActingParams(epsilon=np.float32(ordinal), evaluation=np.bool_(evaluation))
  return EnvTable(lambda n: (np.zeros((n, 2), np.float32),), acting_params, unroll_length=3)


def test_a_replacement_actor_takes_the_ordinals_of_the_one_it_replaces():
  table = _table()
  first = table.connect(actor_id=0, run_id='a', num_envs=2)
  second = table.connect(actor_id=1, run_id='b', num_envs=2)
  assert [s.ordinal for s in first + second] == [0, 1, 2, 3]
  table.disconnect(actor_id=0, run_id='a')
  replacement = table.connect(actor_id=7, run_id='c', num_envs=3)
  # The two freed rungs first, lowest first; then a new one.
  assert [s.ordinal for s in replacement] == [0, 1, 4]
  assert [float(s.acting.epsilon) for s in replacement] == [0.0, 1.0, 4.0]
  assert table.num_envs == 5 and table.num_ordinals == 5


def test_ordinals_stay_bounded_however_many_actor_ids_come_and_go():
  table = _table()
  live = [table.connect(actor_id=i, run_id=f'r{i}', num_envs=8) for i in range(4)]
  for new_id in range(4, 2004):  # 2,000 actors replaced, each under a new id
    table.disconnect(actor_id=new_id - 4, run_id=f'r{new_id - 4}')
    live.append(table.connect(actor_id=new_id, run_id=f'r{new_id}', num_envs=8))
  assert table.num_envs == 32
  assert table.num_ordinals == 32  # the most connected at once, not 16,000
  assert sorted(s.ordinal for slots in live[-4:] for s in slots) == list(range(32))


def test_a_stale_disconnect_frees_nothing():
  table = _table()
  table.connect(actor_id=0, run_id='old', num_envs=2)
  table.disconnect(actor_id=0, run_id='old')
  table.connect(actor_id=0, run_id='new', num_envs=2)
  table.disconnect(actor_id=0, run_id='old')  # the old stream's late goodbye
  assert table.num_envs == 2
  assert [s.ordinal for s in table.connect(actor_id=1, run_id='x', num_envs=1)] == [2]


def test_a_connected_actor_id_is_refused_and_takes_no_ordinal():
  table = _table()
  table.connect(actor_id=3, run_id='a', num_envs=2)
  with pytest.raises(ProtocolError) as refused:
    table.connect(actor_id=3, run_id='b', num_envs=5)
  assert refused.value.code == grpc.StatusCode.ALREADY_EXISTS
  assert 'actor_id 3' in str(refused.value)
  assert table.num_ordinals == 2 and table.num_envs == 2
