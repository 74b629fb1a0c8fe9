"""Actors of the learner's host over its Unix socket (--local_socket, seed.transport.unix_socket):
frames that break the framing are refused by name, a real learner trains from actors on
the socket, and after a kill -9 (its socket file left behind) a restarted learner takes
the stale file away and the actors find it again. The protocol's own refusals run over
both transports in tests/integration/test_protocol.py."""
import json
import logging
import os
import signal
import socket
import stat
import struct
import subprocess
import sys
import tempfile
import time

import grpc
import pytest

from seed.transport import unix_socket
from seed.transport import refusal_log
from seed.transport import unix_address
from tests.processes import REPO, Run, _env
from tests.server_harness import (LockstepClient, ServerHarness, hello, raw_step_body,
                                  step)

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def server():
  with ServerHarness(transport='unix') as harness:
    yield harness


def raw_connection(server) -> socket.socket:
  connection = socket.socket(socket.AF_UNIX)
  connection.connect(unix_address.socket_path(server.address))
  connection.settimeout(10)
  return connection


def status_after(connection: socket.socket, data: bytes):
  """Sends `data` as it is; the (code, details) of the status frame the learner answers."""
  connection.sendall(data)
  received = b''
  while True:
    chunk = connection.recv(1 << 16)
    if not chunk:
      break
    received += chunk
  connection.close()
  (length,) = struct.unpack_from('<I', received)
  assert received[4:5] == unix_socket.STATUS, received[:100]
  status = json.loads(received[5:4 + length])
  return grpc.StatusCode[status['code']], status['details']


def assert_still_served(server):
  client = LockstepClient(server.address)
  client.send(hello(actor_id=50, run_id='still'))
  assert client.recv().WhichOneof('kind') == 'welcome'
  client.send(step())
  assert client.recv().WhichOneof('kind') == 'actions'
  client.close()


METADATA = unix_socket._frame(unix_socket.METADATA, b'{}')  # pylint: disable=protected-access


@pytest.mark.parametrize('data,code,named', [
    (METADATA + struct.pack('<I', 5) + b'x1234', grpc.StatusCode.INVALID_ARGUMENT,
     "a frame tagged b'x'"),
    (struct.pack('<I', 3) + b'd{}', grpc.StatusCode.INVALID_ARGUMENT,
     'expected the metadata frame'),
    (struct.pack('<I', 6) + b'm[1,2]', grpc.StatusCode.INVALID_ARGUMENT,
     'not a JSON object of strings'),
    (METADATA + METADATA, grpc.StatusCode.INVALID_ARGUMENT, 'a second metadata frame'),
    (METADATA + struct.pack('<I', 0), grpc.StatusCode.INVALID_ARGUMENT, 'an empty frame'),
    # Refused from its header alone: the 2 GiB are never sent, nor waited for.
    (METADATA + struct.pack('<I', 1 << 31), grpc.StatusCode.RESOURCE_EXHAUSTED,
     'received message larger than max (2147483647 vs. 1048576 bytes'),
])
def test_broken_framing_is_refused_by_name_and_the_others_go_on(server, data, code, named):
  got_code, details = status_after(raw_connection(server), data)
  assert got_code == code and named in details, details
  assert_still_served(server)


def test_a_metadata_frame_of_deeply_nested_json_is_refused_with_a_status(server, caplog):
  # json.loads raises RecursionError, not ValueError, on arrays nested past Python's
  # recursion limit: it escaped the frame handler, the event loop logged a traceback
  # and the stream closed without a status.
  nested = b'[' * 3000 + b']' * 3000  # under the frame's 8 KiB, 3x the recursion limit
  got_code, details = status_after(raw_connection(server), unix_socket._frame(  # pylint: disable=protected-access
      unix_socket.METADATA, nested))
  assert got_code == grpc.StatusCode.INVALID_ARGUMENT, details
  assert 'not a JSON object of strings' in details
  assert 'RecursionError' not in caplog.text and 'Traceback' not in caplog.text
  assert_still_served(server)


def test_a_metadata_frame_over_grpcs_metadata_limit_is_refused(server):
  body = json.dumps({'authorization': 'Bearer ' + 'x' * 10_000}).encode()
  got_code, details = status_after(raw_connection(server), unix_socket._frame(  # pylint: disable=protected-access
      unix_socket.METADATA, body))
  assert got_code == grpc.StatusCode.RESOURCE_EXHAUSTED, details
  assert f'a metadata frame of {len(body)} bytes; expected at most 8192' in details
  assert_still_served(server)


def test_a_flood_of_bad_streams_from_one_peer_is_logged_at_a_bounded_rate(server, caplog,
                                                                        monkeypatch):
  # Each bad stream is refused with its status; the log gets a few lines a peer, then
  # counts the rest.
  monkeypatch.setattr(refusal_log, 'REFUSALS', refusal_log.RefusalLog(
      logging.getLogger('seed.refusals'), per_window=5, window_s=3600))
  with caplog.at_level(logging.WARNING):
    for _ in range(40):
      got_code, _details = status_after(raw_connection(server),
                                        struct.pack('<I', 3) + b'd{}')
      assert got_code == grpc.StatusCode.INVALID_ARGUMENT
    assert caplog.text.count('refused unix:') == 5, caplog.text
    assert 'further refusals of unix:uid' in caplog.text
    refusal_log.REFUSALS._window_s = 0  # pylint: disable=protected-access
    refusal_log.REFUSALS.flush()
  assert '35 more refusals of unix:uid' in caplog.text, caplog.text
  assert_still_served(server)


RAW = unix_socket.RAW_STEP


@pytest.mark.parametrize('body,code,named', [
    (b'ab', grpc.StatusCode.INVALID_ARGUMENT, 'a raw step frame of 2 bytes'),
    (struct.pack('<I', 100) + b'xyz', grpc.StatusCode.INVALID_ARGUMENT,
     'declares a message of 100 bytes; only 3 follow'),
    (struct.pack('<I', 3) + b'\xff\xff\xff', grpc.StatusCode.INVALID_ARGUMENT,
     'could not decode an ActorMessage'),
    (struct.pack('<I', len(hello().SerializeToString())) + hello().SerializeToString(),
     grpc.StatusCode.INVALID_ARGUMENT, "a raw step frame holds a hello; it carries steps only"),
    # A raw step first: the hello is still what a stream must begin with.
    (raw_step_body(step()), grpc.StatusCode.FAILED_PRECONDITION,
     'first message is a step; expected a hello'),
], ids=['too-short', 'length-past-the-end', 'not-a-message', 'a-hello', 'a-step-first'])
def test_a_broken_raw_step_frame_is_refused_by_name(server, body, code, named):
  got_code, details = status_after(raw_connection(server),
                                   METADATA + unix_socket._frame(RAW, body))  # pylint: disable=protected-access
  assert got_code == code and named in details, details
  assert_still_served(server)


def test_observations_in_the_message_and_beside_it_are_refused(server):
  client = LockstepClient(server.address)
  client.send(hello(actor_id=7))
  assert client.recv().WhichOneof('kind') == 'welcome'
  client.send_frame(RAW, raw_step_body(step(), keep_data=True))
  with pytest.raises(grpc.RpcError) as refused:
    client.recv()
  assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
  assert ('step.observations: 400 bytes in the message and 400 beside it; expected them in '
          'one place') in refused.value.details()
  client.close()
  assert_still_served(server)


def test_an_actor_that_leaves_mid_stream_frees_its_envs(server):
  client = LockstepClient(server.address)
  client.send(hello(actor_id=3))
  assert client.recv().WhichOneof('kind') == 'welcome'
  assert server.table.num_envs == 2
  client.close()
  deadline = time.monotonic() + 10
  while server.table.num_envs and time.monotonic() < deadline:
    time.sleep(0.01)
  assert server.table.num_envs == 0
  assert_still_served(server)


def test_the_socket_is_its_owners_only(server):
  mode = os.stat(unix_address.socket_path(server.address)).st_mode
  assert stat.S_ISSOCK(mode) and stat.S_IMODE(mode) == 0o600


def test_a_socket_path_in_use_or_not_a_socket_is_refused(server, tmp_path):
  live = unix_address.socket_path(server.address)
  with pytest.raises(ValueError, match='another process listens on it'):
    unix_socket.remove_stale_socket(live)
  plain = tmp_path / 'plain'
  plain.write_text('not a socket')
  with pytest.raises(ValueError, match='exists and is not a socket'):
    unix_socket.remove_stale_socket(str(plain))
  assert plain.exists()


@pytest.mark.parametrize('address,tls,message', [
    ('unix:relative.sock', None, "--server_address=unix:='relative.sock': expected an absolute"),
    ('unix:/' + 'x' * 120, None, 'a Unix socket path holds at most 107'),
    ('unix:/tmp/l.sock', '/tmp/ca.crt', 'has no TLS: drop --tls_ca_file'),
])
def test_an_actors_unix_address_is_checked_at_start(address, tls, message):
  with pytest.raises(ValueError, match=message.replace('(', r'\(').replace('[', r'\[')):
    unix_address.check_actor_address(address, tls)


def test_a_bad_local_socket_flag_stops_the_learner_before_it_loads(tmp_path):
  result = subprocess.run(
      [sys.executable, '-m', 'seed.learner.main', f'--logdir={tmp_path / "run"}',
       '--local_socket=learner.sock'], capture_output=True, text=True, timeout=120,
      cwd=REPO, env=_env())
  assert result.returncode == 2, result.stderr
  assert "--local_socket='learner.sock': expected an absolute path" in result.stderr


def test_actors_on_the_socket_train_and_find_a_learner_restarted_after_kill_9(tmp_path):
  socket_dir = tempfile.mkdtemp(prefix='seed-sock-')  # tmp_path may be too long a path
  path = os.path.join(socket_dir, 'learner.sock')
  try:
    with Run(tmp_path / 'run', 'gin/toy/vtrace.gin', learner_flags=[
        '--env=Catch', f'--local_socket={path}', '--checkpoint_interval_s=2']) as run:
      run.start_learner()
      run.start_actors(2, 2, extra_flags=['--env=Catch', f'--server_address=unix:{path}'])
      wait_for_frames(run, 2000)
      learner_log = run.learner_log(tail_chars=None)
      assert 'listening on unix:' in learner_log
      assert 'event loop uvloop' in learner_log  # the default, installed with seed
      time.sleep(3)  # A checkpoint or two.
      run.learner.send_signal(signal.SIGKILL)
      run.learner.wait(timeout=30)
      assert stat.S_ISSOCK(os.lstat(path).st_mode)  # Left behind by the killed learner.
      frames_at_kill = wait_for_frames(run, 0)
      # Same run directory: resumes, takes the stale socket away; on asyncio's own loop,
      # which serves the same actors (on uvloop) as well.
      run.start_learner(extra_flags=['--event_loop=asyncio'])
      deadline = time.monotonic() + 60
      while not all(run.actor_log(i, tail_chars=None).count('connected to learner') >= 2
                    for i in (0, 1)):
        assert time.monotonic() < deadline, run.actor_log(0) + run.actor_log(1)
        time.sleep(0.2)
      wait_for_frames(run, frames_at_kill + 2000)  # from the checkpoint's counters on
      assert 'event loop asyncio' in run.learner_log(tail_chars=None)
      assert 'event loop uvloop' in run.actor_log(0, tail_chars=None)
      assert all(actor.poll() is None for actor in run.actors)
  finally:
    if os.path.exists(path):
      os.unlink(path)
    os.rmdir(socket_dir)


def wait_for_frames(run: Run, frames: int, timeout_s: float = 120) -> int:
  """The run's env frames once at least `frames` (its progress.csv), within `timeout_s`."""
  deadline = time.monotonic() + timeout_s
  progress = os.path.join(run.logdir, 'progress.csv')
  while time.monotonic() < deadline:
    if os.path.exists(progress):
      with open(progress) as f:
        rows = f.read().splitlines()[1:]
      if rows and int(rows[-1].split(',')[1]) >= frames:
        return int(rows[-1].split(',')[1])
    assert run.learner.poll() is None, run.learner_log()
    time.sleep(0.5)
  raise TimeoutError(f'fewer than {frames} frames after {timeout_s} s:\n{run.learner_log()}')
