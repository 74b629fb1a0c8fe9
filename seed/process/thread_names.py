"""Names the operating system shows for the learner's own threads.

Why: Python 3.11 keeps a thread's name to itself, so `top -H`, py-spy and
`bench.inference_capacity`'s CPU by thread see every thread of ours as the process's
name and cannot tell the inference lane from the trainer or the event loop. Linux
takes a thread's name (at most 15 bytes) written to /proc/thread-self/comm.
"""

OS_NAME_BYTES = 15  # Linux's TASK_COMM_LEN, less the terminating zero


def name_this_thread(name: str) -> None:
  """Gives the calling thread `name` (cut to 15 bytes) where the OS shows thread names;
  elsewhere nothing: the name is for observers only."""
  try:
    with open('/proc/thread-self/comm', 'w') as f:
      f.write(name.encode()[:OS_NAME_BYTES].decode(errors='ignore'))
  except OSError:
    pass
