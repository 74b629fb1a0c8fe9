"""The names an agent config may choose among (torsos, torso dtypes, activations,
initializers), apart from the TensorFlow modules that build them, so that the configs
check a choice without importing TensorFlow."""

TORSOS = ('mlp', 'nature', 'impala_shallow', 'small_conv')
# 'auto' picks a torso from the observation rank.
TORSO_CHOICES = ('auto',) + TORSOS
# The dtypes a torso's arithmetic may run in (its variables stay float32); 'auto' is
# bfloat16 where the learner's device multiplies it in hardware, else float32
# (seed.agents.common.native_bfloat16).
TORSO_DTYPES = ('float32', 'bfloat16', 'auto')
ACTIVATIONS = ('relu', 'tanh')
INITIALIZERS = ('glorot', 'orthogonal')
