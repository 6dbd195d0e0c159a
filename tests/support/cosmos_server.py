"""A local Cosmos DB (NoSQL) stand-in for tests: @vercel/cosmosdb-server over TLS.

The server is the npm package pinned in ``tests/cosmos_server/package.json``,
started by ``tests/cosmos_server/start.js`` on 127.0.0.1 with a freshly made
self-signed certificate. TLS verification stays on: the azure-cosmos client is
told to trust exactly that certificate.

Typical pytest use::

    import pytest
    from azure.cosmos import CosmosClient
    from tests.support.cosmos_server import running_cosmos_server

    @pytest.fixture(scope="session")
    def cosmos_server():
        with running_cosmos_server() as server:
            yield server

    def test_something(cosmos_server):
        client = CosmosClient(cosmos_server.endpoint, cosmos_server.key,
                              **cosmos_server.client_kwargs())
        ...

Why ``client_kwargs()`` and not just ``connection_verify=ca_path``: in
azure-cosmos 4.17.1 the client turns certificate verification OFF for any
endpoint whose host is ``localhost`` or ``127.0.0.1`` (an emulator
convenience in ``_synchronized_request.py``) unless an ``ssl_config`` is
given. ``connection_verify=<path>`` alone therefore does not verify anything
on loopback, and ``REQUESTS_CA_BUNDLE`` is not consulted either (verify is
passed as ``False`` explicitly). Passing ``ssl_config=SSLConfiguration()``
together with ``connection_verify=<ca path>`` makes the client verify the
chain and host name against that file. ``client_kwargs()`` returns exactly
that, plus short timeouts and no connection retries so a dead server
fails fast.

start.js also patches two package bugs by default (``compat=True``): a point
read of a missing item answers 404 (the package answers 500), and
transactional batches accept upsert/replace/read/delete (the package fails
them with 500). See ``running_cosmos_server``.

The server keeps everything in memory; stopping it loses all data.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import ipaddress
import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "COSMOS_SERVER_DIR",
    "EMULATOR_KEY",
    "CosmosServer",
    "CosmosServerError",
    "ensure_installed",
    "make_localhost_cert",
    "running_cosmos_server",
]

#: Folder of the npm package that wraps @vercel/cosmosdb-server.
COSMOS_SERVER_DIR = Path(__file__).resolve().parent.parent / "cosmos_server"

#: The well-known Cosmos DB emulator key. The server accepts any key (it does
#: not check signatures), but the SDK needs a valid base64 key to sign with.
EMULATOR_KEY = (
    "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw=="
)

_SERVER_PACKAGE = "@vercel/cosmosdb-server"
_MIN_NODE_MAJOR = 20


class CosmosServerError(RuntimeError):
    """The test Cosmos server could not be installed, started or reached."""


# --------------------------------------------------------------------------
# certificate
# --------------------------------------------------------------------------


def make_localhost_cert(directory: os.PathLike[str] | str) -> tuple[str, str]:
    """Write a fresh self-signed certificate for localhost/127.0.0.1/::1.

    Returns ``(cert_path, key_path)`` (PEM files ``cert.pem`` and ``key.pem``
    in ``directory``). The certificate is its own trust anchor: use
    ``cert_path`` as the CA bundle. It is valid from one hour ago for 30 days,
    carries the names in subjectAltName (DNS:localhost, IP:127.0.0.1, IP:::1),
    and has the key-usage/AKI/SKI extensions that strict verifiers (OpenSSL
    with X509_STRICT, as Python 3.13 enables by default) insist on.
    """
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    cert_path = directory / "cert.pem"
    key_path = directory / "key.pem"

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "memory-core tests"),
            x509.NameAttribute(NameOID.COMMON_NAME, "localhost"),
        ]
    )
    now = datetime.datetime.now(datetime.UTC)
    public_key = key.public_key()
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(
            x509.SubjectAlternativeName(
                [
                    x509.DNSName("localhost"),
                    x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                    x509.IPAddress(ipaddress.ip_address("::1")),
                ]
            ),
            critical=False,
        )
        # A self-signed certificate used as its own trust anchor: mark it as
        # a CA (path length 0) that may also serve TLS.
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(public_key), critical=False
        )
        .sign(key, hashes.SHA256())
    )

    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    os.chmod(key_path, 0o600)
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return str(cert_path), str(key_path)


# --------------------------------------------------------------------------
# npm install
# --------------------------------------------------------------------------


def _log(message: str) -> None:
    print(f"[cosmos-server] {message}", file=sys.stderr, flush=True)


def _which_or_fail(program: str) -> str:
    path = shutil.which(program)
    if path is None:
        raise CosmosServerError(
            f"`{program}` was not found on PATH. The Cosmos test server needs Node.js "
            f">= {_MIN_NODE_MAJOR} with npm (e.g. `apt-get install nodejs npm`, or nvm)."
        )
    return path


def _check_node(node: str) -> None:
    try:
        out = subprocess.run(
            [node, "--version"], capture_output=True, text=True, check=True, timeout=30
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        raise CosmosServerError(f"cannot run `{node} --version`: {exc}") from exc
    try:
        major = int(out.lstrip("v").split(".")[0])
    except ValueError as exc:
        raise CosmosServerError(f"unexpected `node --version` output: {out!r}") from exc
    if major < _MIN_NODE_MAJOR:
        raise CosmosServerError(
            f"Node.js {out} is too old for {_SERVER_PACKAGE}; need >= {_MIN_NODE_MAJOR}."
        )


def _is_installed(server_dir: Path) -> bool:
    return (server_dir / "node_modules" / _SERVER_PACKAGE / "package.json").is_file()


@contextlib.contextmanager
def _install_lock(server_dir: Path) -> Iterator[None]:
    """Serialise installs between processes (e.g. pytest-xdist workers)."""
    try:
        import fcntl
    except ImportError:  # not POSIX: no lock, best effort
        yield
        return
    digest = hashlib.sha256(str(server_dir.resolve()).encode()).hexdigest()[:16]
    lock_path = Path(tempfile.gettempdir()) / f"memory-core-cosmos-server-install-{digest}.lock"
    with open(lock_path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def ensure_installed(server_dir: os.PathLike[str] | str = COSMOS_SERVER_DIR) -> Path:
    """Make sure the npm dependencies of the test server are installed.

    Runs ``npm ci`` (``npm install`` if there is no package-lock.json) in
    ``server_dir`` when ``node_modules`` lacks the server package. Prints
    progress to stderr. Raises :class:`CosmosServerError` when node/npm is
    missing, too old, or the install fails. Returns ``server_dir``.
    """
    server_dir = Path(server_dir)
    node = _which_or_fail("node")
    _check_node(node)
    if _is_installed(server_dir):
        return server_dir
    npm = _which_or_fail("npm")
    with _install_lock(server_dir):
        if _is_installed(server_dir):  # another process finished it meanwhile
            return server_dir
        has_lock = (server_dir / "package-lock.json").is_file()
        command = [npm, "ci" if has_lock else "install", "--no-audit", "--no-fund"]
        _log(f"installing {_SERVER_PACKAGE}: {' '.join(command[1:])} in {server_dir} ...")
        started = time.monotonic()
        try:
            result = subprocess.run(
                command,
                cwd=server_dir,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                timeout=600,
            )
        except subprocess.TimeoutExpired as exc:
            raise CosmosServerError(f"`{' '.join(command)}` timed out after 600 s") from exc
        for line in result.stdout.splitlines():
            if line.strip():
                _log(f"npm: {line}")
        if result.returncode != 0 or not _is_installed(server_dir):
            raise CosmosServerError(
                f"`{' '.join(command)}` failed in {server_dir} (exit {result.returncode}); "
                "see the npm output above"
            )
        _log(f"installed in {time.monotonic() - started:.1f} s")
    return server_dir


# --------------------------------------------------------------------------
# running server
# --------------------------------------------------------------------------


@dataclass
class CosmosServer:
    """A running test server. ``endpoint``/``key`` go to ``CosmosClient``."""

    endpoint: str
    key: str
    ca_bundle: str
    host: str
    port: int
    cert_path: str
    key_path: str
    process: subprocess.Popen = field(repr=False)
    log_path: str = field(repr=False, default="")

    def client_kwargs(
        self,
        *,
        fail_fast: bool = True,
        **overrides: Any,
    ) -> dict[str, Any]:
        """Keyword arguments for ``azure.cosmos.CosmosClient`` against this server.

        Always: ``ssl_config`` + ``connection_verify=ca_bundle`` (TLS verified
        against the generated certificate; see the module docstring).
        With ``fail_fast`` (default) also: ``connection_timeout=2``,
        ``read_timeout=10``, ``retry_total=0``, ``retry_connect=0``,
        ``retry_read=0``, ``retry_backoff_max=0``. Measured with azure-cosmos
        4.17.1: a stopped server then raises ``ServiceRequestError`` at once
        (SDK defaults: after ~2 s of connection retries); a hung server
        raises ``ServiceResponseTimeoutError`` after 2 s (defaults: ~22 s for
        reads, 5 s for writes). Throttling (429) retries are not affected.
        ``overrides`` win over all of these.
        """
        from azure.cosmos import SSLConfiguration

        ssl_config = SSLConfiguration()
        ssl_config.SSLCaCerts = self.ca_bundle
        kwargs: dict[str, Any] = {
            "ssl_config": ssl_config,
            "connection_verify": self.ca_bundle,
        }
        if fail_fast:
            kwargs.update(
                connection_timeout=2,
                read_timeout=10,
                retry_total=0,
                retry_connect=0,
                retry_read=0,
                retry_backoff_max=0,
            )
        kwargs.update(overrides)
        return kwargs

    def client(self, **overrides: Any):
        """A new ``CosmosClient`` for this server (``client_kwargs`` + overrides)."""
        from azure.cosmos import CosmosClient

        return CosmosClient(self.endpoint, self.key, **self.client_kwargs(**overrides))

    @property
    def running(self) -> bool:
        return self.process.poll() is None

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the server (idempotent). All data is lost."""
        _terminate(self.process, timeout)

    def log(self) -> str:
        """What the server printed on stderr so far (handler errors land here)."""
        try:
            return Path(self.log_path).read_text(errors="replace")
        except OSError:
            return ""


def _terminate(process: subprocess.Popen, timeout: float) -> None:
    if process.poll() is not None:
        return
    try:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=timeout)
    finally:
        if process.stdin:
            with contextlib.suppress(OSError):
                process.stdin.close()
        if process.stdout:
            with contextlib.suppress(OSError):
                process.stdout.close()


def _read_port_line(process: subprocess.Popen, timeout: float) -> dict[str, Any]:
    """Read the single JSON line start.js prints once it listens."""
    result: dict[str, Any] = {}

    def reader() -> None:
        assert process.stdout is not None
        result["line"] = process.stdout.readline()

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    thread.join(timeout)
    line = result.get("line")
    if not line:
        return {}
    try:
        return json.loads(line)
    except ValueError:
        return {"_bad": line}


def _wait_until_answering(endpoint: str, ca_bundle: str, process, deadline: float) -> None:
    """Poll ``GET /`` (the database-account read) over verified TLS."""
    context = ssl.create_default_context(cafile=ca_bundle)
    last_error: BaseException | None = None
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise CosmosServerError(f"server exited with code {process.returncode}")
        try:
            with urllib.request.urlopen(endpoint, context=context, timeout=2) as response:
                body = json.loads(response.read())
                if response.status == 200 and "writableLocations" in body:
                    return
        except (urllib.error.URLError, OSError, ValueError) as exc:
            last_error = exc
        time.sleep(0.05)
    raise CosmosServerError(f"server did not answer at {endpoint}: {last_error!r}")


@contextlib.contextmanager
def running_cosmos_server(
    *,
    port: int = 0,
    host: str = "127.0.0.1",
    cert_dir: os.PathLike[str] | str | None = None,
    startup_timeout: float = 30.0,
    install: bool = True,
    server_dir: os.PathLike[str] | str = COSMOS_SERVER_DIR,
    compat: bool = True,
    log_requests: bool = False,
) -> Iterator[CosmosServer]:
    """Start the test server, wait until it answers, yield a :class:`CosmosServer`.

    ``port=0`` picks a free port. ``host`` must be 127.0.0.1 (default),
    ``localhost`` or ``::1`` (the names in the generated certificate); the
    endpoint uses the same name, which the server also advertises as its
    region endpoint, so the SDK keeps talking to that name. The server is
    terminated (SIGTERM, then SIGKILL) on exit; it also exits by itself
    if this process dies (its stdin closes).

    ``compat=True`` (default) enables start.js's fixes that bring the package
    closer to real Cosmos DB: a point read of a missing item answers 404
    instead of 500, and transactional batches accept operations other than
    create. ``compat=False`` gives the package's raw behaviour.
    ``log_requests=True`` makes the server log "METHOD URL -> STATUS" per
    request; read it with ``server.log()``.
    """
    server_dir = Path(server_dir)
    if install:
        ensure_installed(server_dir)
    node = _which_or_fail("node")

    with contextlib.ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="cosmos-server-")))
        cert_path, key_path = make_localhost_cert(cert_dir if cert_dir is not None else workdir)
        log_path = workdir / "server.log"
        log_file = stack.enter_context(open(log_path, "wb"))

        started = time.monotonic()
        process = subprocess.Popen(
            [
                node,
                str(server_dir / "start.js"),
                "--cert", cert_path,
                "--key", key_path,
                "--port", str(port),
                "--host", host,
                "--exit-on-stdin-close",
                *([] if compat else ["--no-compat"]),
                *(["--log-requests"] if log_requests else []),
            ],
            cwd=server_dir,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log_file,
            text=True,
        )
        stack.callback(_terminate, process, 10.0)

        info = _read_port_line(process, startup_timeout)
        if "port" not in info:
            _terminate(process, 5.0)
            raise CosmosServerError(
                f"server did not report its port (got {info!r}); stderr:\n"
                + log_path.read_text(errors="replace")
            )
        actual_port = int(info["port"])
        url_host = f"[{host}]" if ":" in host else host
        endpoint = f"https://{url_host}:{actual_port}/"
        try:
            _wait_until_answering(endpoint, cert_path, process, started + startup_timeout)
        except CosmosServerError as exc:
            raise CosmosServerError(
                f"{exc}; stderr:\n{log_path.read_text(errors='replace')}"
            ) from None

        yield CosmosServer(
            endpoint=endpoint,
            key=EMULATOR_KEY,
            ca_bundle=cert_path,
            host=host,
            port=actual_port,
            cert_path=cert_path,
            key_path=key_path,
            process=process,
            log_path=str(log_path),
        )

