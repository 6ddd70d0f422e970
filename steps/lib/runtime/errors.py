"""The error hierarchy of every step.

A class name here is what the state machine's ``ErrorEquals`` matches (Lambda reports an
unhandled exception's class name as the error type), so a test checks that every name the
ASL mentions exists below. Expected outcomes (forbidden, limited, degraded) are result
values, never exceptions: an exception always means "fail closed".
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
