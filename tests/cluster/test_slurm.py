"""slurm/: Catch trained through slurm/submit.sh on a real one-node Slurm cluster.

The cluster (munged, slurmctld, slurmd from Debian's packages) is started by
tests/slurm_cluster.py for each test and stopped with every job and process it ran,
also when the test fails; the cluster tests skip with the reason where it cannot
start (not root, packages missing). What submit.sh refuses is checked without a
cluster, against a stand-in sbatch that records whether it was called.
"""
import ast
import ipaddress
import os
import re
import socket
import subprocess
import time
from typing import Dict, List, Optional

import pytest

from tests import podman as podman_harness
from tests import slurm_cluster
from tests.processes import REPO, NetnsUnavailable, netns_pair
from tests.server_harness import free_port
from tests.learning_runs import first_solved

pytestmark = pytest.mark.xdist_group(podman_harness.SHARED_MACHINE_GROUP)

SUBMIT = os.path.join(REPO, 'slurm', 'submit.sh')
CATCH = ['toy', 'vtrace', '2', '4', '--env=Catch', '--target_return=0.9',
         '--return_window=100', '--max_env_frames=300000', '--progress_interval_s=1']
_UNAVAILABLE = slurm_cluster.unavailable_reason()
needs_slurm = pytest.mark.skipif(_UNAVAILABLE is not None, reason=str(_UNAVAILABLE))


@pytest.fixture
def cluster():
  for root in slurm_cluster.SlurmCluster.remove_stale():
    print(f'slurm: removed {root}, left by a test run that was killed')
  # Installed but failing to start is a failure, not a skip.
  with slurm_cluster.SlurmCluster() as started:
    yield started


class Job:
  """A job submitted with slurm/submit.sh, and the files it writes in its run directory."""

  def __init__(self, cluster: slurm_cluster.SlurmCluster, run_dir: str, arguments: List[str],
               env: Optional[Dict[str, str]] = None):
    self.cluster = cluster
    self.run_dir = run_dir
    # A free port, not the default one from the job id: test clusters of runs side by
    # side all number their jobs from 1.
    port = free_port()
    done = subprocess.run(
        [*cluster.prefix, SUBMIT, *arguments, f'--run_dir={run_dir}', f'--port={port}'],
        cwd=REPO, env=cluster.env(env), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    self.id = done.stdout.strip()
    assert self.id.isdigit(), done.stdout + done.stderr

  def text(self, name: str) -> str:
    try:
      with open(os.path.join(self.run_dir, 'logs', name), errors='replace') as f:
        return f.read()
    except FileNotFoundError:
      return ''

  @property
  def output(self) -> str:
    return self.text(f'slurm-{self.id}.out')

  @property
  def learner_log(self) -> str:
    return self.text('learner.log')

  def describe(self) -> str:
    """Everything a failure message needs."""
    actors = ''.join(f'--- actor_{i}.log\n{self.text(f"actor_{i}.log")[-2000:]}\n' for i in (0, 1))
    return (f'job {self.id}: {self.cluster.job(self.id)}\n--- slurm-{self.id}.out\n'
            f'{self.output[-3000:]}\n--- learner.log\n{self.learner_log[-5000:]}\n{actors}'
            f'{self.cluster.daemon_logs(15)}')

  def wait_for(self, pattern: str, timeout_s: float, since: int = 0) -> re.Match:
    """The first match of `pattern` in the learner's log after offset `since`."""
    deadline = time.monotonic() + timeout_s
    while True:
      match = re.compile(pattern, re.M).search(self.learner_log, since)
      if match:
        return match
      state = self.cluster.job_state(self.id)
      assert state not in slurm_cluster.FINISHED, f'ended {state} first\n{self.describe()}'
      assert time.monotonic() < deadline, f'no {pattern!r} in {timeout_s} s\n{self.describe()}'
      time.sleep(0.5)

  def wait_for_frames(self, more_than: int, since: int, timeout_s: float) -> re.Match:
    """The first progress line after `since` with more than `more_than` env frames and
    some learner steps."""
    while True:
      progress = self.wait_for(r'frames ([\d,]+) \| .* learner [1-9]\d* steps', timeout_s, since)
      if _frames(progress) > more_than:
        return progress
      since = progress.end()

  def wait_state(self, states, timeout_s: float) -> str:
    try:
      return self.cluster.wait_state(self.id, states, timeout_s)
    except (RuntimeError, TimeoutError) as e:
      raise AssertionError(f'{e}\n{self.describe()}') from None

  def started_at(self, restart: int) -> float:
    """The epoch time the batch script began its run number `restart`."""
    match = re.search(rf'job {self.id} \(restart {restart}\) started at ([0-9.]+)', self.output)
    assert match, self.describe()
    return float(match.group(1))


def _frames(progress: re.Match) -> int:
  return int(progress.group(1).replace(',', ''))


def tls_on_one_node(cluster) -> Dict[str, str]:
  """TLS forced on one node, as across nodes: actors dial the node's name, with a
  certificate for it. The learner listens on what that name resolves to here, which
  must be a loopback address: tests never listen on the machine's other interfaces."""
  address = socket.gethostbyname(cluster.node)
  if not ipaddress.ip_address(address).is_loopback:
    pytest.skip(f'node name {cluster.node} resolves to {address}, not a loopback address: '
                'the test would have to listen beyond loopback')
  return {'SEED_TLS': 'always', 'SEED_LISTEN_HOST': address}


@needs_slurm
@pytest.mark.timeout(480)
def test_catch_reaches_its_target_over_tls_and_completes(cluster, tmp_path):
  # --mem: the cluster counts memory, as most do; each step must not hold all of it.
  tls = tls_on_one_node(cluster)
  job = Job(cluster, str(tmp_path / 'run'), CATCH + ['--sbatch=--mem=3000'], env=tls)
  job.wait_state({'RUNNING'}, timeout_s=60)
  job.wait_for(r'reached target 0\.9', timeout_s=400)
  reached = time.time()
  assert job.wait_state({'COMPLETED'}, timeout_s=120) == 'COMPLETED'
  start_to_target_s = reached - job.started_at(0)

  assert os.path.exists(tmp_path / 'run' / 'ckpt' / 'checkpoint'), job.describe()
  ready = tmp_path / 'run' / 'tls' / f'slurm-{job.id}-{cluster.node}' / 'ready'
  assert ready.exists(), job.describe()
  assert re.search(rf'--server_address={re.escape(tls["SEED_LISTEN_HOST"])}:\d+.*--tls_cert_file=',
                   job.learner_log)
  for actor_id in (0, 1):
    actor_log = job.text(f'actor_{actor_id}.log')
    assert f'--server_address={cluster.node}:' in actor_log, actor_log
    assert '--tls_ca_file=' in actor_log and 'connected to learner' in actor_log, actor_log
  with open(tmp_path / 'run' / 'episodes.csv') as f:
    episodes = [(int(row.split(',')[0]), float(row.split(',')[1])) for row in list(f)[1:]]
  frames, mean_return = first_solved(episodes, 0.9, 100, label='Catch on Slurm')
  assert mean_return >= 0.9
  print(f'Slurm job {job.id}: Catch from job start to a mean return of 0.9 over 100 episodes '
        f'in {start_to_target_s:.0f} s ({frames} frames; learner + 2 actors x 4 envs, TLS)')


@needs_slurm
@pytest.mark.timeout(600)
def test_requeued_job_resumes_from_the_learners_checkpoint(cluster, tmp_path):
  # One node, no SEED_TLS: the learner on localhost in plaintext.
  job = Job(cluster, str(tmp_path / 'run'), CATCH)
  resumed_at, resumed_frames = 0, 0
  checkpoints = []
  # First what the time limit sends (--signal=B:USR1@S): the batch script stops the
  # learner and requeues the job itself. Then what preemption or an operator does.
  for restart, interrupt in ((1, ['scancel', '--batch', '--signal=USR1', job.id]),
                             (2, ['scontrol', 'requeue', job.id])):
    served = job.wait_for_frames(more_than=resumed_frames, since=resumed_at, timeout_s=240)
    cluster.run(*interrupt)
    written = job.wait_for(r'received SIGTERM: checkpointing and stopping(?:.|\n)*?'
                           r'checkpoint written: (\S+)', timeout_s=60, since=served.end())
    checkpoints.append(written.group(1))
    _requeued(cluster, job, restart)
    resumed = job.wait_for(r'resumed from (\S+): (\{.*\})', timeout_s=120, since=written.end())
    assert resumed.group(1) == checkpoints[-1]
    # Counters continue from the checkpoint, not from 0.
    resumed_frames = ast.literal_eval(resumed.group(2))['env_frames']
    assert resumed_frames >= _frames(served), job.describe()
    print(f'run {restart}: {resumed.group(0)}')
    resumed_at = resumed.end()
  assert 'requeueing job' in job.output, job.describe()
  job.wait_for(r'reached target 0\.9', timeout_s=400, since=resumed_at)
  assert job.wait_state({'COMPLETED'}, timeout_s=120) == 'COMPLETED'
  assert job.cluster.job(job.id)['Restarts'] == '2'


@needs_slurm
@pytest.mark.timeout(900)
def test_catch_from_the_images_under_podman(cluster, podman, seed_images, tmp_path):
  # --runtime=podman: each task runs seed-job in the learner or actor image (built
  # from docker/ once a session) on the host's network, the run directory mounted.
  job = Job(cluster, str(tmp_path / 'run'),
            CATCH + ['--runtime=podman', f'--learner_image={seed_images["learner"].tag}',
                     f'--actor_image={seed_images["actor"].tag}'],
            env={**tls_on_one_node(cluster), **{name: podman.env[name] for name in
                                          ('CONTAINERS_CONF', 'CONTAINERS_STORAGE_CONF')}})
  job.wait_for(r'reached target 0\.9', timeout_s=500)
  reached = time.time()
  assert job.wait_state({'COMPLETED'}, timeout_s=120) == 'COMPLETED'
  assert '/opt/seed-venv/bin/python' in job.learner_log, job.describe()  # the image's
  assert os.path.exists(tmp_path / 'run' / 'ckpt' / 'checkpoint'), job.describe()
  for actor_id in (0, 1):
    assert '--tls_ca_file=' in job.text(f'actor_{actor_id}.log'), job.describe()
  print(f'Slurm job {job.id} from the images: Catch from job start to the target in '
        f'{reached - job.started_at(0):.0f} s')


@needs_slurm
@pytest.mark.timeout(480)
def test_the_learner_alone_gets_the_gpu_and_its_own_cpus(tmp_path):
  # A node with two GPUs (device nodes no driver serves; Slurm allocates them as real
  # ones). Without --gres=none on the actors' step, srun gave it the job's GPU and the
  # learner's step waited behind actors that wait for the learner: no job ever ran.
  with slurm_cluster.SlurmCluster(cpus=4, gpus=2) as gpu_cluster:
    job = Job(gpu_cluster, str(tmp_path / 'run'),
              CATCH + ['--learner_gpus=1', '--learner_cpus=2', '--actor_cpus=1'])
    job.wait_for(r'reached target 0\.9', timeout_s=400)
    assert job.wait_state({'COMPLETED'}, timeout_s=120) == 'COMPLETED'
    allocated = gpu_cluster.job(job.id)
    # One task holding the learner's 2 CPUs and each actor's 1; one GPU for the job.
    assert allocated['NumCPUs'] == '4' and 'gres:gpu:1' in allocated.get('TresPerNode', ''), \
        job.describe()
    assert re.search(r'task\.sh: learner on \S+, GPUs: 0$', job.learner_log, re.M), job.describe()
    assert '(2 CPUs, 1 GPUs), 2 actors (1 CPUs each)' in job.output, job.describe()
    for actor_id in (0, 1):
      assert 'GPUs: none' in job.text(f'actor_{actor_id}.log'), job.describe()


@needs_slurm
@pytest.mark.timeout(300)
def test_a_heterogeneous_job_asks_for_a_learner_and_an_actor_component(tmp_path):
  # All a one-node cluster allows: Slurm places a heterogeneous job's components on
  # distinct nodes, so here the job is accepted and waits (Resources); its components
  # carry the learner's CPUs and GPU and the actors' CPUs.
  with slurm_cluster.SlurmCluster(cpus=8, real_memory_mb=8000, gpus=1) as gpu_cluster:
    job = Job(gpu_cluster, str(tmp_path / 'run'),
              CATCH + ['--het', '--learner_gpus=1', '--learner_cpus=3', '--actor_cpus=2',
                       '--learner_sbatch=--mem-per-cpu=700'])
    shown = gpu_cluster.run('scontrol', '--oneliner', 'show', 'job', job.id).stdout
    learner, actors = [dict(word.partition('=')[::2] for word in line.split())
                       for line in shown.splitlines()]
    assert (learner['HetJobOffset'], actors['HetJobOffset']) == ('0', '1'), (learner, actors)
    assert (learner['NumTasks'], learner['CPUs/Task'], learner['TresPerNode']) == (
        '1', '3', 'gres:gpu:1'), learner
    # --learner_sbatch reaches the learner's component only (DefMemPerCPU=1000 for the rest).
    assert (learner['MinMemoryCPU'], actors['MinMemoryCPU']) == ('700M', '1000M'), actors
    assert (actors['NumTasks'], actors['CPUs/Task']) == ('2', '2'), actors
    assert 'TresPerNode' not in actors or 'gpu' not in actors['TresPerNode'], actors
    assert job.wait_state({'PENDING'}, timeout_s=10) == 'PENDING'


@pytest.fixture
def two_nodes():
  """A Slurm cluster of two nodes, each a network namespace (198.18.0.36/30) with its
  own slurmd; skips where namespaces cannot be made."""
  try:
    with netns_pair(subnet=9) as hosts:
      with slurm_cluster.SlurmCluster(cpus=2, hosts=hosts) as cluster:
        yield cluster
  except NetnsUnavailable as e:
    pytest.skip(f'no network namespaces here: {e}')


def _assert_across_nodes(job: Job, actor_nodes: List[str]) -> None:
  """The learner on the first node, listening with the job's TLS; actor i on
  `actor_nodes[i]`, dialing the learner's node by name."""
  learner_node = next(iter(job.cluster.nodes))
  assert f'learner on {learner_node} at {learner_node}:' in job.output, job.describe()
  assert f'task.sh: learner on {learner_node}, GPUs: none' in job.learner_log, job.describe()
  for actor_id, node in enumerate(actor_nodes):
    actor_log = job.text(f'actor_{actor_id}.log')
    assert f'task.sh: actor on {node}, GPUs: none' in actor_log, actor_log
    assert f'--server_address={learner_node}:' in actor_log, actor_log
    assert '--tls_ca_file=' in actor_log and 'connected to learner' in actor_log, actor_log


@needs_slurm
@pytest.mark.timeout(600)
def test_catch_across_two_nodes_over_the_jobs_tls(two_nodes, tmp_path):
  learner_node, other_node = two_nodes.nodes
  job = Job(two_nodes, str(tmp_path / 'run'), CATCH + ['--nodes=2'],
            # The learner listens on its node's veth address, not on every interface.
            env={'SEED_LISTEN_HOST': two_nodes.nodes[learner_node]})
  job.wait_for(r'reached target 0\.9', timeout_s=450)
  assert job.wait_state({'COMPLETED'}, timeout_s=120) == 'COMPLETED'
  _assert_across_nodes(job, [learner_node, other_node])  # actors cyclic over both


@needs_slurm
@pytest.mark.timeout(600)
def test_a_heterogeneous_job_stops_both_components_and_resumes(two_nodes, tmp_path):
  # The time limit's signal: the learner (component 0) checkpoints, the actors' step
  # (listed under component 1's job id) is stopped, the job requeues and resumes. Slurm
  # 22.05 (Debian 12's) leaves a requeued heterogeneous job PENDING (Reason None, both
  # nodes idle) until its start time is set again: the operator's command below
  # (slurm/README.md) is what starts it.
  learner_node, other_node = two_nodes.nodes
  job = Job(two_nodes, str(tmp_path / 'run'),
            CATCH + ['--het', '--learner_cpus=2', '--actor_cpus=1'],
            env={'SEED_LISTEN_HOST': two_nodes.nodes[learner_node]})
  served = job.wait_for_frames(more_than=0, since=0, timeout_s=240)
  two_nodes.run('scancel', '--batch', '--signal=USR1', job.id)
  written = job.wait_for(r'received SIGTERM: checkpointing and stopping(?:.|\n)*?'
                         r'checkpoint written: (\S+)', timeout_s=60, since=served.end())
  _requeued(two_nodes, job, 1, set_start_time=True)
  resumed = job.wait_for(r'resumed from (\S+): ', timeout_s=120, since=written.end())
  assert resumed.group(1) == written.group(1)
  assert 'requeueing job' in job.output and 'before the learner' not in job.output, \
      job.describe()
  job.wait_for(r'reached target 0\.9', timeout_s=400, since=resumed.end())
  assert job.wait_state({'COMPLETED'}, timeout_s=120) == 'COMPLETED'
  # The learner's component on one node, the actors' on the other.
  allocated = two_nodes.run('scontrol', '--oneliner', 'show', 'job', job.id).stdout
  assert [dict(w.partition('=')[::2] for w in line.split())['NodeList']
          for line in allocated.splitlines()] == [learner_node, other_node], allocated
  _assert_across_nodes(job, [other_node, other_node])


def _requeued(cluster, job: Job, restart: int, set_start_time: bool = False) -> None:
  """Waits until the job has been requeued and runs again (Slurm holds a requeued job
  back for cred_expire seconds: 5 on the test cluster, 120 by default). set_start_time:
  once that hold is over, set the job's start time to now, as a requeued heterogeneous
  job needs on Slurm 22.05 to start again."""
  deadline = time.monotonic() + 90
  while cluster.job(job.id).get('Restarts') != str(restart):
    assert time.monotonic() < deadline, f'not requeued\n{job.describe()}'
    time.sleep(0.5)
  if set_start_time:
    time.sleep(cluster.cred_expire_s + 1)
    cluster.run('scontrol', 'update', f'JobId={job.id}', 'StartTime=now')
  job.wait_state({'RUNNING'}, timeout_s=90)


# --- what submit.sh refuses, with nothing submitted -------------------------------

@pytest.fixture
def stand_in_sbatch(tmp_path):
  """A PATH whose sbatch only records that it was called."""
  bin_dir = tmp_path / 'bin'
  bin_dir.mkdir()
  called = tmp_path / 'sbatch-called'
  (bin_dir / 'sbatch').write_text(f'#!/bin/sh\necho "$@" > {called}\necho 12345\n')
  (bin_dir / 'sbatch').chmod(0o755)
  env = dict(os.environ, PATH=f'{bin_dir}:{os.environ["PATH"]}')
  return env, called


@pytest.mark.parametrize('arguments, message', [
    (['pong', 'vtrace', '2', '4'], "unknown env 'pong'; valid envs: atari classic dmc dmlab football mujoco toy"),
    (['toy', 'impala', '2', '4'], "unknown agent 'impala' for env 'toy'; valid agents: acer acer_continuous ddpg ppo"),
    (['toy', 'vtrace', '0', '4'], "NUM_ACTORS must be a positive integer, got '0'"),
    (['toy', 'vtrace', '2', 'four'], "ENVS_PER_ACTOR must be a positive integer, got 'four'"),
    (['toy', 'vtrace', '2', '4', '--nodes=0'], "--nodes must be a positive integer, got '0'"),
    (['toy', 'vtrace', '2', '4', '--nodes', '4'],
     '--nodes=4 is more than the 3 tasks (learner + 2 actors) to place'),
    (['toy', 'vtrace', '2', '4', '--cpus_per_task=x'],
     "--cpus_per_task must be a positive integer, got 'x'"),
    (['toy', 'vtrace', '2', '4', '--port=70000'], "--port must be 1-65535, got '70000'"),
    (['toy', 'vtrace', '2', '4', '--runtime=docker'],
     "unknown --runtime 'docker'; accepted: venv, podman, apptainer"),
    (['toy', 'vtrace', '2', '4', '--runtime=podman'],
     '--runtime=podman needs --learner_image and --actor_image'),
    (['toy', 'vtrace', '2', '4', '--target_retrun=0.9'], 'unknown flag --target_retrun'),
    (['toy', 'vtrace', '2', '4', '--logdir=/tmp/x'],
     '--logdir is not for slurm/submit.sh: the run directory is --run_dir'),
    (['toy', 'vtrace', '2', '4', '--tls_cert_file=a.crt'], 'seed-job makes the job'),
    (['toy', 'vtrace', '2', '4', '--target_return'], '--target_return needs a value'),
    (['toy', 'vtrace', '2'], 'usage: slurm/submit.sh ENV AGENT NUM_ACTORS ENVS_PER_ACTOR'),
    (['toy', 'vtrace', '2', '4', '--learner_cpus=0'],
     "--learner_cpus must be a positive integer, got '0'"),
    (['toy', 'vtrace', '2', '4', '--actor_cpus=-1'],
     "--actor_cpus must be a positive integer, got '-1'"),
    (['toy', 'vtrace', '2', '4', '--learner_gpus=one'],
     "--learner_gpus must be a whole number, got 'one'"),
    (['toy', 'vtrace', '2', '4', '--nodes=2', '--learner_gpus=1'],
     '--nodes=2 with --learner_cpus/--actor_cpus that differ or --learner_gpus needs --het'),
    (['toy', 'vtrace', '2', '4', '--nodes=2', '--learner_cpus=4'], 'needs --het'),
    (['atari', 'r2d2', '2', '4', '--learner_gpus=2'],
     '--learner_gpus=2: the learner uses more than one GPU only when told, with '
     '--learner_devices=GPU:0,GPU:1'),
    (['atari', 'r2d2', '2', '4', '--learner_gpus=2', '--learner_devices=GPU:1,GPU:2'],
     '--learner_devices=GPU:1,GPU:2 names GPU:2; the learner has 2 GPU(s) (--learner_gpus=2), '
     'numbered from GPU:0'),
    (['toy', 'vtrace', '2', '4', '--learner_sbatch=--partition=gpu'],
     '--learner_sbatch is for --het jobs'),
    (['toy', 'vtrace', '2', '4', '--het', '--nodes=3'],
     "--nodes=3 is more than the 2 actors to place (with --het, --nodes counts the actors' nodes)"),
])
def test_submit_refuses_bad_input_and_submits_nothing(stand_in_sbatch, arguments, message):
  env, called = stand_in_sbatch
  done = subprocess.run([SUBMIT, *arguments], cwd=REPO, env=env, capture_output=True, text=True,
                        timeout=300)
  assert done.returncode == 2, done.stdout + done.stderr
  assert message in done.stderr
  assert not called.exists()


def test_dry_run_prints_the_job_and_submits_nothing(stand_in_sbatch, tmp_path):
  env, called = stand_in_sbatch
  done = subprocess.run(
      [SUBMIT, 'toy', 'vtrace', '3', '4', '--nodes', '2', f'--run_dir={tmp_path}/run',
       '--env=Catch', '--gin_bindings=a.b=1', '--gin_bindings=c.d=2', '--notrain',
       '--time=1:00:00', '--sbatch=--partition=cpu', '--dry_run'],
      cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
  assert done.returncode == 0, done.stderr
  assert not called.exists()
  lines = done.stdout.splitlines()
  assert lines[:-1] == [
      'SEED_AGENT=vtrace', 'SEED_ENV=Catch', "SEED_GIN_BINDINGS=$'a.b=1\\nc.d=2'",
      'SEED_GIN_FILE=gin/toy/vtrace.gin', 'SEED_NUM_ENVS=4', f'SEED_RUN_DIR={tmp_path}/run',
      'SEED_TRAIN=false']
  assert lines[-1].split() == [
      'sbatch', '--parsable', '--export=ALL', '--job-name=seed-toy-vtrace',
      f'--output={tmp_path}/run/logs/slurm-%j.out', '--open-mode=append', '--requeue',
      '--signal=B:USR1@300', '--time=1:00:00', '--nodes=2', '--ntasks=4', '--cpus-per-task=1',
      '--partition=cpu', f'{REPO}/slurm/train.sbatch', f'--repo={REPO}', '--num_actors=3',
      '--runtime=venv', '--learner_cpus=1', '--actor_cpus=1', '--learner_gpus=0',
      f'--revision={_head()}']  # the job says so if a restart finds the checkout moved on


def _head():
  return subprocess.run(['git', 'rev-parse', 'HEAD'], cwd=REPO, capture_output=True,
                        text=True, check=True).stdout.strip()


@pytest.mark.parametrize('options, allocation', [
    # One node, the two apart: one task holds every CPU; each step takes its own.
    (['--learner_cpus=8', '--actor_cpus=2', '--learner_gpus=1'],
     ['--nodes=1', '--ntasks=1', '--cpus-per-task=14', '--gres=gpu:1', '--partition=cpu']),
    (['--het', '--nodes=2', '--learner_cpus=8', '--actor_cpus=2', '--learner_gpus=1',
      '--learner_sbatch=--partition=gpu'],
     ['--nodes=1', '--ntasks=1', '--cpus-per-task=8', '--gres=gpu:1', '--partition=cpu',
      '--partition=gpu', ':', '--nodes=2', '--ntasks=3', '--cpus-per-task=2',
      '--partition=cpu']),
])
def test_dry_run_sizes_the_learner_and_the_actors_apart(stand_in_sbatch, tmp_path, options,
                                                        allocation):
  env, called = stand_in_sbatch
  done = subprocess.run(
      [SUBMIT, 'atari', 'vtrace', '3', '4', f'--run_dir={tmp_path}/run',
       '--sbatch=--partition=cpu', *options, '--dry_run'],
      cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
  assert done.returncode == 0, done.stderr
  assert not called.exists()
  words = done.stdout.splitlines()[-1].split()
  script = words.index(f'{REPO}/slurm/train.sbatch')
  assert words[words.index('--signal=B:USR1@300') + 1:script] == allocation
  learner_cpus = options[[o.split('=')[0] for o in options].index('--learner_cpus')]
  assert learner_cpus in words[script:] and '--learner_gpus=1' in words[script:]


def test_a_learner_on_two_gpus_is_told_to_use_both(stand_in_sbatch, tmp_path):
  env, called = stand_in_sbatch
  done = subprocess.run(
      [SUBMIT, 'atari', 'r2d2', '3', '4', f'--run_dir={tmp_path}/run', '--learner_gpus=2',
       '--learner_devices=GPU:0,GPU:1', '--inference_devices=GPU:0', '--dry_run'],
      cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
  assert done.returncode == 0, done.stderr
  assert not called.exists()
  lines = done.stdout.splitlines()
  assert 'SEED_LEARNER_DEVICES=GPU:0\\,GPU:1' in lines and 'SEED_INFERENCE_DEVICES=GPU:0' in lines
  assert '--gres=gpu:2' in lines[-1].split()


@pytest.mark.parametrize('runtime, role, step_gpus, expected', [
    ('podman', 'learner', '1,3', ['--device=nvidia.com/gpu=1', '--device=nvidia.com/gpu=3']),
    ('podman', 'actor', '', []),
    ('apptainer', 'learner', '0', ['--nv']),
    ('apptainer', 'actor', '', []),
])
def test_a_container_task_gets_its_steps_gpus(tmp_path, runtime, role, step_gpus, expected):
  # A stand-in podman/apptainer records the command task.sh hands it.
  bin_dir = tmp_path / 'bin'
  bin_dir.mkdir()
  (bin_dir / runtime).write_text('#!/bin/sh\nfor a in "$@"; do echo "$a"; done\n')
  (bin_dir / runtime).chmod(0o755)
  env = dict(os.environ, PATH=f'{bin_dir}:{os.environ["PATH"]}', SEED_RUN_DIR=str(tmp_path),
             SLURM_JOB_ID='7', SLURM_PROCID='0', SLURM_STEP_GPUS=step_gpus)
  done = subprocess.run(
      [os.path.join(REPO, 'slurm', 'task.sh'), f'--runtime={runtime}', f'--role={role}',
       '--learner_address=node:1', '--learner_image=l', '--actor_image=a',
       f'--learner_gpus={2 if role == "learner" else 0}'],
      cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
  assert done.returncode == 0, done.stderr
  arguments = done.stdout.splitlines()
  assert [a for a in arguments if a.startswith('--device') or a == '--nv'] == expected
  assert f'task.sh: {role} on ' in done.stderr and f'GPUs: {step_gpus or "none"}' in done.stderr


def test_a_learner_step_without_its_gpus_stops_with_the_reason(tmp_path):
  env = dict(os.environ, SEED_RUN_DIR=str(tmp_path), SLURM_JOB_ID='7', SLURM_PROCID='0')
  env.pop('SLURM_STEP_GPUS', None)
  env.pop('CUDA_VISIBLE_DEVICES', None)
  done = subprocess.run(
      [os.path.join(REPO, 'slurm', 'task.sh'), '--runtime=venv', '--role=learner',
       '--learner_address=node:1', '--learner_gpus=1'],
      cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
  assert done.returncode == 1 and "the learner's step was given no GPU" in done.stderr
