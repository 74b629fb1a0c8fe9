"""Test mode's parts: playing episodes in-process, the table of returns, video."""
