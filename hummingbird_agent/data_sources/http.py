"""requests sessions of the HTTP data sources: reads only, retried by urllib3 on 429/5xx with backoff."""

from __future__ import annotations

import requests
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry


def read_retry(total: int, backoff_s: float) -> Retry:
    """One immutable policy for GETs: 429/5xx and read timeouts retried with backoff (Retry-After honoured);
    redirects are left to the caller, which re-checks each target."""
    return Retry(total=total, backoff_factor=backoff_s, status_forcelist=(429, 500, 502, 503, 504),
                 allowed_methods=("GET",), raise_on_status=False, redirect=False)


def retrying_session(retry: Retry) -> requests.Session:
    session = requests.Session()
    adapter = HTTPAdapter(max_retries=retry)
    session.mount("https://", adapter)
    session.mount("http://", adapter)
    return session
