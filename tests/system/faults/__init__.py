"""Fault, load and hostile-input scenarios against real learner and actor processes.

  python -m tests.system.faults                      # every scenario but the soak, full counts
  python -m tests.system.faults --ci                 # the short counts CI runs
  python -m tests.system.faults checkpoint_kills --count 200

Each scenario module has `run(count, workdir) -> Outcome`, its `CI_COUNT` and
`FULL_COUNT`, and maybe `CI_OPTIONS` (keyword arguments of run() in CI); the table
printed at the end is the one in docs/reliability.md.
"""
