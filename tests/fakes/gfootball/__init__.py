"""A stand-in for gfootball (tests/fakes on sys.path): see gfootball/env."""
