"""Wires a learner together: env probe, agent, server, batcher, trainer, checkpoints."""
import asyncio
import logging
import os
import signal
import threading
import time
from typing import Callable, Optional

import grpc

from seed import agents
from seed import settings
from seed.process import event_loop
from seed.transport import refusal_log, security
from seed.envs import EnvConfig
from seed.inference.batcher import Batcher
from seed.inference.env_state import EnvTable
from seed.inference.health import Health, start_health_server
from seed.inference.server import InferenceService, StreamLimits, start_server
from seed.transport.unix_socket import LocalServer
from seed.inference.step_processor import StepProcessor
from seed.inputs import build as inputs
from seed.run_dir import status
from seed.run_dir.layout import RunDir

from . import devices, tuning_report
from .checkpoint import Checkpointer
from .counters import Counters
from .metrics import Metrics
from .periodic_evaluation import PeriodicEvaluation
from .trainer import Trainer

_log = logging.getLogger(__name__)


# What a learner runs with: every learner setting (seed.settings.LEARNER), as its flags
# give them, and what the launch made of them: the stream limits, the actors' token and
# the server's TLS credentials.
LearnerOptions = settings.values_class('LearnerOptions', settings.LEARNER, extra=(
    ('limits', StreamLimits, StreamLimits()),
    ('auth_token', Optional[str], None),
    ('credentials', Optional[grpc.ServerCredentials], None)))


class Learner:
  """One learner process. `run()` serves until a signal or a stop condition."""

  def __init__(self, options: LearnerOptions):
    self.options = options
    if options.anneal_learning_rate and options.max_env_frames <= 0:
      raise ValueError('--anneal_learning_rate lowers the step sizes to 0 at --max_env_frames; '
                       f'set --max_env_frames to a frame count > 0 (got '
                       f'{options.max_env_frames})')
    self.stop_event = threading.Event()
    env_config = EnvConfig()
    self.env_name = env_config.name
    self.env_spec = env_config.spec()  # Football and DMLab: from the name, not an env
    agent_class = agents.agent_class(options.agent)
    # The agent's variables (its optimizers' too, made by the warm-up below) belong to
    # the devices of --learner_devices: one unless told otherwise.
    self.strategy = devices.strategy(options.learner_devices, options.agent,
                                     agent_class.several_devices_refusal)
    # --lockstep's one actor has one message in flight: its batches take the lanes in
    # turn, in the same order every run.
    inference_devices = devices.inference_devices(options.learner_devices,
                                                  options.inference_devices)
    with self.strategy.scope():
      self.agent = agent_class(env_spec=self.env_spec)
      self.counters = Counters()
      self.metrics = Metrics(options.logdir, self.counters, options.return_window,
                             summary_dir=options.summary_dir, num_seeds=self.agent.num_seeds,
                             log_train_steps=options.log_train_steps)
      self.tuning_report = (tuning_report.TuningReport(options.hypertune_metric)
                            if options.hypertune_metric else None)
      self.agent_input = inputs.agent_input(
          self.agent, options.agent, self.stop_event, seed=options.seed,
          lockstep=options.lockstep, replay_parameters=options.replay_parameters)
      self.processor = StepProcessor(
          self.agent, options.inference_batch_size, self.env_spec.frames_per_step,
          put_unroll=self.agent_input.put if options.train else _drop,
          on_episode=self.metrics.on_episode, on_batch=self.metrics.on_batch,
          counters=self.counters, devices=inference_devices)
      self.env_table = EnvTable(self.agent.initial_core_state, self.agent.acting_params,
                                self.agent.unroll_length, self.agent.unroll_overlap)
      # Every variable must exist before a checkpoint is read: warm up first.
      self.processor.warm_up()
    saved_replay = (self.agent_input if options.checkpoint_replay and
                    self.agent_input.saves_anything else None)
    self.checkpointer = Checkpointer(RunDir(options.logdir).checkpoints,
                                     self.agent.checkpoint_items(), self.counters,
                                     replay=saved_replay)
    self.resumed = self.checkpointer.restore_latest()
    if self.resumed and options.init_checkpoint:
      _log.warning('%s has a checkpoint of its own (%s): resuming from it; --init_checkpoint=%s '
                   'is ignored', options.logdir, self.checkpointer.latest,
                   options.init_checkpoint)
    elif options.init_checkpoint:
      self.checkpointer.restore_initial(options.init_checkpoint,
                                        load_counters=options.init_counters == 'continue')
    if self.resumed or options.init_checkpoint:
      self.agent.on_restored()
      self.metrics.restart_rates()
    # A resumed run acts from its first step as it did when it stopped.
    self.agent.observe_env_frames(self.counters.get('env_frames'))
    self.evaluation = (PeriodicEvaluation(options.logdir, options.eval_interval_s,
                                          options.eval_episodes, options.eval_video)
                       if options.eval_interval_s > 0 else None)
    self.trainer = Trainer(self.agent, self.agent_input, self.counters,
                           self.metrics.on_train, self.checkpointer,
                           options.checkpoint_interval_s, self.stop_event,
                           max_nonfinite_steps=options.max_nonfinite_steps,
                           on_checkpoint=self._on_checkpoint,
                           learning_rate_fraction=self._learning_rate_fraction
                           if options.anneal_learning_rate else None)
    self.port: Optional[int] = None
    self._service: Optional[InferenceService] = None

  def _on_checkpoint(self, prefix: str) -> None:
    """After each periodic checkpoint: the run files made durable, then an evaluation."""
    self.metrics.sync_files()
    if self.evaluation is not None:
      self.evaluation.on_checkpoint(prefix)

  def _learning_rate_fraction(self) -> float:
    """With --anneal_learning_rate: the share of the configured step sizes the next
    train step uses, 1 - frames played / max_env_frames (at least 0). From the
    counters, which a checkpoint keeps, so a resumed run continues the line."""
    played = self.counters.get('env_frames') / self.options.max_env_frames
    return max(0.0, 1.0 - played)

  def run(self) -> int:
    """Serves and trains; checkpoints on the way out. Returns the process exit code
    (`exit_code`).

    `finish_reason` is then set when the run reached --max_env_frames or
    --target_return (None when a signal stopped it).
    """
    self.finish_reason: Optional[str] = None
    if self.options.train:
      self.trainer.start()
    self._served = False
    self._final_checkpoint_lock = threading.Lock()
    self._final_checkpoint_done = False
    self._final_checkpoint_written = True  # False only when writing it failed
    self._tuning_failed = False
    try:
      event_loop.run(self._serve(), self.options.event_loop)
    finally:
      # The loop's end removed its handlers: a second Ctrl-C or SIGTERM must not
      # interrupt the final checkpoint.
      for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: _log.warning('already stopping: finishing the '
                                                      'checkpoint'))
      self._stop_training_and_checkpoint()
      if self.evaluation is not None:
        self.evaluation.close()
      self._tick()
      self._report_for_tuning()
      self.metrics.close()
    return self.exit_code()

  def exit_code(self) -> int:
    """How the process ends, once it stopped (also what the shutdown watchdog exits with):
      1  the trainer failed, the final checkpoint failed or was not finished, or a tuning
         trial's report could not be written: the run is not saved as it stands;
      0  the run reached its goal (finished.json written: a restart trains nothing);
      --stopped_exit_code  a signal stopped it before its goal, its checkpoint written.
    """
    if (self.trainer.error is not None or self._tuning_failed or
        not (self._final_checkpoint_done and self._final_checkpoint_written)):
      return 1
    if self.finish_reason is not None:
      # The marker a restarted learner exits by and the experiment runner skips runs by.
      try:
        status.mark_if_finished(self.options.logdir, self.counters.snapshot(),
                                    self.options.max_env_frames, self.options.target_return,
                                    self.metrics.mean_recent_return())
      except OSError as e:  # A restart resumes at its goal and finishes again.
        _log.error('could not write %s: %s; exit 1', RunDir(self.options.logdir).finished_json,
                   e)
        return 1
      return 0
    return self.options.stopped_exit_code

  def _final_checkpoint_state(self) -> str:
    if not self._final_checkpoint_done:
      return 'not finished'
    return 'written' if self._final_checkpoint_written else 'failed'

  def _tick(self) -> None:
    refusal_log.REFUSALS.flush()  # Counts of refusals a flood held back.
    service = self._service
    self.metrics.tick(self.agent_input.fill,
                      actor_streams=service.open_streams if service is not None else 0,
                      connected_envs=self.env_table.num_envs)

  def _stop_training_and_checkpoint(self) -> None:
    """Stops the trainer and writes the final checkpoint, once."""
    with self._final_checkpoint_lock:
      if self._final_checkpoint_done:
        return
      self.stop_event.set()
      if self.trainer.is_alive():
        self.trainer.join()
      if self.trainer.error is None and self._served:
        self._final_checkpoint_written = self.trainer.save_checkpoint()
      self._final_checkpoint_done = True

  async def _serve(self) -> None:
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
      loop.add_signal_handler(signum, self._on_signal, signum)
    _log.info('learner: event loop %s', event_loop.effective(self.options.event_loop))
    batcher = Batcher(self.processor, self.options.inference_batch_size,
                      self.options.max_wait_ms, lambda: service.active_envs(),
                      num_lanes=self.processor.num_lanes)
    self._service = service = InferenceService(
        self.env_name, self.env_spec, self.env_table, batcher, self.options.limits,
        auth_token=self.options.auth_token)
    health = Health()
    batcher.start()
    server, self.port = await start_server(service, self.options.server_address,
                                           self.options.max_message_mb << 20,
                                           self.options.credentials, extra_services=(health,))
    servers = [server]
    if self.options.local_socket:
      local_server = LocalServer(service.act, self.options.max_message_mb << 20)
      await local_server.start(self.options.local_socket)
      servers.append(local_server)
    if self.options.health_port:
      host = security.split_host_port(self.options.server_address)[0]
      servers.append(await start_health_server(health, host, self.options.health_port))
    await health.serving()
    RunDir(self.options.logdir).write_port(self.port)
    self._served = True
    try:
      next_tick = loop.time() + self.options.progress_interval_s
      while not self.stop_event.is_set():
        await asyncio.sleep(0.25)
        self._check_stop_conditions()
        if loop.time() >= next_tick:
          self._tick()
          self._report_for_tuning()
          next_tick += self.options.progress_interval_s
    finally:
      # The checkpoint first, off the event loop: whatever happens while the
      # server tears down, what was learnt is saved. Setting stop_event also
      # releases an inference thread blocked on a full input.
      self.stop_event.set()
      _exit_if_stuck(self.options.shutdown_limit_s, self.exit_code, self._final_checkpoint_state)
      if self.finish_reason is not None:
        # Each actor's next step is answered with Finished: it stops, where a stream
        # cut by the server's stop would have it reconnect forever.
        service.finish(self.finish_reason)
      await health.stopping()
      await loop.run_in_executor(None, self._stop_training_and_checkpoint)
      if self.finish_reason is not None:
        await _wait_for_streams_to_close(service, _FINISHED_NOTICE_S)
      stops = [('server', s.stop(grace=1.0)) for s in servers] + [('batcher', batcher.stop())]
      for name, stopping in stops:
        try:
          await asyncio.wait_for(stopping, timeout=10.0)
        except asyncio.TimeoutError:
          _log.warning('%s did not stop within 10 s; going on', name)

  def _report_for_tuning(self) -> None:
    mean_return = self.metrics.mean_recent_return()
    if self.tuning_report is None or mean_return is None or self._tuning_failed:
      return
    try:
      self.tuning_report.report(mean_return, self.counters.get('env_frames'))
    except tuning_report.ReportFailed as e:
      # The trial fails now rather than train to its end and report nothing.
      _log.error('%s; stopping (checkpoint first), exit 1: a trial that reports nothing '
                 'fails its sweep in silence', e)
      self._tuning_failed = True
      self.stop_event.set()

  def _check_stop_conditions(self) -> None:
    frames = self.counters.get('env_frames')
    if self.options.max_env_frames and frames >= self.options.max_env_frames:
      _log.info('reached max_env_frames=%d (at %d frames); stopping',
                self.options.max_env_frames, frames)
      self.finish_reason = (f'max_env_frames={self.options.max_env_frames} reached at '
                            f'{frames} frames')
      self.stop_event.set()
    mean_return = self.metrics.mean_recent_return()
    if (self.options.target_return is not None and mean_return is not None and
        mean_return >= self.options.target_return):
      _log.info('mean return %.1f over the last %d episodes reached target %.1f at %d frames; '
                'stopping', mean_return, self.options.return_window,
                self.options.target_return, frames)
      self.finish_reason = (f'mean return {mean_return:.2f} over the last '
                            f'{self.options.return_window} episodes reached target_return='
                            f'{self.options.target_return:g} at {frames} frames')
      self.stop_event.set()

  def _on_signal(self, signum: int) -> None:
    _log.info('received %s: checkpointing and stopping', signal.Signals(signum).name)
    self.stop_event.set()


# How long a finished learner waits for its actors to take their Finished: each gets it
# with the reply to its next step, within one step of its envs.
_FINISHED_NOTICE_S = 10.0


async def _wait_for_streams_to_close(service: InferenceService, limit_s: float) -> None:
  """Returns once no actor stream is open, or after `limit_s`."""
  deadline = asyncio.get_running_loop().time() + limit_s
  while service.open_streams and asyncio.get_running_loop().time() < deadline:
    await asyncio.sleep(0.05)
  if service.open_streams:
    _log.warning('%d actor streams still open %.0f s after the run finished; closing them',
                 service.open_streams, limit_s)


def _exit_if_stuck(limit_s: float, exit_code: Callable[[], int],
                   checkpoint_state: Callable[[], str]) -> None:
  """Ends the process if shutting down takes longer than `limit_s` (a watchdog), with the
  code the learner would have exited with: 0 only for a run that reached its goal and
  whose final checkpoint was written, never for one merely attempted."""
  def watch():
    time.sleep(limit_s)
    code = exit_code()
    _log.error('shutdown still not finished after %.0f s (--shutdown_limit_s); exiting '
               'with %d (final checkpoint: %s)', limit_s, code, checkpoint_state())
    logging.shutdown()
    os._exit(code)
  threading.Thread(target=watch, name='shutdown-watchdog', daemon=True).start()


def _drop(unroll) -> bool:
  del unroll
  return True
