"""The README's quick starts for the clusters run as written, where they can run here: the
Kubernetes check (scripts/make_certs.sh, then seed-k8s-check; not `kubectl apply`), the
Slurm dry run on a machine without Slurm or a venv (and the submissions beside it as
dry runs), the Vertex AI dry run without gcloud credentials. Every image build the docs
show passes REVISION, so the image's label names its commit.

The commands are read from README.md itself, so the page cannot drift from what works.
Each runs in a temporary copy of what it writes into (k8s/), nothing in the tree.
"""
import os
import re
import shlex
import shutil
import subprocess
import sys

import pytest

from tests.processes import REPO, laptop_path

pytestmark = pytest.mark.timeout(300)

PLATFORMS = ('Containers', 'Kubernetes', 'Slurm', 'Vertex AI')


def quick_start_commands(platform: str):
  """The shell commands of the README's quick start for `platform`, one per logical line
  (continuations joined, comments dropped)."""
  with open(os.path.join(REPO, 'README.md')) as f:
    readme = f.read()
  section = readme.split('## Quick start, by platform', 1)[1].split('\n## ', 1)[0]
  after = section.split(f'**{platform}**', 1)[1]
  block = re.search(r'```sh\n(.*?)```', after, re.S).group(1)
  commands = []
  for line in block.replace('\\\n', ' ').splitlines():
    words = shlex.split(line, comments=True)
    if words:
      commands.append(words)
  return commands


def bare_environment(tmp_path, extra_path=()):
  """A laptop's: no Slurm, no gcloud or its configuration, no venv."""
  path = [*extra_path, laptop_path(str(tmp_path / 'bin'))]
  return {'PATH': os.pathsep.join(path), 'HOME': str(tmp_path),
          'CLOUDSDK_CONFIG': str(tmp_path / 'gcloud'), 'SEED_VENV': str(tmp_path / 'no-venv'),
          'LANG': 'C.UTF-8'}


def test_every_platform_has_a_quick_start():
  for platform in PLATFORMS:
    assert quick_start_commands(platform), platform


@pytest.mark.skipif(shutil.which('kubectl') is None, reason='kubectl renders the overlays')
def test_the_kubernetes_quick_start_checks_the_overlay(tmp_path):
  # The tree as the commands see it: scripts/ as it is, k8s/ a copy they may write into.
  os.symlink(os.path.join(REPO, 'scripts'), tmp_path / 'scripts')
  shutil.copytree(os.path.join(REPO, 'k8s'), tmp_path / 'k8s',
                  ignore=shutil.ignore_patterns('secrets'))
  tools = tmp_path / 'tools'  # seed-k8s-check (installed with seed), kubectl, openssl
  tools.mkdir()
  for name in ('seed-k8s-check', 'kubectl', 'openssl'):
    found = (os.path.join(os.path.dirname(sys.executable), name) if name.startswith('seed')
             else shutil.which(name))
    os.symlink(found, tools / name)
  env = bare_environment(tmp_path, [str(tools)])
  ran = []
  for words in quick_start_commands('Kubernetes'):
    if words[:2] == ['kubectl', 'apply']:
      continue  # the one step that needs a cluster
    done = subprocess.run(words, cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=240)
    assert done.returncode == 0, (words, done.stdout + done.stderr)
    ran.append((words[0], done.stdout))
  assert [name for name, _ in ran] == ['scripts/make_certs.sh', 'seed-k8s-check']
  assert ran[-1][1].startswith('k8s/overlays/cpu: ok (learner seed-learner:cpu on '), ran[-1][1]


def test_the_slurm_quick_start_runs_on_a_laptop_as_dry_runs(tmp_path):
  env = bare_environment(tmp_path)
  assert subprocess.run(['bash', '-c', 'command -v sbatch'], env=env).returncode != 0
  commands = quick_start_commands('Slurm')
  assert '--dry_run' in commands[0]  # the first runs exactly as written
  for words in commands:
    # The submissions beside it, as the dry runs of themselves: their arguments hold.
    words = words if '--dry_run' in words else words + ['--dry_run']
    done = subprocess.run(words, cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, (words, done.stderr)
    assert done.stdout.splitlines()[-1].startswith('sbatch --parsable'), done.stdout
  assert not (tmp_path / 'no-venv').exists()  # a dry run installs nothing


def test_the_vertex_quick_start_dry_run_needs_no_credentials(tmp_path):
  env = bare_environment(tmp_path)
  [words] = quick_start_commands('Vertex AI')
  assert '--dry_run' in words
  done = subprocess.run(words, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
  assert done.returncode == 0, done.stderr
  assert '"acceleratorType": "NVIDIA_TESLA_T4"' in done.stdout
  assert '"timeout": "259200s"' in done.stdout  # the scenario's bound on the job
  assert 'dry run: nothing submitted' in done.stderr


DOCS = ('README.md', 'docs/deployment.md', 'k8s/README.md', 'gcp/README.md', 'slurm/README.md',
        'docker/Dockerfile.learner', 'docker/Dockerfile.actor')


def test_every_image_build_the_docs_show_names_its_commit():
  # Without --build-arg REVISION the image's org.opencontainers.image.revision label
  # reads `unknown`, and nobody can tell which code a running pod has.
  builds = []
  for page in DOCS:
    with open(os.path.join(REPO, page)) as f:
      text = f.read().replace('\\\n', ' ')
    builds += [(page, line) for line in text.splitlines()
               if re.search(r'\b(podman|docker) build\b', line) and ' -f ' in line]
  assert len(builds) >= 8, builds
  for page, line in builds:
    assert '--build-arg REVISION=' in line, (page, line)
    tag = re.search(r' -t (\S+)', line).group(1)
    assert ':' in tag.rsplit('/', 1)[-1], (page, line)  # tagged: never :latest by default


def test_the_deployment_page_says_how_a_run_ends_on_each_platform_with_the_codes_used():
  from seed.process import exit_codes  # pylint: disable=g-import-not-at-top
  with open(os.path.join(REPO, 'docs', 'deployment.md')) as f:
    section = f.read().split('## 7. How a run ends, per platform', 1)[1]
  for platform in ('A laptop', 'Containers', 'Kubernetes', 'Slurm', 'Vertex AI'):
    assert f'- **{platform}**' in section, platform
  rows = [line for line in section.splitlines() if line.startswith('| ')]
  assert f'| actor | {exit_codes.BAD_SETTINGS} |' in '\n'.join(rows)
  assert f'| actor | {exit_codes.LEARNER_LOST} |' in '\n'.join(rows)
  # The Kubernetes actors' Job fails at once on exactly those codes.
  with open(os.path.join(REPO, 'k8s', 'base', 'actors.yaml')) as f:
    assert (f'values: [{exit_codes.BAD_SETTINGS}, {exit_codes.LEARNER_LOST}]'
            in f.read())
