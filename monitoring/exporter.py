"""The HTTP endpoint every reelgen service serves on its metrics port: /metrics from a Prometheus registry and
/healthz from a check ("ok", or 503 with what is wrong).

Standard library and prometheus_client only: the inference daemon serves it too, and must not import the
orchestration (Redis, Celery) to do so.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from socketserver import ThreadingMixIn
from typing import TYPE_CHECKING, Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app

if TYPE_CHECKING:
    from wsgiref.types import StartResponse, WSGIEnvironment

#: a health check: None when healthy, else a sentence saying what is wrong
HealthCheck = Callable[[], str | None]


class _ThreadingWSGIServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        return  # a scrape every few seconds is not news


def _plain(start_response: StartResponse, status: str, text: str) -> list[bytes]:
    start_response(status, [("Content-Type", "text/plain; charset=utf-8")])
    return [text.encode()]


class MetricsServer:
    """/metrics from a registry and /healthz from a check, on a thread; `port` is the bound port."""

    def __init__(
        self,
        registry: CollectorRegistry,
        host: str,
        port: int,
        health: HealthCheck = lambda: None,
    ) -> None:
        metrics_app = make_wsgi_app(registry)

        def app(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
            if environ.get("PATH_INFO") == "/healthz":
                problem = health()
                if problem is None:
                    return _plain(start_response, "200 OK", "ok\n")
                return _plain(start_response, "503 Service Unavailable", problem + "\n")
            served: Iterable[bytes] = metrics_app(environ, start_response)
            return served

        self._server = make_server(host, port, app, _ThreadingWSGIServer, handler_class=_QuietHandler)
        self.port = int(self._server.server_port)
        self._thread = threading.Thread(target=self._server.serve_forever, name="metrics", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
