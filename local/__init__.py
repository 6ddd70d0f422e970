"""The offline runtime: the real ASL on moto's engine, handlers in-process, a local HTTP API.

Three rooms: engine/ (the ASL engine and its AWS stand-ins), server/ (the HTTP server of
`chatguard serve`) and commands/ (`chat`, `demo`, `serve` and what they print).
"""
