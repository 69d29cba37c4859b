"""The gRPC server: ``v1.Flow`` plus health checking and reflection, with TLS and tokens.

:class:`ShimServer` binds one address (127.0.0.1 unless told otherwise), serves
the Flow servicer, rackcron's ``rackcron.v1.Rollouts`` (``rackcron.shim.rollouts``) (and,
when configured, rackcron's own ``rackcron.v1.Reconciler``,
see ``rackcron.shim.extras``) on a thread pool of ``workers`` threads (the store's
connection pool is sized to match by the caller: see ``rackcron serve``), and
answers ``grpc.health.v1.Health`` and server reflection so generic clients such
as ``grpcurl`` work without the ``.proto`` files.

Security, all optional and combinable: TLS with a server certificate; client
certificates verified against a CA (mTLS), refused in the handshake otherwise;
bearer tokens (``authorization: Bearer <token>`` metadata, each with a name and a
scope: ``rackcron.shim.tokens``) compared in constant time, a request without a valid
one being UNAUTHENTICATED before any handler runs, one whose token's scope is short of
what the call needs (``rackcron.shim.access``) PERMISSION_DENIED, also before, and a peer
past the limit of wrong tokens RESOURCE_EXHAUSTED (``rackcron.token_guesses``); the name of
the token a change came with is recorded in the audit trail. Health checks stay open so
load balancers can probe. Requests larger than ``max_message_bytes`` are refused by gRPC
(RESOURCE_EXHAUSTED).
"""

from __future__ import annotations

import logging
import os
import threading
import urllib.parse
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from rackcron.domain.addresses import client_key, is_loopback
from rackcron.logs import Seconds, event
from rackcron.service.roles import ShimStore
from rackcron.shim.access import OPEN, needed
from rackcron.shim.extras import ReconcilerServicer
from rackcron.shim.rollouts import RolloutsServicer
from rackcron.shim.servicer import FlowServicer
from rackcron.shim.tokens import ENV_TOKEN_NAME, BadTokenFile, Token, TokenSet, parse_tokens
from rackcron.token_guesses import Guesses
from rackcron.wire.proto.v1 import (
    flow_pb2,
    flow_pb2_grpc,
    reconciler_pb2,
    reconciler_pb2_grpc,
    rollouts_pb2,
    rollouts_pb2_grpc,
)

__all__ = [
    "FLOW_SERVICE",
    "ShimConfig",
    "ShimServer",
    "TlsFiles",
    "Token",
    "UnusableConfig",
    "default_workers",
    "load_tokens",
]

FLOW_SERVICE = flow_pb2.DESCRIPTOR.services_by_name["Flow"].full_name  # "v1.Flow"
RECONCILER_SERVICE = reconciler_pb2.DESCRIPTOR.services_by_name["Reconciler"].full_name
ROLLOUTS_SERVICE = rollouts_pb2.DESCRIPTOR.services_by_name["Rollouts"].full_name
STOP_SLACK = 5.0  # seconds stop() waits past the grace period for grpcio's shutdown


class UnusableConfig(Exception):
    """The server cannot start as configured (unreadable file, address in use, ...)."""


@dataclass(frozen=True)
class TlsFiles:
    """PEM files: the server's certificate and key; ``client_ca`` turns on mTLS."""

    cert: str
    key: str
    client_ca: str | None = None


def default_workers() -> int:
    """RPC threads for this machine: two per CPU, 4 to 32 (one GIL serves them all, so
    more threads only add hand-offs; measured in bench/grpc.py)."""
    return min(32, max(4, 2 * (os.cpu_count() or 1)))


@dataclass(frozen=True)
class ShimConfig:
    host: str = "127.0.0.1"
    port: int = 50051
    tls: TlsFiles | None = None
    tokens: tuple[Token, ...] = ()  # empty: no token needed
    workers: int = field(default_factory=default_workers)
    max_message_bytes: int = 4 * 1024 * 1024
    # Serve rackcron.v1.Reconciler (rackcron.shim.extras): callers may then write the inventory,
    # rack controller settings included, as `rackcron apply` does. Off unless asked for.
    reconciler: bool = False
    grace: float = 10.0  # seconds in-flight RPCs get to finish on stop


def _read(path: str, what: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise UnusableConfig(f"{what}: cannot read {path}: {exc.strerror or exc}") from None


def load_tokens(path: str | None, env_value: str | None) -> tuple[Token, ...]:
    """Tokens from a token file (``rackcron.shim.tokens``: ``scope name:token``,
    ``name:token`` or plain lines, blank lines and ``#`` comments skipped) and an env
    value (named ``env``, without a scope, unless the file holds the same token).

    :raises UnusableConfig: the file cannot be read, holds no token, or breaks a rule
        (naming the file and the line).
    """
    tokens: list[Token] = []
    if path is not None:
        text = _read(path, "token file").decode("utf-8", "replace")
        try:
            tokens += parse_tokens(text, path)
        except BadTokenFile as exc:
            raise UnusableConfig(f"token file: {exc}") from None
        if not tokens:
            raise UnusableConfig(f"token file: {path} holds no token")
    if env_value and env_value.strip():
        secret = env_value.strip()
        if all(t.secret != secret for t in tokens):
            tokens.append(Token(ENV_TOKEN_NAME, secret))
    return tuple(tokens)


def _one_at_a_time(send: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``send`` serialised: callers on other threads wait for the one in progress."""
    lock = threading.Lock()

    def serialised(response: Any) -> Any:
        with lock:
            return send(response)

    return serialised


class _Health(health.HealthServicer):
    """grpcio's health servicer, sending Watch responses after releasing its lock.

    Upstream sends them while holding it, and a send can block on a stream that is
    closing (whose close callback wants the same lock): the server's stop then
    deadlocks. Here the lock only guards the tables, and each stream has a lock of its
    own for its sends: grpcio's call state allows one send at a time (two at once, as
    Watch's first answer and a status change can be, kill its server thread with a
    KeyError, and the server never stops).
    """

    # Upstream's private state, which this class takes over (the stubs leave it out).
    _lock: threading.RLock
    _server_status: dict[str, Any]
    _send_response_callbacks: dict[str, set[Callable[[Any], None]]]
    _gracefully_shutting_down: bool
    _on_close_callback: Callable[[Callable[[Any], None], str], Callable[[], None]]

    def Watch(
        self, request: Any, context: grpc.ServicerContext, send_response_callback: Any = None
    ) -> Any:
        if send_response_callback is None:  # a blocking server: upstream's generator
            return super().Watch(request, context)
        service = request.service
        unknown = health_pb2.HealthCheckResponse.SERVICE_UNKNOWN
        send = _one_at_a_time(send_response_callback)
        with self._lock:
            status = self._server_status.get(service, unknown)
            self._send_response_callbacks.setdefault(service, set()).add(send)
            context.add_callback(self._on_close_callback(send, service))
        send(health_pb2.HealthCheckResponse(status=status))
        with self._lock:  # a change sent while this one went out must stay the last word
            latest = self._server_status.get(service, unknown)
        if latest != status:
            send(health_pb2.HealthCheckResponse(status=latest))
        return None

    def set(self, service: str, status: Any) -> None:
        with self._lock:
            if self._gracefully_shutting_down:
                return
            self._server_status[service] = status
            callbacks = list(self._send_response_callbacks.get(service, ()))
        for send in callbacks:
            send(health_pb2.HealthCheckResponse(status=status))

    def enter_graceful_shutdown(self) -> None:
        with self._lock:
            if self._gracefully_shutting_down:
                return
            services = list(self._server_status)
        for service in services:
            self.set(service, health_pb2.HealthCheckResponse.NOT_SERVING)
        with self._lock:
            self._gracefully_shutting_down = True


if TYPE_CHECKING:  # generic in the stubs only
    _Handler = grpc.RpcMethodHandler[Any, Any]


class _TokenAuth(grpc.ServerInterceptor):
    """Refuses every call but health checks unless it carries one of the tokens, of a
    scope that allows the call (:func:`rackcron.shim.access.needed`); a peer past the
    limit of wrong tokens (:class:`rackcron.token_guesses.Guesses`) is refused
    RESOURCE_EXHAUSTED whatever its token, so the answer says nothing about it. A
    token short of the scope is no wrong token: it is not counted as a guess."""

    def __init__(self, tokens: TokenSet) -> None:
        self._tokens = tokens
        self._guesses = Guesses("grpc")

    def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], _Handler | None],
        details: grpc.HandlerCallDetails,
    ) -> _Handler | None:
        handler = continuation(details)
        if handler is None or details.method in OPEN:
            return handler
        metadata = details.invocation_metadata or ()
        token = self._tokens.find(metadata)
        guessed = any(key == "authorization" for key, _ in metadata)
        need = needed(details.method, metadata)

        def admit(context: grpc.ServicerContext) -> None:
            """Aborts the call unless its token is right, of a scope that allows it, and
            its peer not refused."""
            client = client_key(peer_address(context.peer()))
            wait = self._guesses.wait(client)
            if wait is not None:
                context.set_trailing_metadata((("grpc-retry-pushback-ms", str(wait * 1000)),))
                message = f"too many wrong tokens from this address: try again in {wait} s"
                context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, message)
            if token is None:
                if guessed:
                    self._guesses.failed(client)
                event(logging.WARNING, "rpc unauthenticated", rpc=details.method)
                context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or invalid bearer token")
            elif not token.rights.allows(need.scope):
                event(
                    logging.WARNING,
                    "rpc refused",
                    rpc=details.method,
                    token=token.name,
                    scope=token.rights.value,
                    needs=need.scope.value,
                    peer=context.peer(),
                )
                context.abort(
                    grpc.StatusCode.PERMISSION_DENIED,
                    f"{need.what} needs a token of scope {need.scope.value}; the token"
                    f" {token.name!r} has scope {token.rights.value}",
                )

        return _guarded(handler, admit)


def peer_address(peer: str) -> str:
    """The address in a gRPC peer string (``ipv4:10.0.0.1:5000``, ``ipv6:[::1]:5000``);
    any other peer (``unix:...``) is itself."""
    kind, _, rest = peer.partition(":")
    if kind == "ipv4":
        return rest.rpartition(":")[0]
    if kind == "ipv6" and rest.startswith("["):
        return urllib.parse.unquote(rest[1:].partition("]")[0])
    return peer


def _guarded(handler: _Handler, admit: Callable[[grpc.ServicerContext], None]) -> _Handler:
    """A handler of the same shape as ``handler`` that calls ``admit`` (which aborts a
    call it refuses) before the handler's behaviour."""
    shape = (handler.request_streaming, handler.response_streaming)
    behaviour, make = {
        (False, False): (handler.unary_unary, grpc.unary_unary_rpc_method_handler),
        (False, True): (handler.unary_stream, grpc.unary_stream_rpc_method_handler),
        (True, False): (handler.stream_unary, grpc.stream_unary_rpc_method_handler),
        (True, True): (handler.stream_stream, grpc.stream_stream_rpc_method_handler),
    }[shape]
    assert behaviour is not None

    def call(request: Any, context: grpc.ServicerContext) -> Any:
        admit(context)
        return behaviour(request, context)

    return make(
        call,
        request_deserializer=handler.request_deserializer,
        response_serializer=handler.response_serializer,
    )


class ShimServer:
    """``v1.Flow``, health and reflection on one address; :meth:`start`, then :meth:`stop`."""

    def __init__(
        self,
        service: ShimStore,
        config: ShimConfig,
        *,
        flow: flow_pb2_grpc.FlowServicer | None = None,
    ) -> None:
        """``flow`` replaces the Flow servicer (benchmarks measure the stack's ceiling so)."""
        self.config = config
        self.port: int | None = None
        tokens = TokenSet(config.tokens)
        interceptors: list[grpc.ServerInterceptor] = [_TokenAuth(tokens)] if tokens else []
        self._server = grpc.server(
            ThreadPoolExecutor(max_workers=config.workers, thread_name_prefix="rackcron-grpc"),
            interceptors=interceptors,
            options=[
                ("grpc.max_receive_message_length", config.max_message_bytes),
                ("grpc.so_reuseport", 0),  # a port in use is an error, not a shared listener
            ],
            maximum_concurrent_rpcs=config.workers * 16,
        )
        flow = flow or FlowServicer(service, tokens)
        flow_pb2_grpc.add_FlowServicer_to_server(flow, self._server)
        rollouts_pb2_grpc.add_RolloutsServicer_to_server(
            RolloutsServicer(service, tokens), self._server
        )
        names = [FLOW_SERVICE, ROLLOUTS_SERVICE, health.SERVICE_NAME, reflection.SERVICE_NAME]
        if config.reconciler:
            reconciler_pb2_grpc.add_ReconcilerServicer_to_server(
                ReconcilerServicer(service, tokens), self._server
            )
            names.append(RECONCILER_SERVICE)
        #: The full names of the services served (every one reflection lists).
        self.services = tuple(names)
        self._health = _Health()
        health_pb2_grpc.add_HealthServicer_to_server(self._health, self._server)
        reflection.enable_server_reflection(names, self._server)

    @property
    def address(self) -> str:
        host = self.config.host
        return f"[{host}]:{self.port}" if ":" in host else f"{host}:{self.port}"

    def _credentials(self) -> grpc.ServerCredentials | None:
        tls = self.config.tls
        if tls is None:
            return None
        pair = (_read(tls.key, "TLS key"), _read(tls.cert, "TLS certificate"))
        client_ca = _read(tls.client_ca, "client CA") if tls.client_ca else None
        return grpc.ssl_server_credentials(
            [pair], root_certificates=client_ca, require_client_auth=client_ca is not None
        )

    def start(self) -> int:
        """Bind and serve; the port bound (useful when the config says 0).

        :raises UnusableConfig: a TLS file cannot be read, or the address cannot be bound.
        """
        config = self.config
        credentials = self._credentials()
        target = (
            f"[{config.host}]:{config.port}"
            if ":" in config.host
            else f"{config.host}:{config.port}"
        )
        try:
            if credentials is None:
                port = self._server.add_insecure_port(target)
            else:
                port = self._server.add_secure_port(target, credentials)
        except RuntimeError as exc:
            raise UnusableConfig(f"cannot listen on {target}: {exc}") from None
        if port == 0:
            raise UnusableConfig(f"cannot listen on {target} (address in use or not local?)")
        self.port = port
        self._server.start()
        for name in ("", FLOW_SERVICE):
            self._health.set(name, health_pb2.HealthCheckResponse.SERVING)
        if not is_loopback(config.host) and (config.tls is None or not config.tokens):
            event(
                logging.WARNING,
                "grpc exposed",
                address=self.address,
                tls=config.tls is not None,
                tokens=bool(config.tokens),
                hint="off loopback, use TLS and tokens (docs/grpc.md)",
            )
        event(
            logging.INFO,
            "grpc serving",
            address=self.address,
            tls="mtls" if config.tls and config.tls.client_ca else bool(config.tls),
            tokens=len(config.tokens),
            reconciler=config.reconciler,
            workers=config.workers,
        )
        return port

    def stop(self, grace: float | None = None) -> None:
        """Refuse new RPCs, let those in flight finish (up to ``grace`` seconds), then stop.

        Returns at most ``STOP_SLACK`` seconds after the grace period, logging a warning if
        grpcio's shutdown has not finished by then (a stop must never hang a process)."""
        grace = self.config.grace if grace is None else grace
        self._health.enter_graceful_shutdown()
        if not self._server.stop(grace).wait(timeout=grace + STOP_SLACK):
            event(
                logging.WARNING,
                "grpc stop timed out",
                address=self.address,
                waited=Seconds(grace + STOP_SLACK),
            )
            return
        event(logging.INFO, "grpc stopped", address=self.address)
