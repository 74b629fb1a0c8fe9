"""seed-job: the one entry point of every replica of a cluster job (Vertex AI, Slurm, ...).

It works out whether this process is the learner or actor N and where the learner
is, sets up TLS and the token between hosts, then becomes (exec) the learner or
the actor, so signals reach it directly:

  CLUSTER_SPEC=... seed-job                  # Vertex AI: pool 0 learner, pool 1 actors
  TF_CONFIG=... seed-job                     # chief/master learner, worker actors
  seed-job --role=learner --learner_address=node1:8686 --run_dir=/shared/runs/x
  seed-job --role=actor --actor_id=3 --learner_address=node1:8686 --run_dir=/shared/runs/x

Everything else the learner and actors take comes from SEED_<FLAG> variables
(SEED_GIN_FILE, SEED_AGENT, SEED_NUM_ENVS, ...), which this process passes on.
Arguments --NAME=VALUE declared by --sweep_binding=NAME=Configurable.parameter
become gin bindings: that is how a Vertex AI tuning trial's parameters arrive.
No TensorFlow here: actor images run this.

--print_command prints what it would run (role, address, the commands) and exits.
"""
import dataclasses
import json
import logging
import os
import re
import signal
import subprocess
import sys
import time
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from absl import flags

from seed import settings
from seed.transport import security
from seed.process import exit_codes, flag_env, local_processes
from seed.cluster import roles, run_paths, tls_bootstrap

FLAGS = flags.FLAGS
# Each flag is a setting of seed.settings.JOB (name, default, help, check).
flag_env.define(settings.JOB, __name__)

_NAME = re.compile(r'^[A-Za-z_][A-Za-z0-9_]*$')


def derive_role(role_flag: str, learner_address: Optional[str], actor_id: Optional[int],
                environ: Mapping[str, str]) -> roles.Role:
  if role_flag != 'auto':
    return roles.from_flags(role_flag, learner_address, actor_id)
  if environ.get('CLUSTER_SPEC'):
    return roles.from_cluster_spec(environ['CLUSTER_SPEC'])
  if environ.get('TF_CONFIG'):
    return roles.from_tf_config(environ['TF_CONFIG'])
  raise ValueError('--role=auto but neither CLUSTER_SPEC nor TF_CONFIG is set: pass '
                   '--role=learner or --role=actor with --learner_address (and --actor_id)')


def sweep_bindings(declared: Sequence[str], arguments: Sequence[str]) -> List[str]:
  """Gin bindings from a trial's --NAME=VALUE arguments, by the declared NAME=binding map."""
  targets: Dict[str, str] = {}
  for item in declared:
    name, _, binding = item.partition('=')
    if not _NAME.match(name) or '.' not in binding:
      raise ValueError(f'--sweep_binding={item!r}; expected NAME=Configurable.parameter, '
                       'e.g. learning_rate=VTraceConfig.learning_rate')
    targets[name] = binding
  bindings = []
  for name, value in _pairs(arguments):
    if name not in targets:
      accepted = ', '.join(f'--{n}' for n in targets) or 'none (no --sweep_binding given)'
      raise ValueError(f'unknown argument --{name}={value}; sweep parameters accepted: '
                       f'{accepted}')
    bindings.append(f'{targets[name]}={_gin_literal(value)}')
  return bindings


def _pairs(arguments: Sequence[str]) -> List[Tuple[str, str]]:
  """--NAME=VALUE and --NAME VALUE, as (NAME, VALUE)."""
  pairs, items = [], list(arguments)
  while items:
    item = items.pop(0)
    if not item.startswith('--'):
      raise ValueError(f'unexpected argument {item!r}; expected --NAME=VALUE')
    name, equals, value = item[2:].partition('=')
    if not equals:
      if not items:
        raise ValueError(f'argument --{name} has no value; expected --{name}=VALUE')
      value = items.pop(0)
    pairs.append((name, value))
  return pairs


def _gin_literal(value: str) -> str:
  """A number or boolean as it is; anything else (a categorical value) quoted."""
  if value in ('True', 'False'):
    return value
  try:
    float(value)
    return value
  except ValueError:
    return repr(value)


def wants_tls(tls: str, role: roles.Role) -> bool:
  return tls == 'always' or (tls == 'auto' and not security.is_loopback(role.learner_address))


def build_command(role: roles.Role, environ: Mapping[str, str], *, run_dir: Optional[str],
                  listen_host: Optional[str] = None,
                  summary_dir: Optional[str], tls: str, job: Optional[str],
                  bootstrap_timeout_s: float, extra_bindings: Sequence[str],
                  make_files: bool = True) -> List[str]:
  """The learner's or actor's command line. With TLS, makes (learner) or waits for
  (actor) this job's files unless `make_files` is False (--print_command)."""
  use_tls = wants_tls(tls, role)
  args: List[str] = []
  if role.kind == roles.LEARNER:
    if not run_dir:
      raise ValueError('the learner needs a run directory: --run_dir or AIP_CHECKPOINT_DIR')
    if not listen_host:
      # A cluster host name may resolve to a loopback address on the host itself
      # (Debian's /etc/hosts): listening there would shut out the other hosts.
      loopback = security.is_loopback(role.learner_address)
      listen_host = role.learner_host if loopback or not use_tls else '0.0.0.0'
    args += [f'--logdir={run_dir}', f'--server_address={listen_host}:{role.learner_port}']
    if summary_dir:
      args.append(f'--summary_dir={summary_dir}')
  else:
    args += [f'--server_address={role.learner_address}', f'--actor_id={role.actor_id}']
  if use_tls:
    if not run_dir or not job:
      raise ValueError('TLS between hosts needs a run directory shared by all replicas '
                       '(--run_dir) and a job id (--job_id, or CLOUD_ML_JOB_ID / SLURM_JOB_ID) '
                       'to publish the certificate and token in')
    directory = tls_bootstrap.folder(run_dir, job, role.learner_host)
    if role.kind == roles.LEARNER:
      files = (tls_bootstrap.publish(directory, role.learner_host) if make_files else
               tls_bootstrap.learner_files(directory))
      args += [f'--tls_cert_file={files.cert_file}', f'--tls_key_file={files.key_file}',
               f'--auth_token_file={files.token_file}']
    else:
      files = (tls_bootstrap.await_files(directory, bootstrap_timeout_s) if make_files else
               tls_bootstrap.actor_files(directory))
      args += [f'--tls_ca_file={files.ca_file}', f'--auth_token_file={files.token_file}']
  if extra_bindings:
    # A --gin_bindings on the command line replaces SEED_GIN_BINDINGS: keep those first.
    inherited = flag_env.multi_values(environ.get(flag_env.variable_name('gin_bindings'), ''))
    args += [f'--gin_bindings={b}' for b in [*inherited, *extra_bindings]]
  if role.kind == roles.LEARNER:
    return local_processes.learner_command(args)
  return local_processes.actor_command(args)


def main(argv: Sequence[str]) -> None:
  logging.getLogger().setLevel(logging.INFO)
  environ = os.environ
  try:
    settings.check(settings.JOB, FLAGS)
    role = derive_role(FLAGS.role, FLAGS.learner_address, FLAGS.actor_id, environ)
    bindings = sweep_bindings(FLAGS.sweep_binding, argv[1:])
    # A plaintext actor needs no shared folder; the learner and TLS do.
    if role.kind == roles.LEARNER or wants_tls(FLAGS.tls, role):
      run_dir = run_paths.run_dir(FLAGS.run_dir, environ)
    else:
      run_dir = None
    summary_dir = run_paths.summary_dir(FLAGS.summary_dir, environ)
    if run_dir and role.kind == roles.LEARNER and not FLAGS.print_command:
      try:
        os.makedirs(run_dir, exist_ok=True)
      except OSError as e:
        raise ValueError(f'cannot make the run directory {run_dir!r}: {e.strerror}') from None
    # An actor process steps its envs on about one core: a replica with more cores
    # runs several, numbered so that ids stay unique across replicas.
    processes = ([role] if role.kind == roles.LEARNER else
                 [dataclasses.replace(role, actor_id=role.actor_id * FLAGS.actors_per_replica + i)
                  for i in range(FLAGS.actors_per_replica)])
    job = run_paths.job_id(FLAGS.job_id, environ)
    commands = [build_command(process, environ, run_dir=run_dir, listen_host=FLAGS.listen_host,
                              summary_dir=summary_dir, tls=FLAGS.tls, job=job,
                              bootstrap_timeout_s=FLAGS.bootstrap_timeout_s,
                              extra_bindings=bindings, make_files=not FLAGS.print_command)
                for process in processes]
  except (ValueError, TimeoutError, RuntimeError) as e:
    logging.error('seed-job: %s', e)
    sys.exit(2)
  described = {'role': role.kind, 'actor_ids': [p.actor_id for p in processes],
               'learner_address': role.learner_address, 'source': role.source,
               'commands': commands}
  if FLAGS.print_command:
    print(json.dumps(described))
    return
  logging.info('seed-job: %s', json.dumps(described))
  sys.stdout.flush()
  sys.stderr.flush()
  if role.kind == roles.LEARNER:
    os.execv(commands[0][0], commands[0])  # The platform restarts it (Slurm, Vertex, a Job).
  sys.exit(supervise_actors(commands, [p.actor_id for p in processes]))


# Seconds before the n-th start again of an actor that failed; a run of a minute resets it.
RESTART_DELAYS_S = (1.0, 2.0, 5.0, 10.0, 30.0, 60.0)
_HEALTHY_S = 60.0


def supervise_actors(commands: Sequence[Sequence[str]], actor_ids: Sequence[int],
                     poll_s: float = 0.5) -> int:
  """Runs the actor processes side by side and starts one again, after a growing delay,
  when it dies (a crash, the OOM killer): nothing else would, and a Slurm step or a
  Vertex replica with a dead actor goes on with fewer envs. An actor that exits 0 (its
  learner finished the run, or a signal stopped it), 2 (bad settings) or 3 (no learner
  for --learner_lost_limit_s) stays down.
  SIGINT/SIGTERM are passed on and end the restarts. Returns the first failure's exit
  code (0 when all ended well)."""
  children: Dict[int, subprocess.Popen] = {}
  started_at: Dict[int, float] = {}
  due: Dict[int, float] = {}  # index -> when to start it again
  restarts = [0] * len(commands)
  codes: Dict[int, int] = {}
  stopping = []

  def start(i: int) -> None:
    children[i] = subprocess.Popen(list(commands[i]))
    started_at[i] = time.monotonic()

  def forward(signum, frame):
    del frame
    stopping.append(signum)
    for child in children.values():
      if child.poll() is None:
        child.send_signal(signum)

  for signum in (signal.SIGINT, signal.SIGTERM):
    signal.signal(signum, forward)
  for i in range(len(commands)):
    start(i)
  while children or due:
    now = time.monotonic()
    for i, child in list(children.items()):
      code = child.poll()
      if code is None:
        continue
      del children[i]
      code = code if code >= 0 else 128 - code  # killed by signal N: 128 + N, as a shell says
      # An actor that refuses its settings (BAD_SETTINGS) fails the same way each start;
      # one that found no learner for its limit (LEARNER_LOST) would only wait again.
      if stopping or code in (0, exit_codes.BAD_SETTINGS, exit_codes.LEARNER_LOST):
        codes[i] = code
        continue
      if now - started_at[i] > _HEALTHY_S:
        restarts[i] = 0
      delay_s = RESTART_DELAYS_S[min(restarts[i], len(RESTART_DELAYS_S) - 1)]
      restarts[i] += 1
      codes[i] = code
      logging.warning('seed-job: actor %d exited with %d; starting it again in %.0f s '
                      '(restart %d)', actor_ids[i], code, delay_s, restarts[i])
      due[i] = now + delay_s
    for i, when in list(due.items()):
      if stopping:
        del due[i]
      elif now >= when:
        del due[i]
        start(i)
    time.sleep(poll_s)
  return next((codes[i] for i in sorted(codes) if codes[i] != 0), 0)


def _parse_known(argv: List[str]) -> List[str]:
  """Parses seed-job's own flags; the rest (a trial's --NAME=VALUE) goes to main."""
  try:
    return FLAGS(argv, known_only=True)
  except flags.Error as e:
    print(f'seed-job: {e}', file=sys.stderr)
    sys.exit(2)


def run():
  flag_env.run(main, __name__, flags_parser=_parse_known)


if __name__ == '__main__':
  run()
