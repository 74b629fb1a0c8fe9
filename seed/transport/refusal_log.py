"""Log lines for refused streams, at a bounded rate per peer.

Every refusal (a bad frame, a bad token, a stream past --max_actor_streams) ends one
stream with a status, and the learner says so in its log. A peer that opens bad streams
in a loop would then fill the log (and the disk under it) as fast as it can connect: so
each peer gets at most PER_WINDOW lines per WINDOW_S, and the first line after a quiet
spell says how many were not shown. A peer is its host: a client that reconnects gets a
new port each time (gRPC's `ipv4:1.2.3.4:5678`), and a local one a new pid (the Unix
socket's `unix:pid 12 uid 1000`), so both are keyed without them.
"""
import logging
import re
import threading
import time
from typing import Callable, Dict, List

PER_WINDOW = 5
WINDOW_S = 60.0
# Peers remembered at most: a flood from many addresses must not grow the table without end.
MAX_PEERS = 4096

_PORT = re.compile(r'^(ipv4:[^:]+|ipv6:\[[^\]]*\]|ipv6:[^\[].*?)(:\d+)?$')
_UNIX_PID = re.compile(r'^unix:pid \d+ (uid \d+)$')


def peer_key(peer: str) -> str:
  """The host part of a gRPC or Unix socket peer: what one client keeps across streams."""
  unix = _UNIX_PID.match(peer)
  if unix:
    return f'unix:{unix.group(1)}'
  match = _PORT.match(peer)
  return match.group(1) if match else peer


class _Window:
  __slots__ = ('started', 'shown', 'hidden')

  def __init__(self, started: float):
    self.started = started
    self.shown = 0
    self.hidden = 0


class RefusalLog:
  """`refused(peer, message)` logs at WARNING, PER_WINDOW lines per peer per WINDOW_S."""

  def __init__(self, logger: logging.Logger, per_window: int = PER_WINDOW,
               window_s: float = WINDOW_S, clock: Callable[[], float] = time.monotonic):
    self._logger = logger
    self._per_window = per_window
    self._window_s = window_s
    self._clock = clock
    self._windows: Dict[str, _Window] = {}
    self._lock = threading.Lock()  # gRPC's and the socket's handlers share one log

  def refused(self, peer: str, message: str) -> None:
    """Logs `refused PEER: MESSAGE`, unless this peer used up its lines for now."""
    key = peer_key(peer)
    now = self._clock()
    with self._lock:
      window = self._windows.get(key)
      if window is None or now - window.started >= self._window_s:
        if window is None and len(self._windows) >= MAX_PEERS:
          self._forget(now)
        self._log_hidden(key, window.hidden if window is not None else 0)
        window = self._windows[key] = _Window(now)
      if window.shown >= self._per_window:
        window.hidden += 1
        return
      window.shown += 1
      last = window.shown == self._per_window
    self._logger.warning('refused %s: %s%s', peer, message,
                         f' (further refusals of {key} are counted, not logged, for '
                         f'{self._window_s:.0f} s)' if last else '')

  def flush(self) -> None:
    """Logs the count of lines held back in windows that have ended (a flood that stopped)."""
    now = self._clock()
    with self._lock:
      ended: List[str] = [key for key, w in self._windows.items()
                          if now - w.started >= self._window_s]
      for key in ended:
        self._log_hidden(key, self._windows.pop(key).hidden)

  def _log_hidden(self, key: str, hidden: int) -> None:
    if hidden:
      self._logger.warning('%d more refusals of %s were not logged (at most %d a peer every '
                           '%.0f s)', hidden, key, self._per_window, self._window_s)

  def _forget(self, now: float) -> None:
    """Drops ended windows (their counts logged); if none ended, the oldest."""
    for key in [k for k, w in self._windows.items() if now - w.started >= self._window_s]:
      self._log_hidden(key, self._windows.pop(key).hidden)
    if len(self._windows) >= MAX_PEERS:
      oldest = min(self._windows, key=lambda k: self._windows[k].started)
      del self._windows[oldest]


# The learner's one log of refusals: both transports' handlers write to it.
REFUSALS = RefusalLog(logging.getLogger('seed.refusals'))
