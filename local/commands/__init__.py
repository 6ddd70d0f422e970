"""The local CLI commands (`chatguard chat`, `demo`, `serve`) and what they print.

- chat_demo_serve.py: their parser entry (`register`) and the three commands
- preflight.py: the checks run before anything starts (index, site), one line each
- limits.py: what the money settings admit, said at start-up
- chat_session.py, conversation.py: `chat`'s exchanges and the signed turns it keeps
- remote_chat.py: `chat --server URL`, one message to a running `serve`
- demo.py: the scripted demo in which each layer refuses in turn
- render.py: the plain-text rendering of one outcome

Nothing is re-exported here: `chatguard`'s parser imports chat_demo_serve.py only, and each
command loads the rest when it runs.
"""
