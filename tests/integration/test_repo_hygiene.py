"""Secrets and large local folders stay out of git and out of image build contexts."""
import fnmatch
import os
import re
import subprocess

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SECRETS = ['certs/ca.key', 'certs/tls.key', 'certs/token', 'certs-learner/tls.key',
           'certs-actor/token', 'k8s/base/secrets/token',
           # outside the known folders: keys and tokens made or copied anywhere
           'tls.key', 'deploy/prod/learner.key', 'token', 'secrets/vertex/token',
           'auth.token', 'deploy/actor.token']
LARGE = ['.venv-football/bin/python', '.venv/bin/python', 'runs/atari_vtrace/ckpt/ckpt-1.index']


@pytest.mark.parametrize('path', SECRETS + LARGE)
def test_git_ignores_it(path):
  if not os.path.isdir(os.path.join(REPO, '.git')):
    pytest.skip('not a git checkout')
  result = subprocess.run(['git', 'check-ignore', '--no-index', '-q', path], cwd=REPO)
  assert result.returncode == 0, f'{path} is not ignored by .gitignore'


def _docker_ignored(path: str, patterns) -> bool:
  """Docker's rule for these plain patterns: a pattern excludes a path it matches or a
  folder above it."""
  parts = path.split('/')
  prefixes = ['/'.join(parts[:i]) for i in range(1, len(parts) + 1)]
  def matches(prefix: str, pattern: str) -> bool:
    # Docker's **/ matches any number of folders, none included.
    return fnmatch.fnmatch(prefix, pattern) or (
        pattern.startswith('**/') and fnmatch.fnmatch(prefix, pattern[3:]))
  return any(matches(prefix, pattern.rstrip('/')) for pattern in patterns for prefix in prefixes)


@pytest.mark.parametrize('path', SECRETS + LARGE)
def test_image_build_contexts_leave_it_out(path):
  with open(os.path.join(REPO, '.dockerignore')) as f:
    patterns = [line.strip() for line in f if line.strip() and not line.startswith('#')]
  assert _docker_ignored(path, patterns), f'{path} would be sent to the image build'


def test_the_process_helpers_find_the_repository():
  # Children get REPO as their PYTHONPATH and working directory: one folder too deep and
  # seed/types.py shadows the standard library's types in every child.
  from seed.process import local_processes  # pylint: disable=g-import-not-at-top
  assert local_processes.REPO == REPO and os.path.isfile(os.path.join(REPO, 'setup.py'))


def test_both_images_default_to_one_base_pinned_by_digest():
  # A tag moves; a digest does not. Both files name the same base, so the learner's
  # build reuses the actor's layers.
  defaults = []
  for image in ('actor', 'learner'):
    with open(os.path.join(REPO, 'docker', f'Dockerfile.{image}')) as f:
      defaults += [line.split('=', 1)[1].strip() for line in f if line.startswith('ARG BASE=')]
  assert len(defaults) == 2 and defaults[0] == defaults[1], defaults
  assert re.fullmatch(r'python:3\.11-slim@sha256:[0-9a-f]{64}', defaults[0]), defaults[0]
