"""--cpu_cores: the core lists it takes, the errors it gives, and the pinning itself
(in a child process, so the test runner keeps its cores)."""
import multiprocessing as mp
import os

import pytest

from seed import settings
from seed.process import cpu_affinity


@pytest.mark.parametrize('text, cores', [('1', {1}), ('0-3,6', {0, 1, 2, 3, 6}),
                                         ('2,2-3', {2, 3}), ('5-5', {5})])
def test_parse_cores(text, cores):
  assert cpu_affinity.parse_cores(text) == cores


@pytest.mark.parametrize('text', ['', 'a', '1,', '-1', '1 2', '0x1'])
def test_malformed_list_names_it_and_the_form(text):
  with pytest.raises(ValueError, match=r"--cpu_cores=.*expected core ids and ranges"):
    cpu_affinity.parse_cores(text)


def test_backward_range_is_named():
  with pytest.raises(ValueError, match='the range 3-1 runs backwards'):
    cpu_affinity.parse_cores('3-1')


def test_describe_folds_runs():
  assert cpu_affinity.describe({0, 1, 2, 5, 7, 8}) == '0-2,5,7-8'
  assert cpu_affinity.describe({4}) == '4'


def test_settings_check_accepts_lists_and_empty():
  for schema in (settings.LEARNER, settings.ACTOR):
    check = next(s for s in schema if s.name == 'cpu_cores').check
    assert check.accepts('') and check.accepts(None) and check.accepts('0-3,6')
    assert not check.accepts('cores 1')


def test_nothing_to_pin_without_a_list():
  assert cpu_affinity.pin('') is None and cpu_affinity.pin(None) is None


def test_core_not_available_names_it_and_what_is():
  beyond = max(os.sched_getaffinity(0)) + 1
  with pytest.raises(ValueError, match=rf"names cores {beyond} that this process may not use; "
                                       r'available: \d'):
    cpu_affinity.pin(str(beyond))


def _pin_and_start_thread(core: int, out) -> None:
  import threading  # pylint: disable=import-outside-toplevel
  cpu_affinity.pin(str(core))
  seen = []
  thread = threading.Thread(target=lambda: seen.append(os.sched_getaffinity(0)))
  thread.start()
  thread.join()
  out.put((sorted(os.sched_getaffinity(0)), sorted(seen[0])))


def test_pin_holds_for_threads_started_after():
  core = min(os.sched_getaffinity(0))
  out = mp.get_context('spawn').SimpleQueue()
  child = mp.get_context('spawn').Process(target=_pin_and_start_thread, args=(core, out))
  child.start()
  child.join(60)
  assert child.exitcode == 0
  assert out.get() == ([core], [core])


def test_a_bad_list_ends_a_main_with_the_error_and_status_2(capsys):
  with pytest.raises(SystemExit) as exit_info:
    cpu_affinity.pin_or_exit('3-1')
  assert exit_info.value.code == 2
  assert 'error: --cpu_cores=' in capsys.readouterr().err
