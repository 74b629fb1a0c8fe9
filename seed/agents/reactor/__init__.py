"""Reactor (Gruslys et al., 2018): beta-LOO policy gradient, distributional Retrace,
prioritized sequence replay."""

from seed.agents.registry import Registration

REGISTERED = (
    Registration('reactor', 'seed.agents.reactor.agent:ReactorAgent', 'ReactorConfig'),
)
