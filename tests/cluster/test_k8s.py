"""The Kubernetes manifests (k8s/): every overlay renders with `kubectl kustomize`, the
objects agree with each other and with the flags of seed-learner and seed-actor, and
seed-k8s-check (seed/cluster/k8s_check.py) refuses overlays that do not.

Each test renders a copy of k8s/ in a temp dir with TLS files made there by
scripts/make_certs.sh, so the real tree stays as it is. No cluster is needed; the last
test runs the cpu overlay for real with `podman kube play` (tests/podman.py) and trains
Catch, and skips where podman cannot run.
"""
import csv
import json
import os
import shutil
import subprocess
import sys
import time

import pytest

from seed.cluster import k8s_check
from tests import podman as podman_harness
from tests.processes import REPO, _env, make_certs
from tests.learning_runs import first_solved

pytestmark = [pytest.mark.skipif(shutil.which('kubectl') is None,
                                 reason='kubectl is not installed (it renders the overlays)'),
              pytest.mark.xdist_group(podman_harness.SHARED_MACHINE_GROUP)]

OVERLAYS = sorted(os.listdir(os.path.join(REPO, 'k8s', 'overlays')))
JOB_INDEX = "metadata.annotations['batch.kubernetes.io/job-completion-index']"


check = k8s_check


@pytest.fixture(scope='module')
def certs(tmp_path_factory):
  """The secret files, as k8s/README.md makes them (once: RSA keys take a while)."""
  return make_certs(tmp_path_factory.mktemp('certs'), 'seed-learner',
                    'seed-learner.default.svc.cluster.local')


@pytest.fixture
def k8s_dir(tmp_path, certs):
  """A copy of k8s/ with its secret files in place."""
  root = tmp_path / 'k8s'
  shutil.copytree(os.path.join(REPO, 'k8s'), root, ignore=shutil.ignore_patterns('secrets'))
  shutil.copytree(certs.directory, root / 'base' / 'secrets')
  return root


def run_check(*paths):
  return subprocess.run([sys.executable, '-m', 'seed.cluster.k8s_check', *map(str, paths)],
                        capture_output=True, text=True, env=_env(), cwd=REPO, timeout=120)


def objects_of(k8s_dir, overlay):
  """kind -> name -> object, of the rendered overlay."""
  by_kind = {}
  for obj in check.render(str(k8s_dir / 'overlays' / overlay)):
    by_kind.setdefault(obj['kind'], {})[obj['metadata']['name']] = obj
  return by_kind


def env_of(container, config_maps):
  """Literal SEED_* values a container sees (ConfigMap first, env over it)."""
  values = {}
  for source in container.get('envFrom', []):
    values.update(config_maps[source['configMapRef']['name']]['data'])
  for var in container['env']:
    values[var['name']] = var.get('value', var.get('valueFrom'))
  return values


def program_flags(module):
  code = ('import sys, importlib; from absl import flags; m = importlib.import_module(sys.argv[1]);'
          'print("\\n".join(f.name for f in flags.FLAGS.get_key_flags_for_module(m)))')
  out = subprocess.run([sys.executable, '-c', code, module], capture_output=True, text=True,
                       env=_env(), cwd=REPO, check=True)
  return set(out.stdout.split())


def test_overlays_exist():
  assert {'cpu', 'gpu'} <= set(OVERLAYS), OVERLAYS


@pytest.mark.parametrize('overlay', OVERLAYS)
def test_every_overlay_renders_and_passes_check(k8s_dir, overlay):
  result = run_check(k8s_dir / 'overlays' / overlay)
  assert result.returncode == 0, result.stdout + result.stderr
  assert f'overlays/{overlay}: ok' in result.stdout


@pytest.mark.parametrize('overlay', OVERLAYS)
def test_rendered_objects_agree_with_the_flags(k8s_dir, overlay):
  objects = objects_of(k8s_dir, overlay)
  learner = objects['Job']['seed-learner']
  actors = objects['Job']['seed-actor']
  service = objects['Service']['seed-learner']
  assert learner['spec']['completions'] == learner['spec']['parallelism'] == 1
  assert actors['spec']['completionMode'] == 'Indexed'
  assert isinstance(actors['spec']['completions'], int) and actors['spec']['completions'] >= 1
  assert actors['spec']['parallelism'] == actors['spec']['completions']
  # A run ends: settings a program refuses fail its Job at once; preemptions do not count.
  # An actor that found no learner for its limit (exit 3) fails the Job too: another pod
  # would only wait again.
  for job, container, codes in ((learner, 'learner', [2]), (actors, 'actor', [2, 3])):
    rules = job['spec']['podFailurePolicy']['rules']
    assert {'action': 'FailJob', 'onExitCodes': {'containerName': container, 'operator': 'In',
                                                 'values': codes}} in rules
    assert {'action': 'Ignore', 'onPodConditions': [{'type': 'DisruptionTarget'}]} in rules
    assert job['spec']['template']['spec']['restartPolicy'] == 'Never'

  learner_pod, actor_pod = learner['spec']['template']['spec'], actors['spec']['template']['spec']
  for pod in (learner_pod, actor_pod):
    assert pod['securityContext']['runAsUser'] == 1000
    assert pod['securityContext']['fsGroup'] == 1000
  containers = {c['name']: c for c in learner_pod['containers'] + learner_pod['initContainers']}
  main, tensorboard = containers['learner'], containers['tensorboard']
  assert [c['name'] for c in learner_pod['containers']] == ['learner']
  assert tensorboard['restartPolicy'] == 'Always'  # a sidecar: the Job still completes
  actor = actor_pod['containers'][0]
  assert main['command'] == ['seed-learner'] and actor['command'] == ['seed-actor']
  assert main['image'].startswith('seed-learner') and actor['image'].startswith('seed-actor')
  assert tensorboard['image'] == main['image']
  config_maps = objects['ConfigMap']
  learner_env, actor_env = env_of(main, config_maps), env_of(actor, config_maps)

  # Every variable names a real flag: a typo would be ignored by the process.
  learner_flags = program_flags('seed.learner.main')
  actor_flags = program_flags('seed.actors.main')
  for variable in (v for c in config_maps.values() for v in c['data']):
    assert variable[len('SEED_'):].lower() in learner_flags | actor_flags, variable
  for variable in (v['name'] for v in main['env']):
    assert variable[len('SEED_'):].lower() in learner_flags, variable
  for variable in (v['name'] for v in actor['env']):
    assert variable[len('SEED_'):].lower() in actor_flags, variable
  assert os.path.exists(os.path.join(REPO, learner_env['SEED_GIN_FILE']))

  # Ports: learner flags, containerPorts, Service and probes agree.
  grpc_port = int(learner_env['SEED_SERVER_ADDRESS'].rsplit(':', 1)[1])
  health_port = int(learner_env['SEED_HEALTH_PORT'])
  assert (grpc_port, health_port) == (8686, 8687)
  named_ports = {p['name']: p['containerPort'] for c in containers.values() for p in c['ports']}
  service_ports = {p['port']: named_ports.get(p['targetPort'], p['targetPort'])
                   for p in service['spec']['ports']}
  assert service_ports == {8686: 8686, 8687: 8687}  # not TensorBoard: no TLS, no login
  for probe in ('startupProbe', 'readinessProbe', 'livenessProbe'):
    assert main[probe]['grpc']['port'] == health_port, probe
  startup = main['startupProbe']
  assert startup['periodSeconds'] * startup['failureThreshold'] >= 300
  assert tensorboard['command'] == ['tensorboard', '--logdir', '/seed-run', '--bind_all',
                                    '--port', '6006']

  # A learner stopped before its goal fails its pod, so the Job runs it again; the
  # kubelet waits for its last checkpoint.
  assert int(learner_env['SEED_STOPPED_EXIT_CODE']) not in (0, 2)
  assert learner_pod['terminationGracePeriodSeconds'] >= float(
      learner_env['SEED_SHUTDOWN_LIMIT_S']) + 10

  # Hardened as Pod Security "restricted" asks, with a read-only root and no API token.
  for pod in (learner_pod, actor_pod):
    assert pod['automountServiceAccountToken'] is False
    assert pod['securityContext']['seccompProfile'] == {'type': 'RuntimeDefault'}
    assert pod['securityContext']['runAsNonRoot'] is True
    tmp = next(v for v in pod['volumes'] if v['name'] == 'tmp')
    assert 'emptyDir' in tmp
    for container in pod['containers'] + pod.get('initContainers', []):
      security = container['securityContext']
      assert security['readOnlyRootFilesystem'] is True, container['name']
      assert security['allowPrivilegeEscalation'] is False
      assert security['capabilities'] == {'drop': ['ALL']}
      assert {'name': 'tmp', 'mountPath': '/tmp'} in container['volumeMounts']
  # Only actors reach the gRPC port; anyone the health port; nobody the actors. A drain
  # may evict the learner (it checkpoints on SIGTERM; the Job starts it elsewhere).
  policies = objects['NetworkPolicy']
  learner_policy = policies['seed-learner']['spec']
  assert learner_policy['podSelector']['matchLabels'] == learner_pod_labels(learner)
  assert learner_policy['ingress'] == [
      {'from': [{'podSelector': {'matchLabels': learner_pod_labels(actors)}}],
       'ports': [{'port': grpc_port, 'protocol': 'TCP'}]},
      {'ports': [{'port': health_port, 'protocol': 'TCP'}]}]
  actor_policy = policies['seed-actor']['spec']
  assert actor_policy['podSelector']['matchLabels'] == learner_pod_labels(actors)
  assert actor_policy['policyTypes'] == ['Ingress'] and 'ingress' not in actor_policy
  budget = objects['PodDisruptionBudget']['seed-learner']['spec']
  assert budget['selector']['matchLabels'] == learner_pod_labels(learner)
  assert disruptions_allowed(budget, healthy_pods=1) == 1
  # Images as built, with a tag: never docker.io's :latest.
  for container in (main, tensorboard, actor):
    assert ':' in container['image'].rsplit('/', 1)[-1], container['image']
    assert not container['image'].endswith(':latest'), container['image']
  # Resources the scheduler can place by, and a memory limit.
  for container in (main, tensorboard, actor):
    assert {'cpu', 'memory'} <= set(container['resources']['requests'])
    assert 'memory' in container['resources']['limits']

  # Actors: unique ids from the pod index, the Service's name and gRPC port.
  assert next(v for v in actor['env'] if v['name'] == 'SEED_ACTOR_ID')['valueFrom'] == {
      'fieldRef': {'fieldPath': JOB_INDEX}}
  assert actor_env['SEED_SERVER_ADDRESS'] == f'seed-learner:{grpc_port}'

  # The run directory on the claim, the secret read-only where SEED_TLS_* point.
  claim = next(v for v in learner_pod['volumes'] if 'persistentVolumeClaim' in v)
  assert claim['persistentVolumeClaim']['claimName'] in objects['PersistentVolumeClaim']
  mounts = {m['name']: m for m in main['volumeMounts']}
  assert mounts[claim['name']]['mountPath'] == learner_env['SEED_LOGDIR'] == '/seed-run'
  secret_name = next(iter(objects['Secret']))
  for pod, container, variables in (
      (learner_pod, main, ('SEED_TLS_CERT_FILE', 'SEED_TLS_KEY_FILE', 'SEED_AUTH_TOKEN_FILE')),
      (actor_pod, actor, ('SEED_TLS_CA_FILE', 'SEED_AUTH_TOKEN_FILE'))):
    tls = next(v for v in pod['volumes'] if 'secret' in v)
    assert tls['secret']['secretName'] == secret_name
    mount = next(m for m in container['volumeMounts'] if m['name'] == tls['name'])
    assert mount['readOnly'] is True
    env = learner_env if container is main else actor_env
    for variable in variables:
      assert os.path.dirname(env[variable]) == mount['mountPath'], variable
  actor_files = {i['path'] for i in next(v for v in actor_pod['volumes'] if 'secret' in v)
                 ['secret']['items']}
  assert actor_files == {'ca.crt', 'token'}  # not the learner's private key


def test_gpu_overlay_asks_for_a_gpu_and_the_cpu_one_does_not(k8s_dir):
  gpu = objects_of(k8s_dir, 'gpu')['Job']['seed-learner']['spec']['template']['spec']
  cpu = objects_of(k8s_dir, 'cpu')['Job']['seed-learner']['spec']['template']['spec']
  assert gpu['containers'][0]['image'] == 'seed-learner:gpu'
  assert str(gpu['containers'][0]['resources']['limits']['nvidia.com/gpu']) == '1'
  assert {'key': 'nvidia.com/gpu', 'operator': 'Exists', 'effect': 'NoSchedule'} in (
      gpu['tolerations'])
  assert cpu['containers'][0]['image'] == 'seed-learner:cpu'
  assert 'nvidia.com/gpu' not in json.dumps(cpu)
  assert cpu['containers'][0]['resources']['limits']['memory']


def disruptions_allowed(budget, healthy_pods):
  """What the disruption controller allows a budget over a Job's pods: a Job has no scale
  subresource, so only an integer minAvailable can be worked out (a maxUnavailable one
  allows nothing: Kubernetes' docs, "Arbitrary workloads and arbitrary selectors")."""
  if 'maxUnavailable' in budget or isinstance(budget.get('minAvailable', 0), str):
    return 0
  return max(0, healthy_pods - budget.get('minAvailable', 0))


def learner_pod_labels(workload):
  """The labels a workload's pods carry that its own manifests chose."""
  labels = workload['spec']['template']['metadata']['labels']
  return {k: v for k, v in labels.items() if k == 'app.kubernetes.io/name'}


def write_overlay(k8s_dir, kustomization):
  """An overlay on top of cpu; JSON is YAML, so json.dumps writes it."""
  folder = k8s_dir / 'overlays' / 'bad'
  folder.mkdir()
  (folder / 'kustomization.yaml').write_text(json.dumps({'resources': ['../cpu'],
                                                         **kustomization}))
  return folder


def patch(kind, name, *ops):
  return {'patches': [{'target': {'kind': kind, 'name': name}, 'patch': json.dumps(list(ops))}]}


ENV_0 = "/spec/template/spec/containers/0/env"  # the first container's env list


def replace(path, value):
  return {'op': 'replace', 'path': path, 'value': value}


@pytest.mark.parametrize('kustomization, message', [
    (patch('Job', 'seed-actor', replace('/spec/completions', -1),
           replace('/spec/parallelism', -1)),
     'Job seed-actor: spec.completions is -1; expected an integer >= 1'),
    (patch('Job', 'seed-actor', replace('/spec/completions', 'two')),
     "Job seed-actor: spec.completions is 'two'; expected an integer >= 1"),
    (patch('Job', 'seed-actor', replace('/spec/parallelism', 1)),
     'Job seed-actor: spec.parallelism is 1 and spec.completions 2; expected them equal'),
    (patch('Job', 'seed-actor', {'op': 'remove', 'path': '/spec/completionMode'}),
     'Job seed-actor: runs seed-actor; expected an Indexed Job'),
    (patch('Job', 'seed-learner', replace('/spec/parallelism', 2)),
     'Job seed-learner: spec.parallelism is 2; expected exactly 1'),
    (patch('Job', 'seed-learner', replace(f'{ENV_0}/3/value', '0')),
     "SEED_STOPPED_EXIT_CODE is '0'; expected a code 1-255 other than 2"),
    (patch('Job', 'seed-learner', {'op': 'remove', 'path': '/spec/template/spec/initContainers/0/'
                                   'restartPolicy'}),
     "container tensorboard: runs among the containers, so the learner's Job never completes"),
    (patch('Job', 'seed-actor', replace(f'{ENV_0}/1/value', 'seed-learner:9999')),
     "SEED_SERVER_ADDRESS is 'seed-learner:9999'; expected seed-learner:8686"),
    (patch('Job', 'seed-actor', replace(f'{ENV_0}/0', {'name': 'SEED_ACTOR_ID', 'value': '0'})),
     "SEED_ACTOR_ID is '0'; expected valueFrom.fieldRef.fieldPath " + JOB_INDEX),
    (patch('Job', 'seed-actor', replace(f'{ENV_0}/3/value', '/etc/tls/ca.crt')),
     "SEED_TLS_CA_FILE is '/etc/tls/ca.crt', but no secret volume is mounted there"),
    (patch('Job', 'seed-learner', replace(f'{ENV_0}/0/value', '/data/run')),
     "SEED_LOGDIR is '/data/run', but no PersistentVolumeClaim is mounted there"),
    (patch('Job', 'seed-learner', replace(f'{ENV_0}/2/value', '9000')),
     'livenessProbe checks grpc port 8687; expected grpc: {port: 9000}'),
    (patch('Job', 'seed-learner', replace('/spec/template/spec/containers/0/readinessProbe',
                                          {'tcpSocket': {'port': 8686}})),
     'readinessProbe checks tcpSocket; expected grpc: {port: 8687}'),
    (patch('Service', 'seed-learner', {'op': 'add', 'path': '/spec/ports/-', 'value': {
        'name': 'tensorboard', 'port': 6006, 'targetPort': 6006}}),
     "Service seed-learner: reaches TensorBoard's port 6006, which has no TLS and no login"),
    (patch('Job', 'seed-learner', replace('/spec/template/spec/terminationGracePeriodSeconds',
                                          60)),
     'terminationGracePeriodSeconds is 60 and SEED_SHUTDOWN_LIMIT_S 100; expected the grace '
     'period at least 10 s longer'),
    (patch('Job', 'seed-actor', {'op': 'remove',
                                 'path': '/spec/template/spec/securityContext/seccompProfile'}),
     "container actor: seccompProfile is None; expected RuntimeDefault"),
    (patch('Job', 'seed-actor', replace('/spec/template/spec/containers/0/securityContext/'
                                        'readOnlyRootFilesystem', False)),
     "container actor: can write its image's files; expected readOnlyRootFilesystem: true"),
    (patch('Job', 'seed-actor', {'op': 'remove',
                                 'path': '/spec/template/spec/containers/0/livenessProbe'}),
     'no livenessProbe reads /tmp/heartbeat; expected an exec probe'),
    (patch('Job', 'seed-learner', {'op': 'remove', 'path': '/spec/template/spec/'
                                   'automountServiceAccountToken'}),
     'Job seed-learner: mounts a service account token; expected '
     'automountServiceAccountToken: false'),
    (patch('Job', 'seed-actor', {'op': 'add', 'path': f'{ENV_0}/-',
                                 'value': {'name': 'SEED_NUM_ENV', 'value': '8'}}),
     'container actor: sets SEED_NUM_ENV, which is no setting of seed-actor'),
    ({'configMapGenerator': [{'name': 'seed-experiment', 'behavior': 'merge',
                              'literals': ['SEED_MAX_ENV_FRAME=1000']}]},
     'reads SEED_MAX_ENV_FRAME from ConfigMap seed-experiment'),
    # What the check let through before issue 70:
    (patch('Job', 'seed-actor', replace('/spec/template/spec/containers/0/image', 'seed-actor')),
     "container actor: image 'seed-actor' has no tag: the cluster pulls whatever "
     'docker.io/library/seed-actor:latest'),
    ({'images': [{'name': 'seed-actor', 'newTag': 'latest'}]},
     "container actor: image 'seed-actor:latest' is tagged latest"),
    (patch('Job', 'seed-actor', {'op': 'remove',
                                 'path': '/spec/template/spec/containers/0/resources'}),
     'container actor: has no resources.requests.cpu, resources.requests.memory, '
     'resources.limits.memory; expected requests of cpu and memory and a memory limit'),
    (patch('Job', 'seed-learner', {'op': 'remove', 'path': '/spec/template/spec/containers/0/'
                                   'resources/limits'}),
     'container learner: has no resources.limits.memory'),
    (patch('PodDisruptionBudget', 'seed-learner', {'op': 'remove', 'path': '/spec/minAvailable'},
           {'op': 'add', 'path': '/spec/maxUnavailable', 'value': 0}),
     'PodDisruptionBudget seed-learner: maxUnavailable is 0; a Job has no scale subresource'),
    (patch('PodDisruptionBudget', 'seed-learner', replace('/spec/minAvailable', 1)),
     'PodDisruptionBudget seed-learner: minAvailable is 1; with one learner pod that allows '
     'no eviction'),
    (patch('NetworkPolicy', 'seed-learner', {'op': 'remove', 'path': '/spec/ingress/0/from'}),
     "NetworkPolicy seed-learner: lets anyone reach the learner's gRPC port 8686; expected "
     "only the actors' pods"),
    ({'patches': [{'patch': json.dumps({'$patch': 'delete', 'apiVersion': 'networking.k8s.io/v1',
                                        'kind': 'NetworkPolicy',
                                        'metadata': {'name': 'seed-actor'}})}]},
     'Job seed-actor: no NetworkPolicy selects the actor pods'),
    ({'patches': [{'patch': json.dumps({'$patch': 'delete', 'apiVersion': 'networking.k8s.io/v1',
                                        'kind': 'NetworkPolicy',
                                        'metadata': {'name': 'seed-learner'}})}]},
     'Job seed-learner: no NetworkPolicy selects the learner pod'),
], ids=['actors-minus-1', 'actors-two', 'actors-uneven', 'actors-not-indexed', 'learners-2',
        'stopped-exit-0', 'tensorboard-not-sidecar', 'actor-port', 'actor-id', 'ca-path',
        'logdir', 'health-port', 'probe-kind', 'tensorboard-on-service', 'grace-too-short',
        'no-seccomp', 'writable-root', 'no-actor-liveness', 'api-token', 'unknown-setting',
        'unknown-shared-setting', 'untagged-image', 'latest-image', 'no-resources',
        'no-memory-limit', 'budget-max-unavailable-0', 'budget-min-available-1',
        'grpc-open-to-anyone', 'no-actor-policy', 'no-learner-policy'])
def test_check_names_what_is_wrong(k8s_dir, kustomization, message):
  result = run_check(write_overlay(k8s_dir, kustomization))
  assert result.returncode == 1, result.stdout + result.stderr
  assert message in result.stderr, result.stderr


def test_a_replica_count_kustomize_cannot_read_is_a_clear_error(k8s_dir):
  result = run_check(write_overlay(k8s_dir, {'replicas': [{'name': 'seed-actor',
                                                           'count': 'two'}]}))
  assert result.returncode == 2, result.stdout + result.stderr
  assert 'set their number with spec.completions and spec.parallelism' in result.stderr, (
      result.stderr)


def test_missing_secret_files_say_how_to_make_them(k8s_dir):
  shutil.rmtree(k8s_dir / 'base' / 'secrets')
  result = run_check(k8s_dir / 'overlays' / 'cpu')
  assert result.returncode == 2, result.stdout + result.stderr
  assert 'scripts/make_certs.sh k8s/base/secrets seed-learner' in result.stderr


def test_a_certificate_for_other_names_is_refused(k8s_dir):
  make_certs(k8s_dir / 'base' / 'secrets', 'learner.example.org')
  result = run_check(k8s_dir / 'overlays' / 'cpu')
  assert result.returncode == 1, result.stdout + result.stderr
  assert "dials 'seed-learner', but the learner's certificate is for ['learner.example.org']" in (
      result.stderr)


# -- The cpu overlay for real, with `podman kube play` ------------------------------
#
# Podman 4.3's kube play runs Pods and Deployments but not everything Kubernetes does;
# the test adapts the rendered objects, never the manifests:
#   - no Services, no Jobs: the learner Job becomes a Pod named after its Service (pods
#     find each other by pod name on the network, as actors find the Service by name),
#     and the actors' Indexed Job one Pod per index, annotated as Kubernetes would
#     (batch.kubernetes.io/job-completion-index), so the manifests' fieldRef gives each
#     actor its SEED_ACTOR_ID unchanged;
#   - no sidecars: podman would run the TensorBoard init container to its end before the
#     learner; it joins the pod's containers instead;
#   - secret volumes: 4.3 panics on one without `optional`, and writes the Secret's
#     base64 text into the files instead of the decoded bytes: a hostPath folder with
#     the same files (and items) stands in;
#   - grpc probes are ignored (no healthcheck): the test asks the health port itself;
#   - the learner Pod gets a target (SEED_TARGET_RETURN, ...), so it stops once Catch is
#     solved; then its actors must exit 0 by themselves (the Jobs complete);
#   - the learner Pod is played first and probed, the actors after: Catch is solved in
#     under a minute, so with both at once a slow `kube play` could return after the
#     learner had already finished and nothing was left to probe (CI at da8ba53 and
#     42f1a8a). Actors that start later is what a cluster does anyway.
KUBE_SUBNET = '198.18.3.0/24'  # test_containers.py has 198.18.2.0/24
KUBE_NETWORK = 'seed-kube'


def as_podman_pods(objects, secret_dirs, learner_env):
  """The rendered overlay as what `podman kube play` 4.3 runs (see above)."""
  services = [o for o in objects if o['kind'] == 'Service' and o['spec'].get('clusterIP') != 'None']
  out = [o for o in objects if o['kind'] in ('ConfigMap', 'PersistentVolumeClaim')]
  for obj in objects:
    if obj['kind'] != 'Job':
      continue
    template = json.loads(json.dumps(obj['spec']['template']))
    template['spec']['containers'] += template['spec'].pop('initContainers', [])
    for container in template['spec']['containers']:
      container.pop('restartPolicy', None)
    for volume in template['spec'].get('volumes', []):
      if 'secret' in volume:
        secret = volume.pop('secret')
        items = tuple(i['path'] for i in secret.get('items', []))
        volume['hostPath'] = {'path': secret_dirs[items], 'type': 'Directory'}
    for container in template['spec']['containers']:
      container['imagePullPolicy'] = 'IfNotPresent'
    if obj['spec'].get('completionMode') != 'Indexed':  # the learner
      service = next(s for s in services
                     if s['spec']['selector'].items() <= template['metadata']['labels'].items())
      template['spec']['containers'][0]['env'] += [
          {'name': k, 'value': v} for k, v in learner_env.items()]
      out.append(_pod(service['metadata']['name'], template))
    else:
      for index in range(obj['spec']['completions']):
        pod = _pod(f'{obj["metadata"]["name"]}-{index}', template)
        pod['metadata'].setdefault('annotations', {})[
            'batch.kubernetes.io/job-completion-index'] = str(index)
        out.append(pod)
  return out


def _pod(name, template):
  pod = json.loads(json.dumps({'apiVersion': 'v1', 'kind': 'Pod', 'metadata': template['metadata'],
                               'spec': template['spec']}))
  pod['metadata']['name'] = name
  return pod


def secret_folders(root, certs):
  """{items: folder}: the whole secret, and each `items` subset the manifests mount."""
  folders = {}
  for items in ((), ('ca.crt', 'token')):
    folder = root / ('all' if not items else '-'.join(items))
    folder.mkdir(parents=True)
    for name in items or ('ca.crt', 'tls.crt', 'tls.key', 'token'):
      shutil.copy(certs.path(name), folder / name)
      os.chmod(folder / name, 0o644)  # uid 1000 reads it (a Secret's files are its own)
    folders[items] = str(folder)
  return folders


def grpc_health(address):
  """grpc.health.v1 Check('') on a plaintext address, as a kubelet's grpc probe asks."""
  import grpc  # pylint: disable=g-import-not-at-top
  from grpc_health.v1 import health_pb2, health_pb2_grpc  # pylint: disable=g-import-not-at-top
  with grpc.insecure_channel(address, options=[('grpc.enable_http_proxy', 0)]) as channel:
    response = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(),
                                                          timeout=5)
  return health_pb2.HealthCheckResponse.ServingStatus.Name(response.status)


def http_status(url):
  import urllib.request  # pylint: disable=g-import-not-at-top
  opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
  with opener.open(url, timeout=5) as response:
    return response.status


def eventually(what, timeout_s=120):
  """what()'s value once it does not raise; its last error after timeout_s."""
  deadline = time.monotonic() + timeout_s
  while True:
    try:
      return what()
    except Exception:  # pylint: disable=broad-except
      if time.monotonic() > deadline:
        raise
      time.sleep(2)


@pytest.fixture
def podman_networks():
  """Skips, before any image is built, where podman cannot make a network here."""
  reason = podman_harness.networks_unavailable_reason()
  if reason:
    pytest.skip(reason)


@pytest.mark.timeout(2400)
def test_cpu_overlay_trains_catch_under_podman_kube_play(k8s_dir, certs, tmp_path,
                                                         podman_networks, podman, seed_images):
  del podman_networks  # Only its skip.
  podman.run(['tag', seed_images['learner'].tag, 'seed-learner:cpu'])
  podman.run(['tag', seed_images['actor'].tag, 'seed-actor:cpu'])
  target, window, max_frames = 0.9, 100, 300_000
  objects = check.render(str(k8s_dir / 'overlays' / 'cpu'))
  pods = as_podman_pods(objects, secret_folders(tmp_path / 'secrets', certs), {
      'SEED_TARGET_RETURN': str(target), 'SEED_RETURN_WINDOW': str(window),
      'SEED_MAX_ENV_FRAMES': str(max_frames), 'SEED_PROGRESS_INTERVAL_S': '5'})
  config_maps = [o for o in pods if o['kind'] == 'ConfigMap']  # each play resolves its own
  learner_play, actors_play = tmp_path / 'learner.yaml', tmp_path / 'actors.yaml'
  learner_play.write_text('\n---\n'.join(
      json.dumps(o) for o in pods if not o['metadata']['name'].startswith('seed-actor')))
  actor_pods = [o for o in pods if o['metadata']['name'].startswith('seed-actor')]
  actors_play.write_text('\n---\n'.join(json.dumps(o) for o in config_maps + actor_pods))
  actors = [p['metadata']['name'] for p in actor_pods]
  assert actors == ['seed-actor-0', 'seed-actor-1']  # the overlay's replicas
  podman.network(KUBE_NETWORK, KUBE_SUBNET)
  try:
    started = time.monotonic()
    podman.run(['kube', 'play', '--network', KUBE_NETWORK, str(learner_play)], timeout=300)
    learner_ip = eventually(lambda: podman.run(
        ['exec', 'seed-learner-learner', 'getent', 'hosts', 'seed-learner']).stdout.split()[0])
    # What the kubelet's probes would ask, on the health port the manifests name.
    try:
      health = eventually(lambda: grpc_health(f'{learner_ip}:8687'), timeout_s=300)
    except Exception as e:  # pylint: disable=broad-except
      containers = podman.run(['ps', '-a', '--format', '{{.Names}} {{.Status}}'],
                              check=False).stdout
      pytest.fail(f'no health service on {learner_ip}:8687 after 300 s ({type(e).__name__}); '
                  f'containers:\n{containers}\nlearner log:\n'
                  f'{podman.logs("seed-learner-learner", tail_chars=6000)}')
    assert health == 'SERVING'
    assert eventually(lambda: http_status(f'http://{learner_ip}:6006/')) == 200  # TensorBoard
    podman.run(['kube', 'play', '--network', KUBE_NETWORK, str(actors_play)], timeout=300)
    exit_code = podman.wait('seed-learner-learner', timeout=1500)
    learner_s = time.monotonic() - started
    learner_log = podman.logs('seed-learner-learner')
    assert exit_code == 0, learner_log
    # The run ends everywhere: told by the learner, each actor exits 0 (its Job completes).
    actor_exits = {name: podman.wait(f'{name}-actor', timeout=30) for name in actors}
    actor_logs = {name: podman.logs(f'{name}-actor') for name in actors}
    assert set(actor_exits.values()) == {0}, (actor_exits, actor_logs)
    run_dir = podman.run(['volume', 'inspect', '--format', '{{.Mountpoint}}',
                          'seed-run']).stdout.strip()
    with open(os.path.join(run_dir, 'episodes.csv')) as f:
      episodes = [(int(r['env_frames']), float(r['episode_return'])) for r in csv.DictReader(f)]
  finally:
    for play in (actors_play, learner_play):
      podman.run(['kube', 'down', str(play)], check=False, timeout=300)
    podman.run(['volume', 'rm', '-f', 'seed-run'], check=False)
    podman.run(['network', 'rm', '-f', KUBE_NETWORK], check=False)
    podman.run(['rmi', 'seed-learner:cpu', 'seed-actor:cpu'], check=False)
  assert 'TLS' in learner_log, learner_log
  for index, name in enumerate(actors):  # ids from the pod index, over TLS with the token
    assert f'actor {index} split 0 connected to learner' in actor_logs[name], actor_logs[name]
  frames, mean_return = first_solved(episodes, target, window, label='Catch under kube play')
  print(f'kube play: learner pod ran {learner_s:.0f} s from `kube play` to its exit')
  assert mean_return >= target, f'best mean return over {window} episodes: {mean_return}'
  assert frames <= max_frames


def test_an_overlay_can_be_previewed_before_any_tls_file_exists(tmp_path):
  # kubectl kustomize needs the secret files; --preview renders with placeholders.
  root = tmp_path / 'k8s'
  shutil.copytree(os.path.join(REPO, 'k8s'), root, ignore=shutil.ignore_patterns('secrets'))
  assert subprocess.run(['kubectl', 'kustomize', str(root / 'overlays' / 'cpu')],
                        capture_output=True).returncode != 0  # what a user met before
  result = subprocess.run([sys.executable, '-m', 'seed.cluster.k8s_check', '--preview',
                           str(root / 'overlays' / 'cpu')], capture_output=True, text=True,
                          env=_env(), cwd=REPO, timeout=120)
  assert result.returncode == 0, result.stderr
  kinds = [line.split(': ')[1] for line in result.stdout.splitlines() if line.startswith('kind: ')]
  assert sorted(kinds) == ['ConfigMap', 'Job', 'Job', 'NetworkPolicy', 'NetworkPolicy',
                           'PersistentVolumeClaim', 'PodDisruptionBudget', 'Secret', 'Service']
  assert not (root / 'base' / 'secrets').exists()  # nothing left behind in the tree
