"""The Redis client for the counters, from COUNTERS_REDIS_URL: one Redis, or a Redis Cluster.

    redis://[user:password@]host[:port][/db]   rediss://…   unix:///path/redis.sock   -> redis.Redis
    redis+cluster://[user:password@]host[:port][,host[:port]…]   (rediss+cluster:// for TLS) -> RedisCluster

A cluster URL names any of the cluster's nodes; the client reads the rest of the topology from them and
follows it (MOVED/ASK redirections, failovers). A pure factory: it reads no Django setting, the caller
passes the URL and the timeouts.
"""

from __future__ import annotations

from urllib.parse import unquote

import redis
from redis.backoff import NoBackoff
from redis.cluster import ClusterNode, RedisCluster
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisClusterException, RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.retry import Retry

CLUSTER_SCHEMES = {"redis+cluster": False, "rediss+cluster": True}  # scheme -> TLS
SINGLE_SCHEMES = ("redis", "rediss", "unix")
DEFAULT_PORT = 6379
# After a connection error, a timeout, CLUSTERDOWN or an uncovered slot the cluster client re-reads the
# topology and tries again, at once (redis-py uses only the count of its Retry, not the backoff). Two more
# tries cover a master that was just replaced (the first retry reaches the promoted replica); more would
# only make a check wait past its timeout on a shard that is still electing: its failure policy answers.
# MOVED and ASK redirections are followed apart from these, up to 16 per command.
CLUSTER_RETRIES = 2
# What a call on either client raises when the counters are out of reach. The cluster client also raises
# RedisClusterException (no node answers, an uncovered slot), which is not a RedisError.
COUNTERS_ERRORS: tuple[type[Exception], ...] = (RedisError, RedisClusterException)
# Those of them that say the call never got an answer: Redis (or its node) is away, not the call at fault.
UNREACHABLE_ERRORS: tuple[type[Exception], ...] = (RedisConnectionError, RedisTimeoutError)


def is_cluster_url(url: str) -> bool:
    """True for a redis+cluster:// or rediss+cluster:// URL."""
    return _scheme(url) in CLUSTER_SCHEMES


def counters_client(url: str, timeout_ms: int, read_timeout_ms: int | None = None) -> redis.Redis | RedisCluster:
    """A client for `url`: connecting waits at most `timeout_ms`, each reply at most `read_timeout_ms`
    (default: `timeout_ms`). A cluster client connects to a listed node at once to read the topology, so
    it raises RedisClusterException when none answers."""
    if timeout_ms <= 0 or (read_timeout_ms is not None and read_timeout_ms <= 0):
        raise ValueError("Redis timeouts must be positive numbers of milliseconds")
    connect_s, read_s = timeout_ms / 1000, (read_timeout_ms or timeout_ms) / 1000
    scheme = _scheme(url)
    if scheme in CLUSTER_SCHEMES:
        return _cluster_client(url, scheme, connect_s, read_s)
    if scheme not in SINGLE_SCHEMES:
        raise ValueError(
            f"{_redacted(url)}: unknown scheme {scheme!r}; use redis://, rediss://, unix://, "
            "or redis+cluster:// / rediss+cluster:// for a Redis Cluster"
        )
    if "," in _location(url)[1].partition("/")[0]:
        raise ValueError(
            f"{_redacted(url)} lists several nodes; a Redis Cluster URL starts with redis+cluster:// "
            "(or rediss+cluster://): redis+cluster://host:port,host:port"
        )
    return redis.Redis.from_url(url, socket_connect_timeout=connect_s, socket_timeout=read_s)


def cluster_nodes(url: str) -> list[tuple[str, int]]:
    """The (host, port) of every node a cluster URL lists, in order; ValueError says what is wrong."""
    _credentials, nodes = _parse_cluster_url(url)
    return nodes


def _cluster_client(url: str, scheme: str, connect_s: float, read_s: float) -> RedisCluster:
    (username, password), nodes = _parse_cluster_url(url)
    return RedisCluster(
        startup_nodes=[ClusterNode(host, port) for host, port in nodes],
        # False: a shard without a live master (both copies lost, or slots being moved) fails only the
        # checks whose keys live there, and their limits' failure policies answer; True would refuse to
        # build or refresh the topology, so every check on every shard would fail with it.
        require_full_coverage=False,
        retry=Retry(NoBackoff(), CLUSTER_RETRIES),
        socket_connect_timeout=connect_s,
        socket_timeout=read_s,
        ssl=CLUSTER_SCHEMES[scheme],
        username=username,
        password=password,
    )


def _parse_cluster_url(url: str) -> tuple[tuple[str | None, str | None], list[tuple[str, int]]]:
    scheme, rest = _location(url)
    if "://" in rest:
        raise ValueError(f"{_redacted(url)} mixes schemes: all nodes of a cluster share the one in front ({scheme}://)")
    rest, _, query = rest.partition("?")
    if query:
        raise ValueError(f"{_redacted(url)}: a cluster URL takes no ?options")
    netloc, _, database = rest.partition("/")
    if database not in ("", "0"):
        raise ValueError(f"{_redacted(url)}: a Redis Cluster has only database 0, not {database!r}")
    userinfo, _, hosts = netloc.rpartition("@")
    username, _, password = userinfo.partition(":")
    credentials = (unquote(username) or None, unquote(password) or None)
    return credentials, [_host_port(item.strip(), url) for item in hosts.split(",")]


def _host_port(item: str, url: str) -> tuple[str, int]:
    if item.startswith("["):  # [IPv6]:port
        host, _, port = item[1:].partition("]")
        port = port.removeprefix(":")
    else:
        host, _, port = item.rpartition(":") if ":" in item else (item, "", "")
    if not host:
        raise ValueError(f"{_redacted(url)}: a node has no host ({item!r}); write host:port between the commas")
    if not port:
        return host, DEFAULT_PORT
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{_redacted(url)}: node {item!r} has a bad port {port!r} (a number from 1 to 65535)")
    return host, int(port)


def _scheme(url: str) -> str:
    return _location(url)[0]


def _location(url: str) -> tuple[str, str]:
    """(scheme, everything after ://), or ValueError when there is no scheme."""
    scheme, separator, rest = url.strip().partition("://")
    if not separator or not scheme:
        raise ValueError(f"{_redacted(url)!r} is not a Redis URL: it needs a scheme, as in redis://host:6379/0")
    return scheme.lower(), rest


def _redacted(url: str) -> str:
    """The URL with any password masked, fit for an error message or a log."""
    scheme, separator, rest = url.partition("://")
    userinfo, at, hosts = rest.rpartition("@")
    if not at or ":" not in userinfo:
        return url
    return f"{scheme}{separator}{userinfo.split(':', 1)[0]}:***@{hosts}"
