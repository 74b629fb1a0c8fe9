"""Unit tests: one process, no server, no child process; pure functions against numbers worked by hand, one class or module at a time."""
