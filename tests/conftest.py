"""Session fixtures shared by test modules: real podman and the project's images."""
import os

import pytest

from tests import podman as podman_harness
from tests.processes import NetnsUnavailable, kill_tracked, netns_pair


@pytest.fixture(autouse=True)
def _no_process_outlives_its_test():
  """Processes started through tests.processes.track are killed if a test leaves them."""
  yield
  kill_tracked()


@pytest.fixture
def gin_cleared():
  """Clears gin's bindings after a test that parses gin in the test process, so later
  tests build their configs from gin's defaults."""
  yield
  import gin  # pylint: disable=g-import-not-at-top
  with gin.unlock_config():
    gin.clear_config()


@pytest.fixture
def hosts():
  """Two "hosts": network namespaces joined by a veth pair (tests.processes.NetnsPair),
  deleted also when the test fails; skips where `ip netns add` is refused."""
  try:
    with netns_pair() as pair:
      yield pair
  except NetnsUnavailable as e:
    pytest.skip(f'cannot make network namespaces here: {e}')


@pytest.fixture(scope='session')
def podman():
  """A private podman (own config and storage), removed whole at the end of the
  session; skips where podman cannot run here."""
  reason = podman_harness.unavailable_reason()
  if reason:
    pytest.skip(reason)
  for root in podman_harness.Podman.remove_stale():
    print(f'podman: removed {root}, left by a test run that was killed')
  with podman_harness.Podman() as pm:
    pm.check_works()  # Installed but broken is a failure, not a skip.
    yield pm


@pytest.fixture(scope='session')
def seed_images(podman):
  """The actor and learner images from docker/, each built once a session on the
  debootstrap base: {'actor': Built, 'learner': Built}."""
  # The actor first: the learner's build then reuses the layers they share.
  revision = {'REVISION': podman_harness.revision()}
  actor = podman.build('docker/Dockerfile.actor', 'seed-actor:test', revision)
  learner = podman.build('docker/Dockerfile.learner', 'seed-learner:test', revision)
  return {'actor': actor, 'learner': learner}


def pytest_xdist_auto_num_workers(config):  # pylint: disable=unused-argument
  """`--numprocesses=auto` (pytest.ini): two workers more than the cores. One of them
  spends most of the run on the podman and Slurm group (tests.podman.SHARED_MACHINE_GROUP:
  3.3 CPU-minutes in about 20 minutes of image builds, containers and Slurm daemons
  starting), and the others wait too (keepalives that must expire, phases of the fault
  suite); the second extra worker fills those waits, so the cores stay busy. On the 2-core
  machine (2026-11-29, the same slow day): 3 workers kept the cores 82% busy, 4 workers
  90%, the whole suite 29:04 instead of about 31:30."""
  return len(os.sched_getaffinity(0)) + 2


# Workers pick tests in collection order: the long group of podman and Slurm tests
# (tests.podman.SHARED_MACHINE_GROUP) first, so it does not end the run alone; the real
# Football tests last, as CI builds Football meanwhile (.ci/run).
FIRST_MODULES = {'test_containers', 'test_k8s', 'test_slurm'}
LAST_MODULES = {'test_football_real'}


TIERS = ('unit', 'integration', 'system', 'learning', 'cluster')


def pytest_collection_modifyitems(items):
  def module(item):
    return item.module.__name__.rpartition('.')[2]

  # Each test carries its tier's marker (pytest.ini), from the folder it lives in:
  # `-m unit`, `-m "not cluster"`.
  for item in items:
    tier = item.module.__name__.split('.')[1]
    if tier in TIERS:
      item.add_marker(tier)
  items.sort(key=lambda item: (module(item) not in FIRST_MODULES, module(item) in LAST_MODULES))


# Figures measured in a worker reach the summary through the reports: a worker's own
# terminal summary is never shown.
_FIGURES_PROPERTY = 'podman_figures'
_figures_reported: list = []


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):  # pylint: disable=unused-argument
  made = yield
  if podman_harness.FIGURES:
    made.get_result().user_properties.append((_FIGURES_PROPERTY, list(podman_harness.FIGURES)))
    podman_harness.FIGURES.clear()


def pytest_runtest_logreport(report):
  for name, value in report.user_properties:
    if name == _FIGURES_PROPERTY:
      _figures_reported.extend(value)


def pytest_terminal_summary(terminalreporter):
  if _figures_reported:
    terminalreporter.section('podman figures')
    for line in _figures_reported:
      terminalreporter.write_line(line)
