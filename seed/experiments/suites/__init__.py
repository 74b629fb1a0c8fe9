"""The learning suites users run (`seed suite NAME ...`): the DMC15 benchmark
(dmc15), the classic-control suite (classic_control) and one learning curve with its
data (learning_curve). Each trains through real learner and actor processes."""
