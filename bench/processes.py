"""Moved to seed/local_processes.py (the experiment runner uses it); bench/ imports it here."""
from seed.local_processes import (REPO, child_env, sigterm_raises, start_actor, start_learner,
                                  stop, wait_for_port)

__all__ = ['REPO', 'child_env', 'sigterm_raises', 'start_actor', 'start_learner', 'stop',
           'wait_for_port']
