"""The secrets `chatguard rotate` rotates, each with the setting that names its SSM
parameter: a leaf, so the parser offers the choices without importing the rotation."""

from __future__ import annotations

PARAMETERS = {
    "origin-secret": "origin_secret_param",
    "salt": "salt_param",
    "signing-key": "signing_key_param",
}
