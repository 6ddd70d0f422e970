"""The error hierarchy of every step.

Lambda reports an unhandled exception's class name as the error type, which is what an
ASL ``ErrorEquals`` matches. The ASL routes on one class by name: ``NotSent`` from Invoke
goes to ReleaseReservation (nothing was sent, so the reservation is released). Every other
class here falls to ``States.ALL`` and fails closed; its name still reaches the execution's
``$.failure`` and the step's log, so it says what went wrong. tests/test_stage_table.py
fails if the ASL names a class that is not defined below. Expected outcomes (forbidden,
limited, degraded) are result values, never exceptions: an exception always means "fail
closed".
"""

from __future__ import annotations


class ChatguardError(Exception):
    """Base class: anything raised on purpose by chatguard."""


class SettingsError(ChatguardError):
    """The configuration is invalid; the step refuses to run on it."""


class BadRequest(ChatguardError):
    """The client's request breaks the HTTP contract (answered with 400, nothing written)."""


class IdentityError(ChatguardError):
    """The viewer address is missing or malformed: no visitor, so no quota, so no call."""


class DependencyUnavailable(ChatguardError):
    """DynamoDB, SSM or another AWS dependency failed; the request fails closed."""


class KnowledgeError(ChatguardError):
    """The knowledge artifact is missing, corrupted or built for another embedder."""


class ModelError(ChatguardError):
    """The model call failed (timeout, throttling, 5xx, malformed answer)."""


class EmbeddingError(ChatguardError):
    """The embedding call failed before the model call."""


class ReconcileError(ChatguardError):
    """Settling a reservation failed; the reservation stands (over-counts, never under)."""


class NotSent(ChatguardError):
    """S5 refused to call the model: what it would send does not fit the reservation it
    carries. Nothing was sent, so the state machine releases the reservation (503)."""
