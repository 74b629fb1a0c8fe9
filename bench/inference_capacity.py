"""How far one learner's batched inference scales: simulated actors, 1 to 1,000 streams.

  python -m bench.inference_capacity --env atari --agent vtrace --streams 1,10,100,300,1000

A learner serving inference only (--notrain, as bench.throughput's inference rows) and,
for each stream count N in --streams, N simulated actors: streams that speak the real
protocol (hello, welcome, then step / actions) but step no env. Each sends one Step
(a pre-made observation of the env's spec, --envs_per_stream envs; over gRPC serialized
once at start, over the Unix socket as an actor sends it, the observations beside the
message) as soon as its previous actions arrive, after --think_ms (an env's step time,
0 for the learner's own limit). The streams run as asyncio tasks in --client_processes
processes, each stream on its own connection as a real actor's.

For each N, and each count of envs per message in --envs_per_stream, after every stream
is welcomed and --warmup_s has passed, it counts over --seconds: messages and env steps
(observations) served per second, frames per second (the env's frames per step), the
round trip p50/p99 of one stream (send, get actions), the learner's mean inference batch
(its progress.csv) and the CPU the learner and the clients used (% of one core), with
the learner's CPU per message and the messages one learner core serves, that CPU by
the learner's threads (its event loop, gRPC's threads, the inference lanes, TensorFlow's
own threads, the rest: bench.cpu_time.LEARNER_THREAD_PARTS) and what it is outside
TensorFlow's threads, which compute the model (a call's dispatch, and the arithmetic
TensorFlow runs on the calling lane, stay in the lanes' part). Everything is
bounded: at most MAX_STREAMS streams, --seconds per point, a deadline for connecting.

  python -m bench.inference_capacity --gpu_proxy --envs_per_stream 1,4,16,64 ...

serves the agent's real inference path with almost no arithmetic (one unit after the
flattened frames, no LSTM: bench.model_cost.GPU_PROXY_BINDINGS): what is left is the
learner's cost per message outside the model, which bounds a learner whose model runs
on a GPU.

Where the learner saturates, its CPU is near what its threads can use and obs/s stops
growing while the round trip grows with N (requests queue); where the clients saturate
instead, their CPU says so (the table prints both).
"""
import argparse
import asyncio
import contextlib
import csv
import functools
import json
import multiprocessing as mp
import os
import statistics
import sys
import tempfile
import time
from typing import Dict, List, Optional

import numpy as np

from bench import hardware
from bench import cpu_time
from seed.process import local_processes as processes
from seed.transport import unix_address
from seed.process.local_processes import learner_last_line

REPO = processes.REPO
MAX_STREAMS = 1000
CONNECT_TIMEOUT_S = 120.0
ACT_METHOD = '/seed.proto.Learner/Act'


def _client_process(address: str, spec_json: str, env_name: str, first_actor_id: int,
                    num_streams: int, envs_per_stream: int, think_ms: float,
                    seconds: float, out_path: str, ready, go) -> None:
  """Runs `num_streams` simulated actors; writes their counts and round trips to
  `out_path` (JSON) and `out_path`.npy (round trips in ms, float32)."""
  sys.path.insert(0, REPO)
  from grpc import aio  # pylint: disable=g-import-not-at-top
  from seed.transport import unix_socket  # pylint: disable=g-import-not-at-top
  from seed.transport import unix_address  # pylint: disable=g-import-not-at-top
  from seed import protocol  # pylint: disable=g-import-not-at-top
  from seed.envs.spec import EnvSpec  # pylint: disable=g-import-not-at-top
  from seed.proto import actor_learner_pb2 as pb  # pylint: disable=g-import-not-at-top

  spec = EnvSpec(**json.loads(spec_json))
  observations = np.zeros((envs_per_stream,) + tuple(spec.observation_shape),
                          spec.observation_dtype)
  rewards, flags = np.zeros(envs_per_stream, np.float32), np.zeros(envs_per_stream, bool)
  step_bytes = protocol.make_step(observations, rewards, flags, flags).SerializeToString()
  state = {'counting': False, 'replies': 0, 'round_trips': []}
  local = unix_address.is_local_address(address)

  @contextlib.asynccontextmanager
  async def open_stream():
    """Bytes in, bytes out (no per-step encoding), over gRPC or the learner's Unix socket."""
    if unix_address.is_local_address(address):
      async with unix_socket.connect(unix_address.socket_path(address), None,
                                         64 << 20) as call:
        yield call, functools.partial(call.read, raw=True)
    else:
      async with aio.insecure_channel(address) as channel:
        call = channel.stream_stream(ACT_METHOD)()
        yield call, call.read

  async def stream(actor_id: int, welcomed: asyncio.Event, stop: asyncio.Event) -> None:
    async with open_stream() as (call, read):
      hello = protocol.make_hello(spec, actor_id=actor_id, run_id=f'load-{actor_id}',
                                  num_envs=envs_per_stream, env_name=env_name)
      await call.write(hello.SerializeToString())
      welcome = pb.LearnerMessage.FromString(await read())
      if welcome.WhichOneof('kind') != 'welcome':
        raise RuntimeError(f'stream {actor_id}: expected a welcome, got {welcome}')
      welcomed.set()
      while not stop.is_set():
        if think_ms > 0:
          await asyncio.sleep(think_ms / 1000)
        sent = time.perf_counter()
        if local:  # As an actor of this host sends: the observations beside the message.
          await call.write_step(observations, rewards, flags, flags)
        else:
          await call.write(step_bytes)
        reply = await read()
        if reply is aio.EOF:
          raise RuntimeError(f'stream {actor_id}: the learner ended the stream')
        if state['counting']:
          state['replies'] += 1
          state['round_trips'].append(1000 * (time.perf_counter() - sent))
      await call.done_writing()

  async def main() -> dict:
    stop = asyncio.Event()
    welcomed = [asyncio.Event() for _ in range(num_streams)]
    tasks = [asyncio.create_task(stream(first_actor_id + i, welcomed[i], stop))
             for i in range(num_streams)]
    waiting = asyncio.gather(*(w.wait() for w in welcomed))
    done, _ = await asyncio.wait([waiting] + tasks, timeout=CONNECT_TIMEOUT_S,
                                 return_when=asyncio.FIRST_COMPLETED)
    if waiting not in done:
      for task in tasks:
        task.cancel()
      failed = [t for t in done if t is not waiting and t.exception()]
      raise RuntimeError(f'{sum(w.is_set() for w in welcomed)} of {num_streams} streams '
                         f'welcomed within {CONNECT_TIMEOUT_S:g} s'
                         + (f'; {failed[0].exception()}' if failed else ''))
    ready.set()
    while not go.is_set():  # The parent says when every client process is connected.
      await asyncio.sleep(0.01)
    cpu_start, start = time.process_time(), time.perf_counter()
    state['counting'] = True
    await asyncio.sleep(seconds)
    state['counting'] = False
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    stop.set()
    await asyncio.wait(tasks, timeout=30)
    return {'replies': state['replies'], 'seconds': elapsed, 'cpu_s': cpu}

  result = asyncio.run(main())
  np.save(out_path + '.npy', np.asarray(state['round_trips'], np.float32))
  with open(out_path, 'w') as f:
    json.dump(result, f)


def _progress_rows(logdir: str) -> List[dict]:
  path = os.path.join(logdir, 'progress.csv')
  if not os.path.exists(path):
    return []
  with open(path) as f:
    return list(csv.DictReader(f))


def measure(address: str, learner_pid: int, logdir: str, spec_json: str, env_name: str,
            num_streams: int, envs_per_stream: int, point: int, args) -> Dict[str, float]:
  """One point of the table: `num_streams` streams of `envs_per_stream` envs each over
  `args.client_processes`."""
  ctx = mp.get_context('spawn')
  ready = [ctx.Event() for _ in range(args.client_processes)]
  go = ctx.Event()
  shares = [num_streams // args.client_processes + (i < num_streams % args.client_processes)
            for i in range(args.client_processes)]
  with tempfile.TemporaryDirectory(prefix='seed-load-') as scratch:
    outs = [os.path.join(scratch, f'client_{i}.json') for i in range(len(shares))]
    clients = [ctx.Process(target=_client_process, args=(
        address, spec_json, env_name, 100_000 * (point + 1) + 10_000 * i, share,
        envs_per_stream, args.think_ms, args.seconds, outs[i], ready[i], go))
               for i, share in enumerate(shares) if share > 0]
    for client in clients:
      client.start()
    try:
      deadline = time.monotonic() + CONNECT_TIMEOUT_S + 60
      for client, event in zip(clients, ready):
        while not event.wait(0.2):
          if client.exitcode is not None or time.monotonic() > deadline:
            raise RuntimeError(f'a client of {num_streams} streams did not connect (exit '
                               f'{client.exitcode}); learner: {learner_last_line(logdir)}')
      time.sleep(args.warmup_s)
      rows_before = len(_progress_rows(logdir))
      learner_cpu_before = cpu_time.cpu_s(learner_pid)
      threads_before = cpu_time.learner_thread_cpu_s(learner_pid)
      go.set()
      time.sleep(args.seconds)
      learner_cpu = cpu_time.cpu_s(learner_pid) - learner_cpu_before
      threads_after = cpu_time.learner_thread_cpu_s(learner_pid)
      for client in clients:
        client.join(timeout=60)
        if client.exitcode != 0:
          raise RuntimeError(f'a client of {num_streams} streams exited {client.exitcode}')
    finally:
      for client in clients:
        if client.is_alive():
          client.kill()
    results = [json.load(open(out)) for out, share in zip(outs, shares) if share > 0]
    round_trips = np.concatenate([np.load(out + '.npy', allow_pickle=False)
                                  for out, share in zip(outs, shares) if share > 0])
  rows = _progress_rows(logdir)[rows_before:]
  batches = [float(r['mean_inference_batch']) for r in rows
             if float(r.get('mean_inference_batch') or 0) > 0]
  seconds = statistics.mean(r['seconds'] for r in results)
  messages_per_s = sum(r['replies'] for r in results) / seconds
  messages = messages_per_s * args.seconds
  return {
      'learner_cpu_ms_per_message_by_part': {
          part: (1000 * (threads_after[part] - threads_before[part]) / messages
                 if messages else None) for part in cpu_time.LEARNER_THREAD_PARTS},
      'messages_per_s': messages_per_s,
      'obs_per_s': messages_per_s * envs_per_stream,
      'learner_cpu_ms_per_message': (1000 * learner_cpu / args.seconds / messages_per_s
                                     if messages_per_s else None),
      'round_trip_ms_p50': float(np.percentile(round_trips, 50)) if len(round_trips) else None,
      'round_trip_ms_p99': float(np.percentile(round_trips, 99)) if len(round_trips) else None,
      'mean_batch': statistics.mean(batches) if batches else None,
      'learner_cpu_pct': 100 * learner_cpu / args.seconds,
      'client_cpu_pct': 100 * sum(r['cpu_s'] for r in results) / seconds,
  }


def _env_spec(gin_file: str, gin_bindings: List[str]):
  """(EnvSpec as JSON, env name) of the config, as the learner probes it."""
  import dataclasses  # pylint: disable=g-import-not-at-top
  sys.path.insert(0, REPO)
  from seed import config  # pylint: disable=g-import-not-at-top
  from seed.envs import EnvConfig  # pylint: disable=g-import-not-at-top
  config.parse_gin([gin_file], gin_bindings, skip_unknown=True)
  env_config = EnvConfig()
  return json.dumps(dataclasses.asdict(env_config.spec())), env_config.name


def parse_counts(text: str, flag: str, largest: int) -> List[int]:
  """'1,4,16' -> [1, 4, 16]; each count in 1..`largest`, else a ValueError naming `flag`."""
  try:
    counts = [int(part) for part in text.split(',') if part.strip()]
  except ValueError:
    raise ValueError(f'{flag} {text!r} is not a comma-separated list of integers') from None
  bad = [n for n in counts if not 1 <= n <= largest]
  if not counts or bad:
    raise ValueError(f'{flag} {text!r}: each count must be in 1..{largest}'
                     + (f' (not {bad})' if bad else ''))
  return counts


def parse_streams(text: str) -> List[int]:
  """'1,10,100' -> [1, 10, 100]; each count in 1..MAX_STREAMS."""
  return parse_counts(text, '--streams', MAX_STREAMS)


def _fmt(value: Optional[float], digits: int = 0) -> str:
  return '—' if value is None else f'{value:,.{digits}f}'


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--env', default='atari', help='gin/<env>/<agent>.gin')
  parser.add_argument('--agent', default='vtrace')
  parser.add_argument('--gin_bindings', action='append', default=[])
  parser.add_argument('--streams', default='1,10,100,300,1000',
                      help=f'comma-separated stream counts, each at most {MAX_STREAMS}')
  parser.add_argument('--envs_per_stream', default='1',
                      help='envs in each message, comma-separated: a row per count and '
                      'stream count')
  parser.add_argument('--gpu_proxy', action='store_true',
                      help='serve a policy of almost no cost, as a GPU learner would '
                      '(bench.model_cost.GPU_PROXY_BINDINGS)')
  parser.add_argument('--think_ms', type=float, default=0.0,
                      help='pause before each step, as an env step would take')
  parser.add_argument('--client_processes', type=int, default=1)
  parser.add_argument('--seconds', type=float, default=10.0, help='measured per point')
  parser.add_argument('--warmup_s', type=float, default=3.0)
  parser.add_argument('--inference_batch_size', type=int, default=64)
  parser.add_argument('--learner_flag', action='append', default=[],
                      help='extra learner flag, repeatable')
  parser.add_argument('--transport', choices=('grpc', 'unix'), default='grpc',
                      help="the clients' transport: gRPC on loopback, or the learner's "
                      '--local_socket (seed.transport.unix_socket)')
  parser.add_argument('--out', help='also write the table to this markdown file')
  args = parser.parse_args(argv)
  try:
    counts = parse_streams(args.streams)
    envs_per_stream = parse_counts(args.envs_per_stream, '--envs_per_stream',
                                   args.inference_batch_size)
    if args.gpu_proxy:
      from bench import model_cost  # pylint: disable=g-import-not-at-top
      args.gin_bindings += model_cost.gpu_proxy_bindings(args.agent)
  except ValueError as e:
    parser.error(str(e))
  if not 1 <= args.client_processes <= 64:
    parser.error(f'--client_processes {args.client_processes}: accepted 1..64')
  if not 0 < args.seconds <= 600:
    parser.error(f'--seconds {args.seconds:g}: accepted (0, 600]')
  gin_file = os.path.join(REPO, 'gin', args.env, f'{args.agent}.gin')
  if not os.path.exists(gin_file):
    parser.error(f'no config {gin_file}')
  spec_json, env_name = _env_spec(gin_file, args.gin_bindings)
  frames_per_step = json.loads(spec_json).get('frames_per_step', 1)

  proxy = ' (GPU proxy: a policy of almost no cost)' if args.gpu_proxy else ''
  lines = [hardware.describe(),
           f'{args.env}/{args.agent}{proxy}, {os.cpu_count()} CPUs, think {args.think_ms:g} '
           f'ms, {args.client_processes} client process(es) over {args.transport}; '
           f'{args.seconds:g} s per point; {frames_per_step} frames per env step; learner '
           f'flags {args.learner_flag}', '',
           '| envs per message | streams | messages/s | env steps/s | frames/s | round trip '
           'p50 / p99 (ms) | mean batch | learner CPU (% of a core) | learner CPU per '
           'message (ms) | of which: event loop / gRPC / inference lanes / TensorFlow / '
           'other threads | outside TensorFlow\'s threads | messages/s per learner core | '
           'clients CPU (% of a core) |',
           '|---:|---:|---:|---:|---:|---|---:|---:|---:|---|---:|---:|---:|']
  print('\n'.join(lines), flush=True)
  with tempfile.TemporaryDirectory(prefix='seed-capacity-') as logdir:
    learner = processes.start_learner(
        logdir, args.agent,
        [f'--gin_file={gin_file}', '--notrain', '--progress_interval_s=0.5',
         '--checkpoint_interval_s=1e9', f'--inference_batch_size={args.inference_batch_size}',
         f'--max_actor_streams={max(counts) + 8}']
        + ([f'--local_socket={os.path.join(logdir, "learner.sock")}']
           if args.transport == 'unix' else [])
        + [f'--gin_bindings={b}' for b in args.gin_bindings] + args.learner_flag)
    try:
      port = processes.wait_for_port(learner, logdir)
      address = (f'{unix_address.SCHEME}{os.path.join(logdir, "learner.sock")}'
                 if args.transport == 'unix' else f'127.0.0.1:{port}')
      points = [(envs, streams) for envs in envs_per_stream for streams in counts]
      for point, (envs, num_streams) in enumerate(points):
        row = measure(address, learner.pid, logdir, spec_json, env_name, num_streams, envs,
                      point, args)
        cpu_share = row['learner_cpu_pct'] / 100
        per_core = row['messages_per_s'] / cpu_share if cpu_share > 0 else None
        by_part = row['learner_cpu_ms_per_message_by_part']
        outside_tensorflow = (None if by_part['TensorFlow'] is None else
                              sum(v for k, v in by_part.items() if k != 'TensorFlow'))
        line = (f'| {envs} | {num_streams:,} | {_fmt(row["messages_per_s"])} | '
                f'{_fmt(row["obs_per_s"])} | {_fmt(row["obs_per_s"] * frames_per_step)} | '
                f'{_fmt(row["round_trip_ms_p50"], 2)} / {_fmt(row["round_trip_ms_p99"], 2)} | '
                f'{_fmt(row["mean_batch"], 1)} | {_fmt(row["learner_cpu_pct"])} | '
                f'{_fmt(row["learner_cpu_ms_per_message"], 2)} | '
                f'{" / ".join(_fmt(v, 2) for v in by_part.values())} | '
                f'{_fmt(outside_tensorflow, 2)} | {_fmt(per_core)} | '
                f'{_fmt(row["client_cpu_pct"])} |')
        lines.append(line)
        print(line, flush=True)
    finally:
      processes.stop([learner], timeout_s=120)
  if args.out:
    with open(args.out, 'w') as f:
      f.write('\n'.join(lines) + '\n')
  return 0


if __name__ == '__main__':
  sys.exit(main())
