"""The exit codes a seed process ends with, besides 0, declared once: the learner and the
actor exit with them, and what starts them (seed train, seed-job, the experiment runner)
reads them. docs/deployment.md, section 7, has the table by process."""

# A start refused for a settings mistake, said in one line without a traceback (an
# actor's also when the learner refused it: its token, its specs, TLS on one side only).
BAD_SETTINGS = 2
# An actor that found no learner for --learner_lost_limit_s: neither a mistake of its
# settings nor a crash, and starting it again would only wait again.
LEARNER_LOST = 3
