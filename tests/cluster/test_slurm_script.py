"""slurm/train.sbatch's own decisions, against stand-in Slurm commands (no cluster): how
long it waits for a learner finishing after its actors ended, that it makes no venv on
a compute node, and that slurm/submit.sh's dry run needs neither sbatch nor a venv.
The real Slurm runs are in test_slurm.py; these need only bash and awk.

The stand-in `srun` runs a stand-in task per step name (the learner: a script that
sleeps, then exits 0 or, on SIGTERM, 143; the actors: exit 0 at once), `squeue` lists
the steps running, `scancel --signal=TERM STEP` signals one, `scontrol show hostnames`
names one node.
"""
import os
import subprocess

import pytest

from tests.processes import REPO, laptop_path

pytestmark = pytest.mark.timeout(240)

SBATCH_SCRIPT = os.path.join(REPO, 'slurm', 'train.sbatch')
SUBMIT = os.path.join(REPO, 'slurm', 'submit.sh')

SRUN = """#!/bin/bash
# srun [options] TASK... : runs $STANDIN/<job-name>.sh in place of the task.
name=''
for arg in "$@"; do case "$arg" in --job-name=*) name="${arg#*=}" ;; esac; done
echo "$SLURM_JOB_ID.$name $name" >> "$STANDIN/steps"
"$STANDIN/$name.sh" &
child=$!
echo "$child" > "$STANDIN/$name.pid"
wait "$child"
code=$?
grep -v " $name\\$" "$STANDIN/steps" > "$STANDIN/steps.tmp"; mv "$STANDIN/steps.tmp" "$STANDIN/steps"
exit "$code"
"""
SQUEUE = """#!/bin/bash
cat "$STANDIN/steps" 2>/dev/null
"""
SCANCEL = """#!/bin/bash
# scancel --signal=TERM JOB.NAME
step="${@: -1}"
name="${step#*.}"
echo "scancel $*" >> "$STANDIN/calls"
kill -TERM "$(cat "$STANDIN/$name.pid")"
"""
SCONTROL = """#!/bin/bash
echo "scontrol $*" >> "$STANDIN/calls"
[ "$1" = show ] && echo node1
exit 0
"""
# Records any call: the job must not make or update a venv on a compute node.
PYTHON3 = """#!/bin/bash
echo "python3 $*" >> "$STANDIN/calls"
exit 1
"""
LEARNER = """#!/bin/bash
# A learner whose actors were told the run is over: it checkpoints and exits 0, taking
# $LEARNER_FINISH_S seconds (within its --shutdown_limit_s).
trap 'echo "learner got SIGTERM" >> "$STANDIN/calls"; exit 143' TERM
sleep "$LEARNER_FINISH_S" & wait $!
exit 0
"""
ACTORS = """#!/bin/bash
exit 0  # told Finished: the actors' step ends first
"""


@pytest.fixture
def standin(tmp_path):
  """(environment, folder): stand-in Slurm commands first on PATH, a stand-in venv."""
  folder = tmp_path / 'standin'
  bin_dir = folder / 'bin'
  bin_dir.mkdir(parents=True)
  for name, text in (('srun', SRUN), ('squeue', SQUEUE), ('scancel', SCANCEL),
                     ('scontrol', SCONTROL), ('python3', PYTHON3)):
    (bin_dir / name).write_text(text)
  for name, text in (('learner.sh', LEARNER), ('actors.sh', ACTORS)):
    (folder / name).write_text(text)
  for path in list(bin_dir.iterdir()) + [folder / 'learner.sh', folder / 'actors.sh']:
    path.chmod(0o755)
  venv = tmp_path / 'venv' / 'bin'  # what submit.sh's ensure_venv made on the login node
  venv.mkdir(parents=True)
  (venv / 'activate').write_text('')
  (venv / 'seed-job').write_text('#!/bin/sh\n')
  (venv / 'seed-job').chmod(0o755)
  (folder / 'calls').write_text('')
  env = dict(os.environ, PATH=f'{bin_dir}:{os.environ["PATH"]}', STANDIN=str(folder),
             SEED_VENV=str(tmp_path / 'venv'), SEED_RUN_DIR=str(tmp_path / 'run'),
             SLURM_JOB_ID='41', SLURM_JOB_NODELIST='node1')
  return env, folder


def run_job(env, **extra_env):
  return subprocess.run(['bash', SBATCH_SCRIPT, f'--repo={REPO}', '--num_actors=2',
                         '--runtime=venv'], env=dict(env, **extra_env), cwd=REPO,
                        capture_output=True, text=True, timeout=180)


def test_a_learner_given_a_longer_shutdown_limit_finishes_and_the_job_completes(standin):
  # It waited a fixed 30 s after the actors' step ended, then stopped the learner as if
  # the actors had failed: a learner given --shutdown_limit_s=60 was killed while it
  # wrote its last checkpoint, and the job read FAILED.
  env, folder = standin
  done = run_job(env, SEED_SHUTDOWN_LIMIT_S='60', LEARNER_FINISH_S='35')
  calls = (folder / 'calls').read_text()
  assert done.returncode == 0, done.stdout + done.stderr + calls
  assert 'learner got SIGTERM' not in calls, calls
  assert 'learner exited with 0' in done.stdout, done.stdout


def test_the_job_makes_no_venv_on_a_compute_node(standin):
  env, folder = standin
  done = run_job(env, LEARNER_FINISH_S='0')
  calls = (folder / 'calls').read_text()
  assert done.returncode == 0, done.stdout + done.stderr + calls
  assert 'python3' not in calls, calls  # no `python3 -m venv`, no pip install


def test_a_job_without_the_venv_stops_saying_where_it_looked(standin, tmp_path):
  env, _ = standin
  done = run_job(dict(env, SEED_VENV=str(tmp_path / 'nowhere')), LEARNER_FINISH_S='0')
  assert done.returncode == 2, done.stdout + done.stderr
  assert f'no seed venv at {tmp_path / "nowhere"} (no bin/seed-job); slurm/submit.sh makes ' \
         'it on the login node' in done.stderr


def test_a_dry_run_needs_neither_sbatch_nor_a_venv(tmp_path):
  # As on a laptop: no Slurm commands, no venv; any python3 checks the flag names.
  env = {'PATH': laptop_path(str(tmp_path / 'bin')), 'HOME': str(tmp_path),
         'SEED_VENV': str(tmp_path / 'no-venv')}
  assert subprocess.run(['bash', '-c', 'command -v sbatch'], env=env).returncode != 0
  done = subprocess.run([SUBMIT, 'toy', 'vtrace', '2', '4', '--env=Catch',
                         '--target_return=0.9', f'--run_dir={tmp_path}/run', '--dry_run'],
                        env=env, cwd=REPO, capture_output=True, text=True, timeout=120)
  assert done.returncode == 0, done.stderr
  assert done.stdout.splitlines()[-1].startswith('sbatch --parsable'), done.stdout
  assert not (tmp_path / 'no-venv').exists()  # nothing installed
  assert 'flag names are not checked' not in done.stderr, done.stderr
  typo = subprocess.run([SUBMIT, 'toy', 'vtrace', '2', '4', '--target_retrun=0.9', '--dry_run'],
                        env=env, cwd=REPO, capture_output=True, text=True, timeout=120)
  assert typo.returncode == 2 and 'unknown flag --target_retrun' in typo.stderr, typo.stderr


def test_usr1_must_leave_the_learner_its_shutdown_limit(tmp_path):
  done = subprocess.run([SUBMIT, 'toy', 'vtrace', '2', '4', '--shutdown_limit_s=300',
                         '--dry_run'], env=dict(os.environ, SEED_VENV=str(tmp_path / 'v')),
                        cwd=REPO, capture_output=True, text=True, timeout=120)
  assert done.returncode == 2, done.stdout + done.stderr
  assert ('--stop_before_limit_s=300 leaves the learner less than its '
          '--shutdown_limit_s=300 and 30 s to checkpoint') in done.stderr
  assert 'give at least 330' in done.stderr
