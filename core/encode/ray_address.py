"""Where the Ray engine runs (``--ray-address``), checked before Ray is asked: the address's form, the extra a
Ray Client address needs, and a connection with a deadline, so a bad, closed or silent address is one line
(exit status 2) within ``connect_timeout()`` seconds instead of an internal error or a wait of minutes.

parse_ray_address("ray://head:10001")  # RayAddress(kind="client", host="head", port=10001); InputError if malformed
connect(address, num_cpus)              # ray.init after the checks; True when this call started Ray

The forms: ``local`` (a private Ray started here), ``auto`` (the cluster this machine is part of: ``RAY_ADDRESS``
or the last one started here), ``HOST:PORT`` (a cluster's GCS, from a machine of the cluster) and
``ray://HOST:PORT`` (Ray Client, which needs ``pip install "ray[client]"``). Before ``ray.init`` a remote
address must answer a gRPC (HTTP/2) handshake within the deadline: GCS and the Ray Client server both speak
gRPC, and a port that refuses, closes or never answers is named with what was tried. With ``RAY_USE_TLS``
set only the TCP connection is tried (the handshake would be TLS's).
"""

from __future__ import annotations

import importlib.util
import logging
import os
import re
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from isoscope.errors import InputError, first_line

log = logging.getLogger(__name__)

ENV_RAY_TIMEOUT = "ISOSCOPE_RAY_CONNECT_TIMEOUT"
DEFAULT_RAY_TIMEOUT = 15.0  # seconds for a remote address to answer before the run is refused
RAY_ADDRESS_FORMS = "local, auto, HOST:PORT (a cluster's GCS) or ray://HOST:PORT (Ray Client)"
RAY_CLIENT_MISSING = 'Ray Client addresses (ray://) need pip install "ray[client]"'
# the HTTP/2 client preface and an empty SETTINGS frame: a gRPC server answers with its own SETTINGS frame
H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])
H2_SETTINGS = 4
_HOST = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9-]{0,62})(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}))*)$")


@dataclass(frozen=True)
class RayAddress:
    """A ``--ray-address`` parsed: ``local``, ``auto``, a GCS address or a Ray Client address."""

    text: str
    kind: Literal["local", "auto", "gcs", "client"]
    host: str = ""
    port: int = 0


def parse_ray_address(text: str) -> RayAddress:
    """``text`` checked for one of the forms Ray accepts; InputError of one line naming the forms otherwise."""
    given = str(text).strip()
    if given in ("local", "auto"):
        return RayAddress(given, given)  # type: ignore[arg-type]
    kind: Literal["gcs", "client"] = "client" if given.startswith("ray://") else "gcs"
    rest = given.removeprefix("ray://")
    host, sep, port = rest.rpartition(":")
    if not sep or not _HOST.match(host) or not port.isdigit() or not 0 < int(port) < 65536:
        raise InputError(f"--ray-address '{text}' is not an address Ray takes; give {RAY_ADDRESS_FORMS}")
    return RayAddress(given, kind, host.strip("[]"), int(port))


def connect_timeout() -> float:
    """Seconds a remote address has to answer (``ISOSCOPE_RAY_CONNECT_TIMEOUT``, default 15)."""
    raw = os.environ.get(ENV_RAY_TIMEOUT, "").strip()
    try:
        value = float(raw) if raw else DEFAULT_RAY_TIMEOUT
    except ValueError:
        raise InputError(f"{ENV_RAY_TIMEOUT}={raw!r} is not a number of seconds") from None
    if not 0 < value <= 3600:
        raise InputError(f"{ENV_RAY_TIMEOUT}={raw!r}: give seconds between 0 and 3600")
    return value


def _tls() -> bool:
    return os.environ.get("RAY_USE_TLS", "").strip().lower() in ("1", "true", "yes")


def probe(host: str, port: int, timeout: float) -> str | None:
    """None when a gRPC server answers at ``host:port`` within ``timeout`` seconds (its SETTINGS frame after
    ours; with TLS, the TCP connection only); else what happened, in a few words."""
    deadline = time.monotonic() + timeout
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            if _tls():
                return None
            sock.sendall(H2_PREFACE)
            head = b""
            while len(head) < 9:
                sock.settimeout(max(0.01, deadline - time.monotonic()))
                chunk = sock.recv(9 - len(head))
                if not chunk:
                    return "it closed the connection without answering"
                head += chunk
    except TimeoutError:
        return f"no answer within {timeout:g} s"
    except ConnectionRefusedError:
        return "connection refused"
    except (ConnectionResetError, BrokenPipeError):
        return "it closed the connection without answering"
    except socket.gaierror:
        return "the host name does not resolve"
    except OSError as exc:
        return first_line(exc.strerror or exc, 80)
    if head[3] != H2_SETTINGS:
        return "it answered, but not as a Ray (gRPC) server"
    return None


def _target(address: RayAddress) -> tuple[str, int] | None:
    """The host and port Ray will connect to: a GCS address as Ray rewrites it (a local host name becomes this
    machine's address), ``auto`` as Ray finds it; None when that cannot be told (Ray's own error follows)."""
    if address.kind == "client":
        return address.host, address.port
    try:
        from ray._private import services  # private: guarded, a newer Ray only loses the early check

        text = address.text if address.kind == "gcs" else services.get_ray_address_from_environment("auto", None)
        text = services.canonicalize_bootstrap_address(text) if text else None
    except Exception:  # any failure of Ray's own lookup: ray.init reports it next
        text = None if address.kind == "auto" else address.text
    if not text:
        return None
    host, _, port = str(text).rpartition(":")
    return (host.strip("[]"), int(port)) if port.isdigit() else None


def check_reachable(address: RayAddress) -> None:
    """InputError of one line, within ``connect_timeout()``, when a remote address does not answer."""
    if address.kind == "local":
        return
    if address.kind == "client" and importlib.util.find_spec("grpc") is None:
        raise InputError(f"--ray-address {address.text}: {RAY_CLIENT_MISSING} (or give the cluster's GCS HOST:PORT)")
    target = _target(address)
    if target is None:
        return
    timeout = connect_timeout()
    why = probe(*target, timeout)
    if why is not None:
        tried = f"{target[0]}:{target[1]}"
        said = address.text.removeprefix("ray://")
        where = tried if tried == said or address.kind == "auto" else f"{tried}, Ray's address for {said}"
        raise InputError(f"--ray-address {address.text}: no Ray answered at {where} ({why}; tried a gRPC handshake)")


def connect(text: str, num_cpus: int, ship: Callable[[], str] | None = None) -> bool:
    """``ray.init`` at ``text`` after ``parse_ray_address`` and ``check_reachable`` (``local``: a private Ray with
    ``num_cpus``; else the cluster, the folder ``ship()`` makes sent to its workers). True when this call started Ray,
    False when Ray was already initialised (used as it is). A cluster that refuses the connection is an
    InputError of one line naming the address."""
    import ray

    address = parse_ray_address(text)
    if ray.is_initialized():
        return False
    if address.kind == "local":  # workers run this Python, so they import isoscope as this process does
        ray.init(num_cpus=num_cpus, include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING)
        return True
    check_reachable(address)
    try:
        ray.init(
            address=address.text,
            log_to_driver=False,
            logging_level=logging.WARNING,
            runtime_env={"py_modules": [ship()] if ship is not None else []},
        )
    except (ConnectionError, TimeoutError, RuntimeError, ValueError) as exc:  # the cluster's answer, not a bug here
        raise InputError(f"--ray-address {address.text}: Ray could not connect ({first_line(exc, 160)})") from None
    return True
