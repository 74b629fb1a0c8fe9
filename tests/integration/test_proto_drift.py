"""The checked-in generated modules are exactly what protoc makes of the .proto."""
import os
import subprocess
import sys

import pytest

from tests.processes import REPO

GENERATED = ['seed/proto/actor_learner_pb2.py', 'seed/proto/actor_learner_pb2_grpc.py']


def test_generated_modules_match_the_proto(tmp_path):
  pytest.importorskip('grpc_tools', reason='grpcio-tools is a test extra')
  subprocess.run([sys.executable, '-m', 'grpc_tools.protoc', '-Iprotos',
                  f'--python_out={tmp_path}', f'--grpc_python_out={tmp_path}',
                  'protos/seed/proto/actor_learner.proto'], check=True, cwd=REPO)
  for path in GENERATED:
    with open(os.path.join(REPO, path)) as checked_in, open(tmp_path / path) as fresh:
      assert checked_in.read() == fresh.read(), (
          f'{path} is stale: regenerate with python -m grpc_tools.protoc -Iprotos '
          '--python_out=. --grpc_python_out=. protos/seed/proto/actor_learner.proto')
