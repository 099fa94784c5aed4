"""Object storage: `s3://...` (and any other `pyarrow.fs` URI) beside local paths.

`--index`, `--index-root`, `--queries` and `--out` may name a URI. Everything that reaches a
store goes through `Store` (a `pyarrow.fs` filesystem and a root path under it); its errors
become `StorageError` (bad input, exit 2) naming the URI and the fix.

Settings come from the environment once, at the edge (`StorageConfig.from_env`, called by
the command line or `run_job`), and travel to the actors as data:

* `CODENIB_S3_ENDPOINT` (else `AWS_ENDPOINT_URL_S3`, else `AWS_ENDPOINT_URL`): an S3 API
  other than AWS's, e.g. `http://127.0.0.1:9000` for a MinIO or moto server;
* `AWS_REGION` (else `AWS_DEFAULT_REGION`);
* `CODENIB_S3_CONNECT_TIMEOUT` (seconds, default 5), `CODENIB_S3_REQUEST_TIMEOUT` (seconds
  without a byte moving, default 20) and `CODENIB_S3_ATTEMPTS` (tries per request, default 3):
  an endpoint that accepts connections and never answers fails after about
  attempts x (connect + request timeout), naming the endpoint, instead of hanging the job.

Credentials are never read here: pyarrow (the AWS SDK) and boto3 find them themselves
(environment, `~/.aws`, an instance or pod role), on every node.

Core level: pyarrow.fs is imported lazily.
"""

from __future__ import annotations

import os
import re
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator, Mapping
from urllib.parse import urlsplit

from codenib.core.errors import BadInputError, CodeNibError

#: A URI: a scheme of two or more letters, then `://` (a Windows drive letter is one letter).
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+://")
ENDPOINT_ENVS = ("CODENIB_S3_ENDPOINT", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")
REGION_ENVS = ("AWS_REGION", "AWS_DEFAULT_REGION")
#: Seconds before a request to the store gives up (an unreachable endpoint must not hang a job):
#: the defaults, and the variables that replace them (name -> (default, smallest allowed)).
CONNECT_TIMEOUT_S = 5.0
REQUEST_TIMEOUT_S = 20.0
ATTEMPTS = 3
TIMEOUT_ENVS = {"CODENIB_S3_CONNECT_TIMEOUT": "connect_timeout", "CODENIB_S3_REQUEST_TIMEOUT": "request_timeout",
                "CODENIB_S3_ATTEMPTS": "attempts"}
#: What pyarrow's AWS SDK says when no answer came (curl 28: timeout; 7: refused; 6: no host).
_NO_ANSWER = re.compile(r"NETWORK_CONNECTION|curlCode: (?:6|7|28)\b|Timeout was reached")
STORE_FIX = ("check the URI, that the bucket exists and that this machine may read and write it "
             "(AWS credentials; for another S3 API set CODENIB_S3_ENDPOINT, e.g. http://127.0.0.1:9000)")


NO_ANSWER_FIX = ("check that CODENIB_S3_ENDPOINT names an S3 API that runs and that this machine reaches it; "
                 "a slow store gets more time with CODENIB_S3_REQUEST_TIMEOUT, CODENIB_S3_CONNECT_TIMEOUT "
                 "(seconds) and CODENIB_S3_ATTEMPTS")


class StorageError(BadInputError):
    """A URI that cannot be used: unreachable or unknown bucket, missing object, no access."""


def is_uri(path: Any) -> bool:
    """Whether `path` names object storage (`s3://`, `gs://`, ...) rather than a local path.
    `file://` URIs count as URIs too (pyarrow's local filesystem serves them)."""
    return isinstance(path, str) and bool(_URI.match(path))


@dataclass(frozen=True)
class Location:
    """A path as the user gave it, classified once (at the edge: the job options, the command
    line) as object storage (`uri`) or a local path, and passed down so that no later step
    asks `is_uri` of it again."""

    text: str
    uri: bool

    @classmethod
    def of(cls, path: "str | os.PathLike[str] | Location") -> "Location":
        """`path` classified (a `Location` as it is)."""
        if isinstance(path, Location):
            return path
        text = os.fspath(path) if isinstance(path, os.PathLike) else str(path)
        return cls(text, is_uri(text))

    @property
    def shown(self) -> str:
        """The path for messages: a URI as given, a local path normalised (`Path`)."""
        if self.uri:
            return self.text
        from pathlib import Path

        return str(Path(self.text))

    def __str__(self) -> str:
        return self.text

    def __fspath__(self) -> str:
        if self.uri:
            raise TypeError(f"{self.text} is an object-storage URI, not a local path")
        return self.text


@dataclass(frozen=True)
class StorageConfig:
    """Where the S3 API is, read once from the environment (see the module docstring)."""

    endpoint: str | None = None
    region: str | None = None
    connect_timeout: float = CONNECT_TIMEOUT_S
    request_timeout: float = REQUEST_TIMEOUT_S
    attempts: int = ATTEMPTS

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> "StorageConfig":
        env = os.environ if environ is None else environ
        endpoint = next((env[k] for k in ENDPOINT_ENVS if env.get(k)), None)
        region = next((env[k] for k in REGION_ENVS if env.get(k)), None)
        if endpoint and not urlsplit(endpoint).netloc:
            raise BadInputError(f"the S3 endpoint {endpoint!r} is not a URL",
                                fix="set CODENIB_S3_ENDPOINT to e.g. http://127.0.0.1:9000 or https://s3.example.com")
        limits = {field: _positive(name, env[name], whole=field == "attempts")
                  for name, field in TIMEOUT_ENVS.items() if env.get(name)}
        return cls(endpoint, region, **limits)

    @property
    def where(self) -> str:
        """The S3 API in words, for messages."""
        return f"the S3 endpoint {self.endpoint}" if self.endpoint else "AWS S3"

    def no_answer(self, uri: str, what: str, detail: str) -> str:
        """The message of a request that got no answer in time (or no connection)."""
        return (f"{self.where} did not answer (to {what} {uri}; {self.attempts} attempt(s), "
                f"connect timeout {self.connect_timeout:g} s, request timeout {self.request_timeout:g} s): {detail}")

    def open(self, uri: str) -> "Store":
        """The store at `uri` (a folder or an object)."""
        return Store(uri, self)


class Store:
    """A filesystem and a root under it; names are relative posix paths under the root.

    Every failure is a `StorageError` naming the URI it concerns."""

    def __init__(self, uri: str, config: StorageConfig):
        from pyarrow import fs as pafs

        self.uri = uri.rstrip("/")
        self.config = config
        scheme, _, rest = self.uri.partition("://")
        with self._errors(self.uri, "open"):
            if scheme.lower() == "s3":
                kwargs: dict[str, Any] = {
                    "connect_timeout": config.connect_timeout, "request_timeout": config.request_timeout,
                    "retry_strategy": pafs.AwsStandardS3RetryStrategy(max_attempts=config.attempts)}
                if config.endpoint:
                    parts = urlsplit(config.endpoint)
                    kwargs["endpoint_override"] = parts.netloc
                    kwargs["scheme"] = parts.scheme or "https"
                    kwargs["region"] = config.region or "us-east-1"
                elif config.region:
                    kwargs["region"] = config.region   # else pyarrow finds the bucket's region
                self.fs = pafs.S3FileSystem(**kwargs)
                self.root = rest
            else:
                self.fs, self.root = pafs.FileSystem.from_uri(self.uri)
        self.scheme = scheme.lower()
        #: The bucket of a bucket store (s3, gs, ...); '' for a file system without buckets.
        self.bucket = self.root.split("/", 1)[0] if self.scheme not in ("file", "local", "hdfs", "viewfs") else ""

    # -- names ----------------------------------------------------------------------------------

    def path(self, name: str = "") -> str:
        return f"{self.root}/{name}" if name else self.root

    def uri_of(self, name: str = "") -> str:
        return f"{self.uri}/{name}" if name else self.uri

    def child(self, name: str) -> "Store":
        return Store(self.uri_of(name), self.config)

    # -- reads ----------------------------------------------------------------------------------

    def check_bucket(self) -> None:
        """Raise unless the bucket (the first part of the root) exists and can be listed."""
        from pyarrow import fs as pafs

        if not self.bucket:
            return
        with self._errors(self.uri, "reach the bucket of"):
            info = self.fs.get_file_info(self.bucket)
        if info.type == pafs.FileType.NotFound:
            raise StorageError(f"the bucket {self.bucket!r} does not exist", path=self.uri,
                               fix=f"create the bucket, or {STORE_FIX}")

    def exists(self, name: str = "") -> bool:
        from pyarrow import fs as pafs

        with self._errors(self.uri_of(name), "look up"):
            return self.fs.get_file_info(self.path(name)).type != pafs.FileType.NotFound

    def is_file(self, name: str = "") -> bool:
        from pyarrow import fs as pafs

        with self._errors(self.uri_of(name), "look up"):
            return self.fs.get_file_info(self.path(name)).type == pafs.FileType.File

    def listing(self) -> dict[str, int]:
        """Every object under the root: relative name -> size (empty for a missing prefix)."""
        from pyarrow import fs as pafs

        with self._errors(self.uri, "list"):
            infos = self.fs.get_file_info(pafs.FileSelector(self.root, recursive=True, allow_not_found=True))
        start = len(self.root) + 1
        return {i.path[start:]: int(i.size or 0) for i in infos if i.type == pafs.FileType.File}

    def read_bytes(self, name: str = "") -> bytes:
        if not self.is_file(name):
            raise StorageError("no such object", path=self.uri_of(name), fix=STORE_FIX)
        with self._errors(self.uri_of(name), "read"):
            with self.fs.open_input_stream(self.path(name)) as fh:
                return fh.read()

    def download(self, name: str, dest: os.PathLike | str) -> None:
        """Copy one object to a local file (streamed)."""
        from pyarrow import fs as pafs

        with self._errors(self.uri_of(name), "download"):
            pafs.copy_files(self.path(name), str(dest), source_filesystem=self.fs,
                            destination_filesystem=pafs.LocalFileSystem())

    # -- writes ---------------------------------------------------------------------------------

    def write_bytes(self, name: str, data: bytes) -> None:
        """One PUT: the object appears whole or not at all."""
        with self._errors(self.uri_of(name), "write", write=True):
            self._parent(name)
            with self.fs.open_output_stream(self.path(name)) as fh:
                fh.write(data)

    def upload(self, source: os.PathLike | str, name: str) -> None:
        from pyarrow import fs as pafs

        with self._errors(self.uri_of(name), "upload", write=True):
            self._parent(name)
            pafs.copy_files(str(source), self.path(name), source_filesystem=pafs.LocalFileSystem(),
                            destination_filesystem=self.fs)

    def copy(self, src: str, dst: str) -> None:
        """Server-side copy: the destination appears whole or not at all."""
        with self._errors(self.uri_of(dst), "copy to", write=True):
            self._parent(dst)
            self.fs.copy_file(self.path(src), self.path(dst))

    def delete(self, name: str, exists: bool = False) -> None:
        """Delete one object (`exists`: known to exist, so no look-up first)."""
        from pyarrow import fs as pafs

        with self._errors(self.uri_of(name), "delete", write=True):
            if exists or self.fs.get_file_info(self.path(name)).type != pafs.FileType.NotFound:
                self.fs.delete_file(self.path(name))

    def delete_dir(self, name: str) -> None:
        """Delete a folder and what is under it (and the empty marker object some stores keep)."""
        from pyarrow import fs as pafs

        with self._errors(self.uri_of(name), "delete", write=True):
            if self.fs.get_file_info(self.path(name)).type != pafs.FileType.NotFound:
                self.fs.delete_dir(self.path(name))

    # -- private helpers --------------------------------------------------------------------------

    def _parent(self, name: str) -> None:
        """A file system with real folders needs the folder first (a bucket store does not, and
        would get an empty marker object)."""
        if not self.bucket:
            self.fs.create_dir(self.path(name).rpartition("/")[0], recursive=True)

    @contextmanager
    def _errors(self, uri: str, what: str, write: bool = False) -> Iterator[None]:
        try:
            yield
        except CodeNibError:
            raise
        except (OSError, ValueError) as exc:
            text = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
            cls = StorageIOError if write else StorageError
            if _NO_ANSWER.search(text):
                raise cls(self.config.no_answer(uri, what, text), path=uri, fix=NO_ANSWER_FIX) from exc
            raise cls(f"cannot {what} {uri}: {text}", path=uri, fix=STORE_FIX) from exc


class StorageIOError(CodeNibError):
    """A write to the store failed while a job ran (exit 1: re-running the job resumes it)."""


def _positive(name: str, value: str, whole: bool) -> float | int:
    """The number in variable `name`; it must be above zero (a whole number for `whole`)."""
    try:
        number = int(value) if whole else float(value)
    except ValueError:
        number = 0
    if not number > 0 or number != number or number == float("inf"):
        kind = "a whole number above 0, e.g. 3" if whole else "a number of seconds above 0, e.g. 20"
        raise BadInputError(f"${name} is {value!r}; expected {kind}", fix=f"set {name} to {kind}, or unset it")
    return number


def split_name(uri: str) -> tuple[str, str]:
    """(`parent URI`, `last name`) of a URI."""
    parent, _, name = uri.rstrip("/").rpartition("/")
    return parent, name
