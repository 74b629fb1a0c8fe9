"""seed.process.thread_names: the OS shows our threads' names (Linux), cut to its 15 bytes."""
import os
import sys
import threading

import pytest

from seed.process import thread_names


def _os_name_of_a_thread_named(name: str) -> str:
  seen = {}

  def body():
    thread_names.name_this_thread(name)
    with open(f'/proc/{os.getpid()}/task/{threading.get_native_id()}/comm') as f:
      seen['comm'] = f.read().strip()

  thread = threading.Thread(target=body)
  thread.start()
  thread.join()
  return seen['comm']


@pytest.mark.skipif(not sys.platform.startswith('linux'), reason='thread names in /proc: Linux')
def test_a_thread_is_shown_by_its_name_cut_to_15_bytes():
  assert _os_name_of_a_thread_named('seed_infer_0') == 'seed_infer_0'
  assert _os_name_of_a_thread_named('seed_a_name_longer_than_15') == 'seed_a_name_lon'
