"""Starting our processes: flags from SEED_* variables (flag_env), allocator tuning at
start (malloc_tuning), and starting and watching child processes (local_processes)."""
