"""System tests: whole runs (learner and actor processes) end to end: resume after a kill, run modes, the API, run_local.sh, the experiment runner, benchmarks, the fault suite."""
