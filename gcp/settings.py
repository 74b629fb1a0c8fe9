"""Learner and actor settings from the command line, checked against this checkout.

Any --FLAG=VALUE that submit.py does not define itself goes to the learner and/or
the actors, whichever defines FLAG (read from their source by repo_source), as
SEED_<FLAG>. A misspelt flag, a flag seed-job sets in the job, or a gin binding
naming a parameter that does not exist stops the submission here, before a job
costs anything, rather than in a replica minutes later.
"""
import re
from typing import Dict, List, Optional, Set, Tuple

import repo_source


class BadInput(ValueError):
  """A setting to change before anything is submitted."""


# Flags the learner or actors define that a submission must not set.
RESERVED = {
    'logdir': 'seed-job sets it: the run directory is BUCKET/runs/RUN_NAME '
              '(--bucket, --run_name)',
    'summary_dir': 'seed-job sets it from the job (AIP_TENSORBOARD_LOG_DIR)',
    'server_address': "seed-job sets it from Vertex's CLUSTER_SPEC",
    'actor_id': "seed-job sets it: replica i runs actors i*N .. i*N+N-1 (--actors_per_replica=N)",
    'tls_cert_file': 'seed-job makes TLS files and a token inside the job; no secret '
                     'goes in a job spec',
    'agent': 'the scenario sets it (--scenario)',
    'gin_file': "the scenario sets it; change the config with --gin_bindings",
    'num_envs': 'use --envs_per_actor',
    'hypertune_metric': 'use --sweep_metric with --sweep_parameter',
    'eval': 'every actor of a Vertex job trains; evaluation actors are not offered here',
}
for _name in ('tls_key_file', 'tls_ca_file', 'auth_token_file'):
  RESERVED[_name] = RESERVED['tls_cert_file']
# seed-job's own flags a user may set, and the pool whose replicas read them.
JOB_FLAGS = {'bootstrap_timeout_s': 'actor'}
# absl's own flags: seed-job parses them first, so a sweep parameter may not use one.
ABSL_FLAGS = ('help', 'helpshort', 'helpfull', 'helpxml', 'flagfile', 'undefok', 'v',
              'verbosity', 'logtostderr', 'alsologtostderr', 'log_dir', 'stderrthreshold',
              'showprefixforinfo', 'logger_levels', 'only_check_args', 'pdb',
              'pdb_post_mortem', 'run_with_pdb', 'run_with_profiling', 'profile_file',
              'use_cprofile_for_profiling')


def pass_through(extras: List[str], known: Optional[repo_source.Flags],
                 own: Set[str]) -> Tuple[Dict[str, object], Dict[str, object]]:
  """--FLAG=VALUE arguments as (learner settings, actor settings), by who defines FLAG.

  `own`: submit.py's flags, left out of the accepted lists an error gives.
  """
  learner, actor = {}, {}
  items = list(extras)
  while items:
    item = items.pop(0)
    if not item.startswith('--') or item == '--':
      raise BadInput(f'unexpected argument {item!r}; flags take the form --FLAG=VALUE')
    name, equals, value = item[2:].partition('=')
    if known is None:  # no source to check against: all to the learner, as given
      learner[name] = value if equals else 'true'
      continue
    job = {k: v for k, v in known.job.items() if k in JOB_FLAGS}
    kinds = {**job, **known.actor, **known.learner}
    if not equals and name not in kinds and kinds.get(name[2:]) in repo_source.BOOL_KINDS:
      name, equals, value = name[2:], '=', 'false'  # --noFLAG
    if name in RESERVED:
      raise BadInput(f'--{name} cannot be set here: {RESERVED[name]}')
    if name not in kinds:
      hidden = set(RESERVED) | own  # set here or by submit.py's own flags
      raise BadInput(f'unknown flag --{name}; accepted: the flags of submit.py (--help), '
                     f'and learner flags ({", ".join(sorted(set(known.learner) - hidden))}) '
                     f'or actor flags ({", ".join(sorted(set(known.actor) - hidden))}) '
                     f'or seed-job\'s {", ".join(sorted(job))}')
    kind = kinds[name]
    if not equals:
      if kind in repo_source.BOOL_KINDS:
        value = 'true'
      elif items and not items[0].startswith('--'):
        value = items.pop(0)
      else:
        raise BadInput(f'--{name} has no value; expected --{name}=VALUE')
    checked = _typed(name, kind, value)
    parsed = (int(checked) if kind in repo_source.INT_KINDS else
              float(checked) if kind in repo_source.FLOAT_KINDS else checked)
    # What the program itself would refuse at start, as the user wrote it.
    problem = known.refusal(name, parsed, value)
    if problem:
      raise BadInput(problem)
    if name in known.learner:
      learner[name] = checked
    if name in known.actor or JOB_FLAGS.get(name) == 'actor':
      actor[name] = checked
  return learner, actor


def _typed(name: str, kind: str, value: str) -> object:
  """The value as given, once it parses as the flag's kind; a bool as True or False."""
  try:
    if kind in repo_source.INT_KINDS:
      int(value)
    elif kind in repo_source.FLOAT_KINDS:
      float(value)
  except ValueError:
    raise BadInput(f'--{name}={value} is not a valid {kind}') from None
  if kind in repo_source.BOOL_KINDS:
    if value.lower() not in ('true', 'false', '1', '0'):
      raise BadInput(f'--{name}={value}; expected true or false')
    return value.lower() in ('true', '1')
  return value


def check_binding(binding: str, where: str, agent_config: str,
                  configurables: Optional[Dict[str, set]], agent_configs=()) -> None:
  """A gin Configurable.parameter must exist, and not belong to another agent.

  `agent_config` is the scenario's agent config class (VTraceConfig); `agent_configs`
  those of every agent.
  """
  match = re.match(r'^\s*(?:[\w.]+/)?([\w.]+)\s*(=|$)', binding)
  if configurables is None or not match or '.' not in match.group(1):
    return  # macros, imports and the like: gin checks them in the job
  configurable, parameter = match.group(1).split('.')[-2:]
  if configurable.endswith('Agent'):
    raise BadInput(f'{where}: agent hyperparameters are bound on the agent\'s config class '
                   f'now: this scenario\'s is {agent_config} (e.g. {agent_config}.{parameter})')
  if configurable not in configurables:
    raise BadInput(f'{where}: no gin configurable {configurable!r}; the scenario\'s agent '
                   f'config is {agent_config}, others: {", ".join(sorted(configurables))}')
  if configurable in agent_configs and configurable != agent_config:
    raise BadInput(f'{where}: {configurable} is another agent\'s; this scenario trains '
                   f'with {agent_config}')
  if parameter not in configurables[configurable]:
    raise BadInput(f'{where}: {configurable} has no parameter {parameter!r}; accepted: '
                   f'{", ".join(sorted(configurables[configurable] - {"env_spec"}))}')
