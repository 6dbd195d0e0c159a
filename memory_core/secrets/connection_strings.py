"""Connection strings and credentials in URLs: database URLs, ``user:password@`` URLs,
``password=`` query parameters, Azure account keys, key=value connection strings and
shared access signatures.

Callers may rely on: placeholders (``<password>``, ``****``, ``${DB_PASS}``) never count
as a password. All patterns are compiled once at import, are safe to share between
threads and avoid unbounded nested quantifiers, so a hostile 64 KiB write cannot make a
scan backtrack for long.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator

from memory_core.secrets.matching import positions
from memory_core.secrets.values import is_placeholder, looks_random

# The detectors below find their keyword with ``str.find`` on the lower-cased
# text and only then run a regex anchored at that spot, which is several
# times faster than letting a case-insensitive regex try every position.

_DB_SCHEMES = frozenset(
    ["postgres", "postgresql", "mysql", "mysqlx", "mariadb", "mongodb", "mongodb+srv", "redis", "rediss", "amqp", "amqps", "mssql", "sqlserver", "oracle", "cockroachdb", "clickhouse", "cassandra", "neo4j", "neo4j+s", "bolt", "couchbase", "couchbases", "snowflake", "db2", "memcached", "elasticsearch", "nats", "kafka", "mqtt", "mqtts"]
)
_SCHEME_BEFORE = re.compile(r"(?<![a-z0-9+.-])[a-z][a-z0-9+.-]{1,20}\Z")
# After "://": user:password@host. Userinfo cannot contain "/" (RFC 3986), so
# a path segment with a colon and an "@" further on is not read as one.
_USERINFO_AFTER = re.compile(r"([^\s/:@]{0,128}):([^\s/@]{1,256})@[A-Za-z0-9\[]")


def _url_passwords(text: str, lowered: str) -> Iterator[tuple[str, str]]:
    """(scheme, password) for every ``scheme://user:password@host`` in ``text``."""
    for index in positions(lowered, "://"):
        if index == 0 or not lowered[index - 1].isalnum():
            continue
        userinfo = _USERINFO_AFTER.match(text, index + 3)
        if userinfo is None:
            continue
        scheme = _SCHEME_BEFORE.search(lowered, max(0, index - 21), index)
        if scheme is not None:
            yield scheme.group(0), userinfo.group(2)


def has_db_url_password(text: str, lowered: str) -> bool:
    """True for a database/broker URL with a real password (``postgres://u:pw@host``)."""
    return any(
        scheme in _DB_SCHEMES and not is_placeholder(password) for scheme, password in _url_passwords(text, lowered)
    )


def has_basic_auth_url(text: str, lowered: str) -> bool:
    """True for a non-database URL with ``user:password@`` (placeholders such as
    ``user:<password>@`` or ``user:****@`` do not count).

    Replaces detect-secrets' BasicAuthDetector, which lets the userinfo run
    across "/" and so reads paths like ``/wiki/Help:Contents@x`` as credentials,
    and which flags documentation placeholders.
    """
    return any(
        scheme not in _DB_SCHEMES and not is_placeholder(password) for scheme, password in _url_passwords(text, lowered)
    )


_PARAM_VALUE = re.compile(r"[^&;\s#\"']{1,256}")
_WHITESPACE = re.compile(r"\s")


def has_url_password_param(text: str, lowered: str) -> bool:
    """True for a URL with a ``password=`` / ``pwd=`` query parameter (JDBC style)."""
    for needle in ("password=", "passwd=", "pwd="):
        for index in positions(lowered, needle):
            if not index or lowered[index - 1] not in "?&;":
                continue
            url_start = lowered.rfind("://", max(0, index - 300), index)
            if url_start == -1 or _WHITESPACE.search(lowered, url_start, index):
                continue
            value = _PARAM_VALUE.match(text, index + len(needle))
            if value is not None and not is_placeholder(value.group(0)):
                return True
    return False


# Azure storage / Cosmos DB / Service Bus / Event Hubs / SignalR keys:
# "AccountKey=", "SharedAccessKey=", "AccessKey=" followed by a base64 key.
_AZURE_KEY_VALUE = re.compile(r"[ \t]*=[ \t]*([A-Za-z0-9+/]{32,}={0,2})")


def has_azure_key(text: str, lowered: str) -> bool:
    """True for ``AccountKey=`` / ``SharedAccessKey=`` / ``AccessKey=`` with a random base64 key."""
    for needle in ("accountkey", "accesskey"):
        for index in positions(lowered, needle):
            if index and lowered[index - 1].isalpha() and not lowered.endswith("shared", 0, index):
                continue
            value = _AZURE_KEY_VALUE.match(text, index + len(needle))
            if value is not None and looks_random(value.group(1), min_length=32, min_entropy=4.0):
                return True
    return False


# ADO.NET / ODBC style "Server=...;User ID=...;Password=...;".
_KV_PASSWORD_VALUE = re.compile(r"[ \t]*=[ \t]*(?:\"([^\"\n]{1,256})\"|'([^'\n]{1,256})'|([^;\s\"']{1,256}))")
_KV_CONNECTION_CONTEXT = re.compile(
    r"(?:^|[;\s\"'])(?:server|data source|host|address|addr|hostname|user id|uid|database|initial catalog|dsn)"
    r"[ \t]*=[^;\n]{0,200};"
)


def has_kv_connection_password(text: str, lowered: str) -> bool:
    """True for ``Password=<value>`` / ``Pwd=<value>`` inside a key=value connection string.

    "Inside" means a ``Server=``/``Host=``/``User ID=``/... pair ending in ";"
    occurs earlier on the same line, within 1000 characters. Pairs are searched
    only on the lines that hold a candidate, or in the whole text once when many
    lines do, so many ``password=`` decoys cost linear time.
    """
    pair_ends = _PairEnds(lowered)
    for needle in ("password", "pwd"):
        for index in positions(lowered, needle):
            if index and lowered[index - 1] not in _KV_KEY_BOUNDARY:
                continue
            value = _KV_PASSWORD_VALUE.match(text, index + len(needle))
            if value is None:
                continue
            line_start = lowered.rfind("\n", 0, index) + 1
            window_start = max(line_start, index - 1000)
            if lowered.rfind(";", window_start, index) == -1:
                continue  # a pair ends with ";": none can end in the window
            ends = pair_ends.on_line(line_start)
            nearest = bisect.bisect_right(ends, index) - 1
            if nearest >= 0 and ends[nearest] > window_start and not is_placeholder(_first_group(value)):
                return True
    return False


class _PairEnds:
    """Where the connection-string pairs end, searched per line while few lines ask.

    A pair cannot span a newline (only its leading separator may be one), so the
    pairs found from the newline before a line to the next newline are the ones a
    search of the whole text finds there. Past ``LINES_SEARCHED_ALONE`` lines the
    whole text is searched once instead: one regex call per line costs more than
    one pass when thousands of lines hold a candidate.
    """

    LINES_SEARCHED_ALONE = 32

    def __init__(self, lowered: str) -> None:
        self._lowered = lowered
        self._lines: dict[int, list[int]] = {}
        self._whole: list[int] | None = None

    def on_line(self, line_start: int) -> list[int]:
        """Sorted ends of the pairs on the line starting at ``line_start`` (maybe with other lines' too)."""
        if self._whole is not None:
            return self._whole
        ends = self._lines.get(line_start)
        if ends is not None:
            return ends
        if len(self._lines) == self.LINES_SEARCHED_ALONE:
            self._whole = [match.end() for match in _KV_CONNECTION_CONTEXT.finditer(self._lowered)]
            return self._whole
        line_end = self._lowered.find("\n", line_start)
        end = len(self._lowered) if line_end == -1 else line_end
        ends = [match.end() for match in _KV_CONNECTION_CONTEXT.finditer(self._lowered, max(line_start - 1, 0), end)]
        self._lines[line_start] = ends
        return ends


_KV_KEY_BOUNDARY = frozenset("; \t\r\n\"'")


def _first_group(match: re.Match[str]) -> str:
    return next((group for group in match.groups() if group), "")


# Shared access signatures: a URL or connection string carrying "sig=".
_SAS_SIGNATURE = re.compile(r"[?&;]sig=([A-Za-z0-9%+/]{30,}(?:%3D|=){0,2})", re.IGNORECASE)


def has_sas_token(text: str, lowered: str) -> bool:
    """True for an Azure shared access signature (``sv=...&sig=<signature>``)."""
    return "sv=" in lowered and _SAS_SIGNATURE.search(text) is not None
