"""Which process of a cluster job this is: the learner or actor N, and where the learner is.

Vertex AI tells each replica in CLUSTER_SPEC (and, for TensorFlow's sake, in
TF_CONFIG) which worker pool it belongs to and the host names of all pools:

  {"cluster": {"workerpool0": ["cmle-training-workerpool0-ab-0:2222"],
               "workerpool1": ["cmle-training-workerpool1-ab-0:2222", ...]},
   "task": {"type": "workerpool1", "index": 0}, "environment": "cloud"}

Pool 0 (one replica) is the learner; pool 1 replica i is actor i. TF_CONFIG names
the same pools chief (or master, AI Platform's name) and worker. The learner
listens on the port the spec gives its replica, the one Vertex set aside for it.
No TensorFlow here: actor images run this.
"""
import dataclasses
import json
from typing import Dict, List, Optional

from seed.transport import security

LEARNER = 'learner'
ACTOR = 'actor'
ROLES = (LEARNER, ACTOR)

# Task types naming the learner's and the actors' pools, per variable.
_CLUSTER_SPEC_POOLS = {'workerpool0': LEARNER, 'workerpool1': ACTOR}
_TF_CONFIG_POOLS = {'chief': LEARNER, 'master': LEARNER, 'worker': ACTOR}


@dataclasses.dataclass(frozen=True)
class Role:
  """One process's place in the job."""
  kind: str                 # LEARNER or ACTOR
  learner_host: str         # the host actors dial; the learner's certificate names it
  learner_port: int
  actor_id: Optional[int]   # None for the learner
  source: str               # where this came from, for the log line: CLUSTER_SPEC, flags, ...

  @property
  def learner_address(self) -> str:
    host = f'[{self.learner_host}]' if ':' in self.learner_host else self.learner_host
    return f'{host}:{self.learner_port}'


def from_cluster_spec(text: str) -> Role:
  """The role a Vertex AI replica plays, from its CLUSTER_SPEC."""
  return _from_pools(text, 'CLUSTER_SPEC', _CLUSTER_SPEC_POOLS)


def from_tf_config(text: str) -> Role:
  """The role from TF_CONFIG (chief or master: the learner; worker i: actor i)."""
  return _from_pools(text, 'TF_CONFIG', _TF_CONFIG_POOLS)


def from_flags(kind: str, learner_address: Optional[str], actor_id: Optional[int]) -> Role:
  """The role given outright (Slurm, a laptop): --role, --learner_address, --actor_id."""
  if kind not in ROLES:
    raise ValueError(f'--role={kind!r}; expected one of {", ".join(ROLES)} or auto')
  if not learner_address:
    raise ValueError(f'--role={kind} needs --learner_address=HOST:PORT (the learner listens '
                     'on that port; actors dial it)')
  host, port = _split_address(learner_address, '--learner_address')
  if kind == ACTOR and (actor_id is None or actor_id < 0):
    raise ValueError(f'--role=actor needs --actor_id >= 0, unique among the actors; got '
                     f'{actor_id}')
  return Role(kind, host, port, actor_id if kind == ACTOR else None, 'flags')


def _from_pools(text: str, variable: str, pools: Dict[str, str]) -> Role:
  try:
    spec = json.loads(text)
  except ValueError as e:
    raise ValueError(f'{variable} is not JSON ({e}): {_clip(text)}') from None
  if not isinstance(spec, dict):
    raise ValueError(f'{variable} is not a JSON object: {_clip(text)}')
  cluster, task = spec.get('cluster'), spec.get('task')
  if not isinstance(cluster, dict) or not isinstance(task, dict):
    raise ValueError(f'{variable} has no "cluster" and "task" objects: {_clip(text)}')
  learner_pools = [name for name, kind in pools.items() if kind == LEARNER]
  learner_pool = next((name for name in learner_pools if cluster.get(name)), None)
  if learner_pool is None:
    raise ValueError(f'{variable} has no learner pool ({" or ".join(learner_pools)}) in '
                     f'"cluster": {_clip(text)}')
  hosts: List[str] = cluster[learner_pool]
  if len(hosts) != 1:
    raise ValueError(f'{variable}: pool {learner_pool} has {len(hosts)} replicas; the learner '
                     'pool must have exactly 1')
  host, port = _split_address(hosts[0], f'{variable} {learner_pool}[0]')
  task_type, index = task.get('type'), task.get('index', 0)
  if task_type not in pools:
    raise ValueError(f'{variable}: task type {task_type!r} is not one seed runs; expected '
                     f'{" or ".join(pools)} (one learner pool, one actor pool)')
  if not isinstance(index, int) or index < 0 or index >= len(cluster.get(task_type) or []):
    raise ValueError(f'{variable}: task index {index!r} is not a replica of pool {task_type!r}')
  kind = pools[task_type]
  return Role(kind, host, port, index if kind == ACTOR else None, variable)


def _split_address(address: str, what: str):
  host, port = security.split_host_port(str(address))
  if not host or not port.isdigit() or not 0 < int(port) < 65536:
    raise ValueError(f'{what}={address!r} is not host:port (e.g. learner.example.org:8686)')
  return host, int(port)


def _clip(text: str, limit: int = 200) -> str:
  return repr(text if len(text) <= limit else text[:limit] + '...')
