"""Session fixtures shared by test modules: real podman and the project's images."""
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
  actor = podman.build('docker/Dockerfile.actor', 'seed-actor:test')
  learner = podman.build('docker/Dockerfile.learner', 'seed-learner:test')
  return {'actor': actor, 'learner': learner}


def pytest_terminal_summary(terminalreporter):
  if podman_harness.FIGURES:
    terminalreporter.section('podman figures')
    for line in podman_harness.FIGURES:
      terminalreporter.write_line(line)
