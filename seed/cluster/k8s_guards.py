"""What seed-k8s-check asks of an overlay beyond the programs' own settings: images the
cluster pulls as built, resources the scheduler can place, a disruption budget that lets
a node drain evict the learner, and NetworkPolicies that keep the learner's gRPC port
to its actors and the actors to themselves (seed/cluster/k8s_check.py calls `check`).

Each problem is reported through the checker as one line naming the object, the value
found and what is accepted.
"""
from typing import Dict, List, Optional

REQUIRED_RESOURCES = (('requests', 'cpu'), ('requests', 'memory'), ('limits', 'memory'))


def check(c, learner: dict, learner_pod: dict, actors: List[tuple], grpc_port: Optional[int],
          health_port: Optional[int]) -> None:
  """`c` a k8s_check.Checker; `actors` (workload, pod, container) of each actor workload."""
  workloads = [(learner, learner_pod)] + [(obj, pod) for obj, pod, _ in actors]
  for obj, pod in {id(pod): (obj, pod) for obj, pod in workloads}.values():
    for container in pod.get('containers', []) + pod.get('initContainers', []):
      where = f'{obj["kind"]} {obj["metadata"].get("name")} container {container.get("name")}'
      _check_image(c, where, container.get('image', ''))
      _check_resources(c, where, container.get('resources') or {})
  _check_budget(c, learner)
  learner_labels = _pod_labels(learner)
  actor_labels = [_pod_labels(obj) for obj, _, _ in actors]
  _check_learner_policy(c, learner, learner_labels, actor_labels, grpc_port, health_port)
  for (obj, _, _), labels in zip(actors, actor_labels):
    _check_actor_policy(c, obj, labels)


def _check_image(c, where: str, image: str) -> None:
  """A tag or a digest, and not `latest`: an untagged name is :latest of docker.io."""
  name, _, digest = image.partition('@')
  last = name.rsplit('/', 1)[-1]
  tag = last.partition(':')[2]
  if digest:
    return
  if not tag or tag == 'latest':
    shown = f'{image!r} has no tag' if not tag else f'{image!r} is tagged latest'
    repository = name.rpartition(':')[0] if tag else name
    pulled = repository if '/' in repository else f'docker.io/library/{repository}'
    c.error(where, f'image {shown}: the cluster pulls whatever {pulled}:latest holds at '
            'each start, so pods of one run may run different code; expected '
            'REGISTRY/NAME:TAG with the tag you built and pushed (overlay images: newName, '
            'newTag), or @sha256:DIGEST')


def _check_resources(c, where: str, resources: Dict[str, Dict[str, object]]) -> None:
  missing = [f'{kind}.{resource}' for kind, resource in REQUIRED_RESOURCES
             if resource not in (resources.get(kind) or {})]
  if missing:
    c.error(where, f'has no resources.{", resources.".join(missing)}; expected requests of cpu '
            'and memory and a memory limit (without them the scheduler places the pod blind '
            'and one process can take its node\'s memory)')


def _matches(selector: dict, labels: Dict[str, str]) -> bool:
  """Whether a label selector (matchLabels; an empty one selects every pod) selects `labels`."""
  return all(labels.get(k) == v for k, v in (selector.get('matchLabels') or {}).items())


def _pod_labels(workload: dict) -> Dict[str, str]:
  return workload.get('spec', {}).get('template', {}).get('metadata', {}).get('labels', {})


def _check_budget(c, learner: dict) -> None:
  """A PodDisruptionBudget of the learner must allow its eviction: the learner checkpoints
  on SIGTERM and its Job starts it on another node; a budget that forbids it holds every
  drain and cluster upgrade until someone deletes the pod."""
  labels = _pod_labels(learner)
  for budget in c.of_kind('PodDisruptionBudget'):
    spec = budget.get('spec', {})
    if not _matches(spec.get('selector') or {}, labels):
      continue
    where = f'PodDisruptionBudget {budget["metadata"]["name"]}'
    if 'maxUnavailable' in spec:
      c.error(where, f'maxUnavailable is {spec["maxUnavailable"]!r}; a Job has no scale '
              'subresource, so Kubernetes cannot work out a maxUnavailable budget for its '
              'pod and allows no eviction: node drains wait for someone to delete the '
              'learner; expected minAvailable: 0 (a drain evicts it; it checkpoints)')
    elif spec.get('minAvailable', 0) != 0:
      c.error(where, f'minAvailable is {spec["minAvailable"]!r}; with one learner pod that '
              'allows no eviction: node drains wait for someone to delete it; expected '
              'minAvailable: 0 (a drain evicts it; it checkpoints on SIGTERM and its Job '
              'starts it elsewhere)')


def _policies_for(c, labels: Dict[str, str]) -> List[dict]:
  return [p for p in c.of_kind('NetworkPolicy')
          if 'Ingress' in (p['spec'].get('policyTypes') or ['Ingress'])
          and _matches(p['spec'].get('podSelector') or {}, labels)]


def _check_learner_policy(c, learner: dict, labels: Dict[str, str],
                          actor_labels: List[Dict[str, str]], grpc_port: Optional[int],
                          health_port: Optional[int]) -> None:
  where = f'{learner["kind"]} {learner["metadata"]["name"]}'
  policies = _policies_for(c, labels)
  if not policies:
    c.error(where, 'no NetworkPolicy selects the learner pod; expected one letting only the '
            f'actors reach its gRPC port {grpc_port} and anyone its health port '
            f'{health_port} (k8s/base/guards.yaml)')
    return
  for policy in policies:
    name = f'NetworkPolicy {policy["metadata"]["name"]}'
    for rule in policy['spec'].get('ingress') or []:
      ports = [p.get('port') for p in rule.get('ports') or []]
      reaches_grpc = not ports or grpc_port in ports
      if not reaches_grpc:
        continue
      sources = rule.get('from')
      if not _only_actors(sources, actor_labels):
        c.error(name, f'lets {_describe(sources)} reach the learner\'s gRPC port {grpc_port}; '
                'expected only the actors\' pods (podSelector with their labels)')


def _only_actors(sources, actor_labels: List[Dict[str, str]]) -> bool:
  """Whether every source of a rule is a podSelector (this namespace) naming actor pods."""
  if not sources:
    return False  # no `from`: anyone
  for source in sources:
    selector = source.get('podSelector')
    if selector is None or 'namespaceSelector' in source or 'ipBlock' in source:
      return False
    if not selector.get('matchLabels') or not any(_matches(selector, a) for a in actor_labels):
      return False
  return True


def _describe(sources) -> str:
  if not sources:
    return 'anyone'
  return ', '.join(sorted({next(iter(s), '?') for s in sources}))


def _check_actor_policy(c, actors: dict, labels: Dict[str, str]) -> None:
  policies = _policies_for(c, labels)
  where = f'{actors["kind"]} {actors["metadata"]["name"]}'
  if not policies:
    c.error(where, 'no NetworkPolicy selects the actor pods; expected one with policyTypes '
            '[Ingress] and no rule: actors serve nothing (k8s/base/guards.yaml)')
    return
  for policy in policies:
    if policy['spec'].get('ingress'):
      c.error(f'NetworkPolicy {policy["metadata"]["name"]}', 'lets connections reach the '
              'actors; expected no ingress rule: actors serve nothing')
