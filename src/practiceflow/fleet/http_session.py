"""The fleet's HTTP side: one pool of connections for every practice, and each practice's
session settled once.

:func:`settle_environment` reads once per practice what ``requests`` would read from the
environment on every request (proxies, CA bundle): 5% of a replica's CPU otherwise.
"""

from __future__ import annotations

import os

import requests
from requests.utils import get_environ_proxies

__all__ = ["http_connections", "settle_environment"]


def http_connections(budget_connections: int, owned: bool) -> int:
    """Connections the fleet's one HTTP pool keeps per host: one per thread that sends.

    The job threads send (about ``budget_connections`` of them); an owning replica's poll
    threads send as well, as many again. A pool smaller than its senders does not block
    (urllib3's ``block=False``): it opens a connection for each sender past its size and
    discards it after one answer ("Connection pool is full"), a new TCP (and TLS)
    handshake per request.
    """
    threads = max(2, budget_connections)
    return 2 * threads if owned else threads


def settle_environment(session: requests.Session, base_url: str) -> requests.Session:
    """Give a practice's ``session`` the environment's proxies and CA bundle for its
    ``base_url`` once, and stop it reading them per request (``trust_env``): its client
    sends only to that host, and sets its own credentials (no ``~/.netrc``). Returns it."""
    proxies = get_environ_proxies(base_url)
    bundle = os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE")
    session.trust_env = False
    session.proxies.update(proxies)
    if bundle:
        session.verify = bundle
    return session
