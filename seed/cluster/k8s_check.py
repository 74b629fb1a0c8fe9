"""Checks a seed deployment before `kubectl apply -k`: the rendered objects agree with
each other and with the flags of seed-learner and seed-actor (their SEED_* variables).

  seed-k8s-check k8s/overlays/cpu [k8s/overlays/gpu ...]
  kubectl kustomize k8s/overlays/cpu | seed-k8s-check -
  seed-k8s-check --preview k8s/overlays/cpu    (the YAML, before any TLS file exists)

A folder is rendered with `kubectl kustomize`; a file or `-` (stdin) is taken as
rendered YAML. No cluster is needed. Exit 0 when every check passes, 1 with one line per
problem (the object, the value found, what is accepted), 2 when it cannot render.
(`python -m seed.cluster.k8s_check` is the same.) The standard library, seed's own
address rules and settings (seed.transport.security, seed.settings) and kubectl:
`kubectl annotate --local -o json` turns the YAML into JSON without a cluster.
"""
import base64
import json
import os
import posixpath
import shutil
import subprocess
import sys
import tempfile
from typing import Dict, Iterator, List, Optional, Tuple

from seed.transport import security  # The programs' own address rules.
from seed import settings as seed_settings  # Every option of each program, declared once.
from seed.cluster import k8s_guards  # Images, resources, the disruption budget, policies.
from seed.process.exit_codes import BAD_SETTINGS

JOB_INDEX = "metadata.annotations['batch.kubernetes.io/job-completion-index']"
GRACE_MARGIN_S = 10  # The kubelet's grace period beyond the learner's own shutdown limit.
MIN_STARTUP_S = 300  # TensorFlow's warm-up plus a checkpoint (and replay) restore.
WORKLOADS = ('Deployment', 'StatefulSet', 'ReplicaSet', 'DaemonSet', 'Job', 'Pod')


class RenderError(Exception):
  """The manifests could not be rendered or read."""


def render(source: str) -> List[dict]:
  """The objects of an overlay folder, a rendered YAML file, or '-' (stdin)."""
  if os.path.isdir(source):
    text = _kubectl(['kustomize', source], None)
  elif source == '-':
    text = sys.stdin.read()
  else:
    with open(source) as f:
      text = f.read()
  if not text.strip():
    return []
  # The annotation is only a no-op edit that makes kubectl print JSON offline.
  out = _kubectl(['annotate', '--local', '-f', '-', '-o', 'json', 'seed-check=1'], text)
  objects, decoder, at = [], json.JSONDecoder(), 0
  while True:
    while at < len(out) and out[at].isspace():
      at += 1
    if at == len(out):
      break
    obj, at = decoder.raw_decode(out, at)
    obj.get('metadata', {}).get('annotations', {}).pop('seed-check', None)
    objects += obj['items'] if obj.get('kind') == 'List' else [obj]
  return objects


def _kubectl(args: List[str], stdin: Optional[str]) -> str:
  try:
    done = subprocess.run(['kubectl', *args], input=stdin, capture_output=True, text=True)
  except FileNotFoundError:
    raise RenderError('kubectl is not installed; it renders the overlays (kubectl >= 1.29)')
  if done.returncode != 0:
    hint = ''
    if 'secrets/' in done.stderr and 'no such file' in done.stderr:
      hint = ('; make the TLS files first: scripts/make_certs.sh k8s/base/secrets seed-learner '
              'seed-learner.<namespace>.svc.cluster.local (k8s/README.md)')
    elif 'replicas.count' in done.stderr:
      hint = ('; the actors are a Job: set their number with spec.completions and '
              'spec.parallelism (k8s/README.md), not replicas')
    raise RenderError(f'kubectl {" ".join(args[:2])} failed: {done.stderr.strip()}{hint}')
  return done.stdout


def _program(container: dict) -> str:
  """seed-learner, seed-actor, tensorboard, ...: the command, else the image's name."""
  command = container.get('command') or []
  if command:
    return posixpath.basename(command[0])
  return container.get('image', '').rsplit('/', 1)[-1].split('@')[0].split(':')[0]


class Checker:
  """Collects problems as 'Kind name: what is wrong; what is accepted'."""

  def __init__(self, objects: List[dict]):
    self.objects = objects
    self.errors: List[str] = []

  def error(self, where: str, message: str) -> None:
    self.errors.append(f'{where}: {message}')

  def find(self, kind: str, name: str) -> Optional[dict]:
    return next((o for o in self.objects
                 if o.get('kind') == kind and o['metadata'].get('name') == name), None)

  def of_kind(self, kind: str) -> List[dict]:
    return [o for o in self.objects if o.get('kind') == kind]

  def workloads(self, program: str) -> Iterator[Tuple[dict, dict, dict]]:
    """(workload, pod spec, container) for each container running `program`."""
    for obj in self.objects:
      if obj.get('kind') not in WORKLOADS:
        continue
      pod = obj['spec'] if obj['kind'] == 'Pod' else (
          obj.get('spec', {}).get('template', {}).get('spec', {}))
      for container in _all_containers(pod):
        if _program(container) == program:
          yield obj, pod, container

  # Settings: what a container's process sees as SEED_<FLAG>.

  def settings(self, container: dict) -> Dict[str, object]:
    """SEED_* values: envFrom, then env, then --flag=value arguments (each wins over
    the one before, as in the process). A fieldRef stays ('fieldRef', path)."""
    values: Dict[str, object] = {}
    for source in container.get('envFrom', []):
      data = self._env_from(source)
      values.update({source.get('prefix', '') + k: v for k, v in data.items()})
    for var in container.get('env', []):
      if 'value' in var:
        values[var['name']] = var['value']
      elif 'fieldRef' in var.get('valueFrom', {}):
        values[var['name']] = ('fieldRef', var['valueFrom']['fieldRef'].get('fieldPath'))
      elif 'configMapKeyRef' in var.get('valueFrom', {}):
        ref = var['valueFrom']['configMapKeyRef']
        values[var['name']] = self._config_map(ref['name']).get(ref['key'])
      elif 'secretKeyRef' in var.get('valueFrom', {}):
        ref = var['valueFrom']['secretKeyRef']
        values[var['name']] = ('secret', ref['name'], ref['key'])
    for arg in (container.get('command') or [])[1:] + (container.get('args') or []):
      if arg.startswith('--') and '=' in arg:
        flag, value = arg[2:].split('=', 1)
        values['SEED_' + flag.upper()] = value
    return values

  def _env_from(self, source: dict) -> Dict[str, object]:
    if 'configMapRef' in source:
      return self._config_map(source['configMapRef']['name'])
    if 'secretRef' in source:
      secret = self.find('Secret', source['secretRef']['name']) or {}
      return {k: ('secret', source['secretRef']['name'], k) for k in secret.get('data', {})}
    return {}

  def _config_map(self, name: str) -> Dict[str, str]:
    config_map = self.find('ConfigMap', name)
    if config_map is None:
      self.error(f'ConfigMap {name}', 'is referenced but not among the rendered objects; '
                 'expected it from the configMapGenerator')
      return {}
    return config_map.get('data', {})


def _all_containers(pod: dict) -> List[dict]:
  """The pod's containers, then its init containers (sidecars among them)."""
  return pod.get('containers', []) + pod.get('initContainers', [])


def _is_sidecar(pod: dict, container: dict) -> bool:
  """An init container that keeps running beside the others (Kubernetes >= 1.29)."""
  return any(c is container for c in pod.get('initContainers', [])) and (
      container.get('restartPolicy') == 'Always')


def _where(obj: dict, container: dict) -> str:
  return f'{obj["kind"]} {obj["metadata"].get("name")} container {container.get("name")}'


def _parse_address(value) -> Optional[Tuple[str, int]]:
  """(host, port) of a host:port the programs accept (security.check_address), else None."""
  if not isinstance(value, str):
    return None
  try:
    security.check_address(value, '--server_address')
  except ValueError:
    return None
  host, port = security.split_host_port(value)
  return (host, int(port)) if 0 < int(port) < 65536 else None


def _replicas(value) -> Optional[int]:
  """The replica count, or None unless it is a plain integer (JSON true is not)."""
  return value if isinstance(value, int) and not isinstance(value, bool) else None


def check(objects: List[dict]) -> List[str]:
  """Every problem found; [] when the deployment hangs together."""
  c = Checker(objects)
  learners = list(c.workloads('seed-learner'))
  actors = list(c.workloads('seed-actor'))
  if len(learners) != 1:
    c.error('learner', f'{len(learners)} containers run seed-learner; expected exactly one '
            '(in a Job)')
  if not actors:
    c.error('actors', 'no container runs seed-actor; expected an Indexed Job of actors')
  if len(learners) != 1:
    return c.errors
  learner, learner_pod, learner_container = learners[0]
  found = _check_learner(c, learner, learner_pod, learner_container)
  service = _check_service(c, learner, learner_pod, found['grpc_port'], found['health_port'])
  for actor, actor_pod, actor_container in actors:
    actor_found = _check_actor(c, actor, actor_pod, actor_container, service,
                               found['grpc_port'], learner_pod)
    _check_secrets_agree(c, found, actor_found)
  _check_tensorboard(c, learner, learner_pod, found['logdir'], service)
  k8s_guards.check(c, learner, learner_pod, actors, found['grpc_port'], found['health_port'])
  for obj, pod in {id(w[1]): (w[0], w[1]) for w in learners + actors}.values():
    _check_hardening(c, obj, pod)
  return c.errors


def _check_hardening(c: Checker, obj: dict, pod: dict) -> None:
  """What Pod Security's "restricted" level asks, a read-only root and no API token."""
  where = f'{obj["kind"]} {obj["metadata"]["name"]}'
  pod_security = pod.get('securityContext', {})
  if pod.get('automountServiceAccountToken') is not False:
    c.error(where, 'mounts a service account token; expected automountServiceAccountToken: '
            'false (neither program talks to the API server)')
  for container in _all_containers(pod):
    inside = _where(obj, container)
    security = container.get('securityContext', {})
    def setting(name, default=None):
      return security.get(name, pod_security.get(name, default))
    if not setting('runAsNonRoot'):
      c.error(inside, 'may run as root; expected runAsNonRoot: true')
    seccomp = setting('seccompProfile', {}).get('type')
    if seccomp not in ('RuntimeDefault', 'Localhost'):
      c.error(inside, f'seccompProfile is {seccomp!r}; expected RuntimeDefault (Pod Security '
              '"restricted" refuses the pod without one)')
    if security.get('allowPrivilegeEscalation') is not False:
      c.error(inside, 'allows privilege escalation; expected allowPrivilegeEscalation: false')
    if 'ALL' not in security.get('capabilities', {}).get('drop', []):
      c.error(inside, 'keeps Linux capabilities; expected capabilities: {drop: [ALL]}')
    if security.get('readOnlyRootFilesystem') is not True:
      c.error(inside, 'can write its image\'s files; expected readOnlyRootFilesystem: true '
              '(and an emptyDir at /tmp)')
    elif _mount_for(pod, container, '/tmp/x') is None:
      c.error(inside, 'has a read-only root and nothing writable at /tmp; expected an '
              'emptyDir mounted there')


def _check_known_settings(c: 'Checker', where: str, container: dict, program: str,
                          schema) -> None:
  """A SEED_* variable in the container's env, or a --flag=value argument, that is no
  setting of its program: absl would ignore the variable, and refuse the flag at start."""
  known = {seed_settings.variable_name(s.name) for s in schema} | {security.TOKEN_VARIABLE}
  named = [var['name'] for var in container.get('env', [])]
  named += ['SEED_' + arg[2:].split('=', 1)[0].upper()
            for arg in (container.get('command') or [])[1:] + (container.get('args') or [])
            if arg.startswith('--') and '=' in arg]
  for name in named:
    if name.startswith(seed_settings.PREFIX) and name not in known:
      c.error(where, f'sets {name}, which is no setting of {program} (python -m '
              f'seed.settings --list lists them; SEED_<NAME> sets --<name>)')
  # A ConfigMap read whole (envFrom) may serve both programs: each key must be a setting
  # of one of them.
  either = known | {seed_settings.variable_name(s.name)
                    for s in seed_settings.LEARNER + seed_settings.ACTOR}
  for source in container.get('envFrom', []):
    if 'configMapRef' not in source:
      continue
    config_map = source['configMapRef']['name']
    for key in c._config_map(config_map):  # pylint: disable=protected-access
      name = source.get('prefix', '') + key
      if name.startswith(seed_settings.PREFIX) and name not in either:
        c.error(where, f'reads {name} from ConfigMap {config_map}, which is no setting of '
                'seed-learner or seed-actor (python -m seed.settings --list lists them)')


def _check_learner(c: Checker, obj: dict, pod: dict, container: dict) -> Dict[str, object]:
  """Checks the learner workload; returns its ports, run directory and secrets."""
  where = f'{obj["kind"]} {obj["metadata"]["name"]}'
  if obj['kind'] != 'Job':
    c.error(where, 'runs the learner; expected a Job of one pod (it completes when the run '
            'reaches its goal; a Deployment restarts a finished learner forever)')
  else:
    for field in ('completions', 'parallelism'):
      value = obj['spec'].get(field, 1)
      if _replicas(value) != 1:
        c.error(where, f'spec.{field} is {value!r}; expected exactly 1 (one learner owns the '
                'model and the run directory; scale the actors instead)')
  where = _where(obj, container)
  if container not in pod.get('containers', []):
    c.error(where, 'runs the learner as an init container; expected it among containers')
  settings = c.settings(container)
  _check_known_settings(c, where, container, 'seed-learner', seed_settings.LEARNER)
  _check_grace_period(c, where, pod, settings.get('SEED_SHUTDOWN_LIMIT_S', '20'))
  stopped = settings.get('SEED_STOPPED_EXIT_CODE', '0')
  if obj['kind'] == 'Job' and not (isinstance(stopped, str) and stopped.isdigit() and
                                   0 < int(stopped) < 256 and int(stopped) != BAD_SETTINGS):
    c.error(where, f'SEED_STOPPED_EXIT_CODE is {stopped!r}; expected a code 1-255 other than '
            f'{BAD_SETTINGS}, e.g. "75": a learner stopped by a preemption before its goal '
            'must fail its pod, or the Job completes with the run unfinished')
  address = settings.get('SEED_SERVER_ADDRESS')
  parsed = _parse_address(address)
  grpc_port = parsed[1] if parsed else None
  if parsed is None:
    c.error(where, f'SEED_SERVER_ADDRESS is {address!r}; expected host:port, e.g. 0.0.0.0:8686')
  elif security.is_loopback(address):
    c.error(where, f'SEED_SERVER_ADDRESS is {address!r}: only this pod can reach it; expected '
            f'0.0.0.0:{parsed[1]} (all interfaces; TLS and the token guard it)')
  health = settings.get('SEED_HEALTH_PORT')
  health_port = int(health) if isinstance(health, str) and health.isdigit() else None
  if health_port is None or not 0 < health_port < 65536 or health_port == grpc_port:
    c.error(where, f'SEED_HEALTH_PORT is {health!r}; expected a port 1-65535 other than the '
            f'gRPC port {grpc_port} (plaintext grpc.health.v1 for the probes)')
    health_port = None
  container_ports = {p.get('containerPort') for p in container.get('ports', [])}
  for name, port in (('SEED_SERVER_ADDRESS', grpc_port), ('SEED_HEALTH_PORT', health_port)):
    if port is not None and port not in container_ports:
      c.error(where, f'{name} port {port} is not among its containerPorts '
              f'{sorted(p for p in container_ports if p)}; expected a containerPort {port}')
  _check_probes(c, where, container, health_port)
  cert = _check_secret_file(c, where, pod, container, settings, 'SEED_TLS_CERT_FILE')
  _check_secret_file(c, where, pod, container, settings, 'SEED_TLS_KEY_FILE')
  token = _check_token(c, where, pod, container, settings)
  logdir = settings.get('SEED_LOGDIR')
  _check_run_directory(c, where, pod, container, logdir)
  return {'grpc_port': grpc_port, 'health_port': health_port, 'logdir': logdir, 'cert': cert,
          'token': token}


def _check_grace_period(c: Checker, where: str, pod: dict, limit) -> None:
  """The kubelet waits long enough for the learner's last checkpoint after SIGTERM."""
  grace = pod.get('terminationGracePeriodSeconds', 30)
  try:
    limit_s = float(limit)
  except (TypeError, ValueError):
    c.error(where, f'SEED_SHUTDOWN_LIMIT_S is {limit!r}; expected seconds > 0')
    return
  if not isinstance(grace, int) or grace < limit_s + GRACE_MARGIN_S:
    c.error(where, f'terminationGracePeriodSeconds is {grace!r} and SEED_SHUTDOWN_LIMIT_S '
            f'{limit_s:g}; expected the grace period at least {GRACE_MARGIN_S} s longer, or '
            'the kubelet kills the learner before its last checkpoint is written')


def _check_probes(c: Checker, where: str, container: dict, health_port: Optional[int]) -> None:
  for kind in ('startupProbe', 'readinessProbe', 'livenessProbe'):
    probe = container.get(kind)
    if probe is None:
      c.error(where, f'has no {kind}; expected grpc: {{port: {health_port}}}')
      continue
    port = probe.get('grpc', {}).get('port')
    if port != health_port:
      found = f'grpc port {port}' if 'grpc' in probe else (
          ', '.join(k for k in probe if k in ('httpGet', 'tcpSocket', 'exec')) or 'nothing')
      c.error(where, f'{kind} checks {found}; expected grpc: {{port: {health_port}}} '
              '(the plaintext health port, SEED_HEALTH_PORT)')
  startup = container.get('startupProbe')
  if startup is not None:
    allowed_s = startup.get('periodSeconds', 10) * startup.get('failureThreshold', 3)
    if allowed_s < MIN_STARTUP_S:
      c.error(where, f'startupProbe allows {allowed_s} s (periodSeconds × failureThreshold); '
              f'expected at least {MIN_STARTUP_S} s for TensorFlow\'s warm-up and a '
              'checkpoint restore')


def _mount_for(pod: dict, container: dict, path: str) -> Optional[Tuple[dict, dict, str]]:
  """(volumeMount, volume, path inside the volume) holding `path`, the deepest mount."""
  best = None
  for mount in container.get('volumeMounts', []):
    root = mount['mountPath'].rstrip('/') or '/'
    if path == root or path.startswith(root.rstrip('/') + '/'):
      if best is None or len(root) > len(best[0]['mountPath']):
        volume = next((v for v in pod.get('volumes', []) if v['name'] == mount['name']), {})
        best = (mount, volume, path[len(root):].lstrip('/'))
  return best


def _check_secret_file(c: Checker, where: str, pod: dict, container: dict, settings: dict,
                       variable: str) -> Optional[Tuple[str, str]]:
  """(secret, key) of the file that `variable` names, after checking it is mounted."""
  path = settings.get(variable)
  if not isinstance(path, str) or not path.startswith('/'):
    c.error(where, f'{variable} is {path!r}; expected an absolute path into the mounted '
            'seed-tls secret (TLS and the token are needed beyond localhost)')
    return None
  found = _mount_for(pod, container, path)
  if found is None or 'secret' not in found[1]:
    mounts = [m['mountPath'] for m in container.get('volumeMounts', [])]
    c.error(where, f'{variable} is {path!r}, but no secret volume is mounted there (mounts: '
            f'{mounts}); expected the seed-tls secret mounted read-only at its folder')
    return None
  mount, volume, inside = found
  secret_name = volume['secret'].get('secretName')
  if not mount.get('readOnly'):
    c.error(where, f'the secret mount {mount["mountPath"]} is writable; expected readOnly: true')
  items = volume['secret'].get('items')
  key = inside if items is None else next(
      (i['key'] for i in items if i.get('path') == inside), None)
  secret = c.find('Secret', secret_name)
  if secret is None:
    c.error(where, f'{variable} points into secret {secret_name!r}, which is not among the '
            'rendered objects; expected the seed-tls secretGenerator')
  elif key is None or key not in {**secret.get('data', {}), **secret.get('stringData', {})}:
    files = sorted(posixpath.join(mount['mountPath'], i['path']) for i in items) if items else [
        posixpath.join(mount['mountPath'], k) for k in sorted(secret.get('data', {}))]
    c.error(where, f'{variable} is {path!r}, but secret {secret_name} puts no file there; '
            f'expected one of {files}')
  return secret_name, key


def _check_token(c: Checker, where: str, pod: dict, container: dict, settings: dict):
  token = settings.get('SEED_AUTH_TOKEN')
  if isinstance(token, tuple) and token[0] == 'secret':
    return token[1], token[2]
  return _check_secret_file(c, where, pod, container, settings, 'SEED_AUTH_TOKEN_FILE')


def _check_run_directory(c: Checker, where: str, pod: dict, container: dict, logdir) -> None:
  if not isinstance(logdir, str) or not logdir.startswith('/'):
    c.error(where, f'SEED_LOGDIR is {logdir!r}; expected an absolute path on the run '
            'directory\'s PersistentVolumeClaim')
    return
  found = _mount_for(pod, container, logdir)
  claim = _claim(found)
  if claim is None:
    mounts = [m['mountPath'] for m in container.get('volumeMounts', [])]
    c.error(where, f'SEED_LOGDIR is {logdir!r}, but no PersistentVolumeClaim is mounted there '
            f'(mounts: {mounts}); expected the run directory on a claim, so checkpoints '
            'survive the pod')
  elif c.find('PersistentVolumeClaim', claim) is None:
    c.error(where, f'mounts claim {claim!r} at {found[0]["mountPath"]}, which is not among the '
            'rendered objects; expected a PersistentVolumeClaim of that name')
  elif found[0].get('readOnly'):
    c.error(where, f'the run directory {found[0]["mountPath"]} is mounted read-only; expected '
            'it writable')


def _check_service(c: Checker, learner: dict, pod: dict, grpc_port, health_port):
  """The Service in front of the learner, after checking it reaches both ports."""
  labels = learner['spec'].get('template', {}).get('metadata', {}).get('labels', {})
  services = [s for s in c.of_kind('Service') if s['spec'].get('selector')
              and s['spec'].get('clusterIP') != 'None'
              and all(labels.get(k) == v for k, v in s['spec']['selector'].items())]
  if len(services) != 1:
    c.error(f'{learner["kind"]} {learner["metadata"]["name"]}', f'{len(services)} Services select the '
            f'learner pod (labels {labels}); expected exactly one, which the actors dial')
    return None
  service = services[0]
  where = f'Service {service["metadata"]["name"]}'
  targets = _service_targets(service, pod)
  for what, port in (('gRPC', grpc_port), ('health', health_port)):
    if port is not None and port not in targets.values():
      c.error(where, f'no port reaches the learner\'s {what} port {port} (ports → container '
              f'ports: {targets}); expected one with targetPort {port} or its name')
  return service


def _service_targets(service: dict, pod: dict) -> Dict[int, Optional[int]]:
  """Service port → the container port number it reaches in `pod`."""
  named = {p['name']: p['containerPort'] for ct in _all_containers(pod)
           for p in ct.get('ports', []) if 'name' in p}
  targets = {}
  for port in service['spec'].get('ports', []):
    target = port.get('targetPort', port['port'])
    targets[port['port']] = named.get(target) if isinstance(target, str) else target
  return targets


def _check_actor(c: Checker, obj: dict, pod: dict, container: dict, service: Optional[dict],
                 grpc_port: Optional[int], learner_pod: dict) -> Dict[str, object]:
  """Checks one actor workload; returns the secrets it reads (ca, token) and its host."""
  where = f'{obj["kind"]} {obj["metadata"]["name"]}'
  spec = obj.get('spec', {})
  count = spec.get('completions', 1)
  if obj['kind'] != 'Job' or spec.get('completionMode') != 'Indexed':
    c.error(where, 'runs seed-actor; expected an Indexed Job (completionMode: Indexed: each '
            'pod\'s index is its actor id, and the Job completes when the run ends)')
  else:
    parallelism = spec.get('parallelism', 1)
    if _replicas(count) is None or count < 1:
      c.error(where, f'spec.completions is {count!r}; expected an integer >= 1 (the number of '
              'actors)')
    elif parallelism != count:
      c.error(where, f'spec.parallelism is {parallelism!r} and spec.completions {count!r}; '
              'expected them equal (every actor runs at once, until the run ends)')
  where = _where(obj, container)
  settings = c.settings(container)
  _check_known_settings(c, where, container, 'seed-actor', seed_settings.ACTOR)
  actor_id = settings.get('SEED_ACTOR_ID')
  if actor_id != ('fieldRef', JOB_INDEX) and not (
      _replicas(count) == 1 and isinstance(actor_id, str) and actor_id.isdigit()):
    c.error(where, f'SEED_ACTOR_ID is {actor_id!r}; expected valueFrom.fieldRef.fieldPath '
            f'{JOB_INDEX} (the pod\'s index in the Job), so each actor has its own id')
  address = settings.get('SEED_SERVER_ADDRESS')
  if service is not None and grpc_port is not None:
    name = service['metadata']['name']
    namespace = service['metadata'].get('namespace')
    hosts = {name} | ({f'{name}.{namespace}', f'{name}.{namespace}.svc',
                       f'{name}.{namespace}.svc.cluster.local'} if namespace else set())
    ports = [p for p, target in _service_targets(service, learner_pod).items()
             if target == grpc_port]
    parsed = _parse_address(address)
    if parsed is None or parsed[0] not in hosts or parsed[1] not in ports:
      expected = ' or '.join(f'{h}:{p}' for h in sorted(hosts) for p in ports) or (
          f'{name}:<a Service port reaching {grpc_port}>')
      c.error(where, f'SEED_SERVER_ADDRESS is {address!r}; expected {expected} (Service '
              f'{name}, the port that reaches the learner\'s gRPC port {grpc_port})')
  heartbeat = settings.get('SEED_HEARTBEAT_FILE')
  probe = container.get('livenessProbe', {})
  if not isinstance(heartbeat, str) or not heartbeat.startswith('/'):
    c.error(where, f'SEED_HEARTBEAT_FILE is {heartbeat!r}; expected a file under a writable '
            'mount (e.g. /tmp/heartbeat) that the actor touches every 10 s')
  elif heartbeat not in ' '.join(probe.get('exec', {}).get('command', [])):
    c.error(where, f'no livenessProbe reads {heartbeat}; expected an exec probe failing when '
            'it is older than a minute (a hung actor is otherwise never restarted)')
  parsed = _parse_address(address)
  return {'ca': _check_secret_file(c, where, pod, container, settings, 'SEED_TLS_CA_FILE'),
          'token': _check_token(c, where, pod, container, settings),
          'host': parsed[0] if parsed else None, 'where': where}


def _check_secrets_agree(c: Checker, learner: Dict[str, object],
                         actor: Dict[str, object]) -> None:
  """Actor and learner read the same token, and the CA from the certificate's secret."""
  where = actor['where']
  if learner['token'] and actor['token'] and learner['token'] != actor['token']:
    c.error(where, f'reads its token from secret {actor["token"][0]} key {actor["token"][1]}, '
            f'the learner from {learner["token"][0]} key {learner["token"][1]}; expected the '
            'same secret and key')
  if learner['cert'] and actor['ca'] and learner['cert'][0] != actor['ca'][0]:
    c.error(where, f'reads its CA from secret {actor["ca"][0]}, the learner its certificate '
            f'from {learner["cert"][0]}; expected the same secret (made together by '
            'scripts/make_certs.sh)')
  names = _certificate_names(c, learner['cert'])
  if names is not None and actor['host'] and actor['host'] not in names:
    c.error(where, f'dials {actor["host"]!r}, but the learner\'s certificate is for {names}; '
            f'expected scripts/make_certs.sh run with {actor["host"]} among its names')


def _certificate_names(c: Checker, cert: Optional[Tuple[str, str]]) -> Optional[List[str]]:
  """The DNS names and IP addresses in the learner's certificate; None if unreadable."""
  secret = c.find('Secret', cert[0]) if cert else None
  data = (secret or {}).get('data', {}).get(cert[1]) if cert else None
  if not data:
    return None
  with tempfile.NamedTemporaryFile('wb', suffix='.crt') as f:
    f.write(base64.b64decode(data))
    f.flush()
    try:
      done = subprocess.run(['openssl', 'x509', '-noout', '-ext', 'subjectAltName', '-in', f.name],
                            capture_output=True, text=True)
    except FileNotFoundError:  # No openssl: this one check is skipped.
      return None
  if done.returncode != 0:
    return None
  entries = [e.strip() for e in done.stdout.split('\n', 1)[-1].split(',')]
  return [e.split(':', 1)[1] for e in entries if e.startswith(('DNS:', 'IP Address:'))]


def _check_tensorboard(c: Checker, learner: dict, pod: dict, logdir, service) -> None:
  """A TensorBoard sidecar reads the learner's run directory and is reachable."""
  learner_mount = _mount_for(pod, _learner_container(pod), logdir) if logdir else None
  claim = _claim(learner_mount)
  for container in _all_containers(pod):
    if _program(container) != 'tensorboard':
      continue
    where = _where(learner, container)
    if learner['kind'] == 'Job' and not _is_sidecar(pod, container):
      c.error(where, 'runs among the containers, so the learner\'s Job never completes; '
              'expected it in initContainers with restartPolicy: Always (a sidecar)')
    options = _options(container.get('command', [])[1:] + container.get('args', []))
    tb_logdir, port = options.get('logdir'), options.get('port', '6006')
    tb_claim = _claim(_mount_for(pod, container, tb_logdir) if tb_logdir else None)
    if tb_claim is None or (claim is not None and tb_claim != claim):
      c.error(where, f'--logdir is {tb_logdir!r}, which is not on the learner\'s run directory '
              f'(claim {claim!r}); expected that claim mounted there')
    ports = {p.get('containerPort') for p in container.get('ports', [])}
    if not port.isdigit() or int(port) not in ports:
      c.error(where, f'--port is {port!r}, not among its containerPorts {sorted(ports)}; '
              'expected a containerPort for it')
    elif service is not None and int(port) in _service_targets(service, pod).values():
      c.error(f'Service {service["metadata"]["name"]}', f'reaches TensorBoard\'s port {port}, '
              'which has no TLS and no login; expected it off the Service (kubectl '
              'port-forward reaches it)')


def _claim(found: Optional[Tuple[dict, dict, str]]) -> Optional[str]:
  """The PersistentVolumeClaim behind a _mount_for result, if any."""
  return found[1].get('persistentVolumeClaim', {}).get('claimName') if found else None


def _learner_container(pod: dict) -> dict:
  return next(ct for ct in _all_containers(pod) if _program(ct) == 'seed-learner')


def _options(args: List[str]) -> Dict[str, str]:
  """--name value and --name=value pairs of a command line."""
  options, i = {}, 0
  while i < len(args):
    if args[i].startswith('--'):
      name, eq, value = args[i][2:].partition('=')
      if not eq and i + 1 < len(args) and not args[i + 1].startswith('--'):
        value, i = args[i + 1], i + 1
      options[name] = value
    i += 1
  return options


SECRET_FILES = ('ca.crt', 'tls.crt', 'tls.key', 'token')


def preview(overlay: str) -> str:
  """The overlay rendered as YAML with placeholder secret files, for a look before
  scripts/make_certs.sh made the real ones (kustomize's secretGenerator needs files)."""
  overlay = os.path.abspath(overlay)
  root = os.path.dirname(os.path.dirname(overlay))  # k8s/overlays/NAME -> k8s
  with tempfile.TemporaryDirectory() as tmp:
    copy = os.path.join(tmp, 'k8s')
    shutil.copytree(root, copy, ignore=shutil.ignore_patterns('secrets', '__pycache__'))
    secrets = os.path.join(copy, 'base', 'secrets')
    os.makedirs(secrets)
    for name in SECRET_FILES:
      with open(os.path.join(secrets, name), 'w') as f:
        f.write(f'PREVIEW PLACEHOLDER for {name}: make it with scripts/make_certs.sh\n')
    return _kubectl(['kustomize', os.path.join(copy, os.path.relpath(overlay, root))], None)


def main(argv: List[str]) -> int:
  if len(argv) < 2 or argv[1] in ('-h', '--help'):
    print(__doc__.strip(), file=sys.stderr)
    return 2
  if argv[1] == '--preview':
    try:
      for source in argv[2:]:
        print(preview(source), end='')
    except (RenderError, OSError) as e:
      print(f'cannot render the preview: {e}', file=sys.stderr)
      return 2
    return 0
  status = 0
  for source in argv[1:]:
    try:
      objects = render(source)
    except (RenderError, OSError, ValueError) as e:
      print(f'{source}: cannot read the manifests: {e}', file=sys.stderr)
      return 2
    errors = check(objects)
    for error in errors:
      print(f'{source}: {error}', file=sys.stderr)
    if errors:
      status = 1
    else:
      print(f'{source}: ok ({_summary(objects)})')
  return status


def _summary(objects: List[dict]) -> str:
  c = Checker(objects)
  learner = next(c.workloads('seed-learner'))
  actors = list(c.workloads('seed-actor'))
  settings = c.settings(learner[2])
  return (f'learner {learner[2].get("image")} on {settings["SEED_SERVER_ADDRESS"]}, health '
          f'{settings["SEED_HEALTH_PORT"]}, run directory {settings["SEED_LOGDIR"]}; '
          + ', '.join(f'{a[0]["spec"].get("completions", 1)} actors {a[2].get("image")} → '
                      f'{c.settings(a[2])["SEED_SERVER_ADDRESS"]}' for a in actors))


def run() -> None:
  """The seed-k8s-check console script."""
  sys.exit(main(sys.argv))


if __name__ == '__main__':
  run()
