"""Refusals are logged at a bounded rate per peer (seed/transport/refusal_log.py), with a count of
the lines held back: a client opening bad streams in a loop cannot fill the log."""
import logging

import pytest

from seed.transport import refusal_log


@pytest.mark.parametrize('peer, key', [
    ('ipv4:198.18.0.2:58778', 'ipv4:198.18.0.2'),
    ('ipv6:[::1]:40000', 'ipv6:[::1]'),
    ('unix:pid 4242 uid 1000', 'unix:uid 1000'),
    ('unix:?', 'unix:?'),
])
def test_a_peer_is_its_host_not_its_port_or_pid(peer, key):
  assert refusal_log.peer_key(peer) == key


class Clock:
  def __init__(self):
    self.now = 100.0

  def __call__(self):
    return self.now


def test_each_peer_gets_a_few_lines_a_window_then_a_count(caplog):
  clock = Clock()
  log = refusal_log.RefusalLog(logging.getLogger('test.refusals'), per_window=3,
                               window_s=60, clock=clock)
  with caplog.at_level(logging.WARNING, logger='test.refusals'):
    for port in range(10):
      log.refused(f'ipv4:10.0.0.1:{5000 + port}', 'bad frame')
    log.refused('ipv4:10.0.0.2:5000', 'bad token')  # another peer: its own lines
    lines = [r.getMessage() for r in caplog.records]
    assert lines[:3] == ['refused ipv4:10.0.0.1:5000: bad frame',
                         'refused ipv4:10.0.0.1:5001: bad frame',
                         'refused ipv4:10.0.0.1:5002: bad frame (further refusals of '
                         'ipv4:10.0.0.1 are counted, not logged, for 60 s)']
    assert lines[3:] == ['refused ipv4:10.0.0.2:5000: bad token']
    caplog.clear()
    clock.now += 60
    log.refused('ipv4:10.0.0.1:6000', 'bad frame')
    assert [r.getMessage() for r in caplog.records] == [
        '7 more refusals of ipv4:10.0.0.1 were not logged (at most 3 a peer every 60 s)',
        'refused ipv4:10.0.0.1:6000: bad frame']


def test_a_flood_that_stops_is_counted_when_flushed(caplog):
  clock = Clock()
  log = refusal_log.RefusalLog(logging.getLogger('test.refusals'), per_window=1,
                               window_s=10, clock=clock)
  with caplog.at_level(logging.WARNING, logger='test.refusals'):
    for _ in range(5):
      log.refused('unix:pid 7 uid 0', 'bad frame')
    log.flush()  # the window has not ended: nothing yet
    assert len(caplog.records) == 1
    clock.now += 10
    log.flush()
    assert caplog.records[-1].getMessage() == (
        '4 more refusals of unix:uid 0 were not logged (at most 1 a peer every 10 s)')
    log.flush()
    assert len(caplog.records) == 2  # counted once


def test_the_table_of_peers_stays_bounded(monkeypatch):
  monkeypatch.setattr(refusal_log, 'MAX_PEERS', 8)
  clock = Clock()
  log = refusal_log.RefusalLog(logging.getLogger('test.refusals'), clock=clock)
  for host in range(100):
    log.refused(f'ipv4:10.0.1.{host}:1', 'bad frame')
  assert len(log._windows) <= 8  # pylint: disable=protected-access
