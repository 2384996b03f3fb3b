"""Fake Google OAuth token endpoint for Vertex AI tests: a service-account file whose `token_uri` points here
gets an access token for its signed JWT assertion, as google-auth expects."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.servers.base import FakeHTTPServer, Request, Response, json_response

ACCESS_TOKEN = "ya29.fake-vertex-token"


class GoogleTokenServer(FakeHTTPServer):
    name = "google-oauth"

    def __init__(self) -> None:
        super().__init__()
        self.assertions: list[str] = []
        self.route("POST", r"/token", self._token)

    def _token(self, req: Request) -> Response:
        form = req.form()
        if form.get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer":
            return json_response({"error": "unsupported_grant_type"}, 400)
        self.assertions.append(str(form.get("assertion")))
        return json_response({"access_token": ACCESS_TOKEN, "expires_in": 3600, "token_type": "Bearer"})

    def service_account_file(self, directory: Path) -> Path:
        """A service-account JSON with a fresh RSA key whose tokens come from this server."""
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
        info: dict[str, Any] = {
            "type": "service_account", "project_id": "test-project", "private_key_id": "k1", "private_key": pem,
            "client_email": "agent@test-project.iam.gserviceaccount.com", "client_id": "1",
            "token_uri": f"{self.url}/token"}
        path = directory / "service-account.json"
        path.write_text(json.dumps(info))
        return path
