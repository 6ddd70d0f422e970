"""The operator's commands against a deployed stack (ops/cli.py registers them all).

doctor/ holds `chatguard doctor` and its checks; the other commands are one module each
(spend, mode, rotate, billing, traces, verify, first_call), over the shared aws.py (clients,
stack outputs), http.py (JSON over HTTP) and render.py (tables and money).
"""
