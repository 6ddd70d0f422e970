"""The offline runtime: the real ASL on moto's engine, handlers in-process, a local HTTP API."""
