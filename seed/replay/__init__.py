"""Agent inputs: the unroll FIFO (on-policy) and replay buffers."""
