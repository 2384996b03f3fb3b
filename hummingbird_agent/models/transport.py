"""TLS of the model clients: the deployment's CA bundle (REQUESTS_CA_BUNDLE / SSL_CERT_FILE) as one
SSLContext every adapter hands to its SDK's HTTP client."""

from __future__ import annotations

import ssl


def tls_context(ca_bundle: str | None) -> ssl.SSLContext | None:
    """A verifying context trusting `ca_bundle`; None keeps the SDK's default trust store."""
    return ssl.create_default_context(cafile=ca_bundle) if ca_bundle else None
