"""The S3 client of the bucket publish (see bucket.py): put, delete and list objects of an
`s3://bucket/prefix`, through obstore, with endpoint, region and keys from the standard
AWS_* variables. The only module that talks to the store; its errors come out as
PublishError, the cause chained."""

from __future__ import annotations

import configparser
import html
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from feeds.errors import PublishError

if TYPE_CHECKING:
    from obstore.store import S3Store


@dataclass(frozen=True)
class Listed:
    key: str  # under the prefix
    etag: str  # without its quotes; an MD5 of the content for a plain PUT on most stores
    size: int


class Bucket:
    """One `s3://bucket/prefix`: keys are relative to the prefix (`feeds/all.rss.xml`)."""

    def __init__(self, url: str) -> None:
        from obstore.store import S3Store

        self.url = url
        bucket, _, prefix = url.removeprefix("s3://").partition("/")
        # obstore reads AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN,
        # AWS_REGION (AWS_DEFAULT_REGION) and AWS_ENDPOINT_URL itself. A local store (MinIO,
        # SeaweedFS) speaks plain HTTP, which it refuses unless told.
        endpoint = os.environ.get("AWS_ENDPOINT_URL", "")
        keys = credentials(os.environ)
        if keys is None and endpoint:
            # With no keys obstore asks the cloud's metadata service (an EC2 instance's
            # role): no store but AWS has one, and asking it takes a while to fail.
            raise PublishError(f"cannot use {url}: {NO_CREDENTIALS}")
        try:
            self._store: S3Store = S3Store(
                bucket,
                prefix=prefix or None,
                client_options={"allow_http": endpoint.startswith("http://")},
                retry_config={"max_retries": 3, "retry_timeout": timedelta(seconds=60)},
                **(keys or {}),  # type: ignore[arg-type]
            )
        except Exception as e:  # obstore's configuration errors: ValueError and its own
            raise PublishError(f"cannot use {url}: {reason(e)}") from e

    def put(self, key: str, data: bytes, content_type: str, cache_control: str) -> None:
        import obstore

        attributes = {"Content-Type": content_type, "Cache-Control": cache_control}
        try:
            obstore.put(self._store, key, data, attributes=attributes, use_multipart=False)
        except Exception as e:  # obstore's BaseError family, ValueError, OSError
            raise self._error("upload", key, e) from e

    def delete(self, keys: Sequence[str]) -> None:
        """Delete objects (up to 1,000 a request where the store can); a missing one is no
        error."""
        import obstore

        try:
            obstore.delete(self._store, list(keys))
        except FileNotFoundError:
            pass
        except Exception as e:
            raise self._error("delete", keys[0] if keys else "", e) from e

    def listing(self) -> Iterator[Listed]:
        """Yield every object under the prefix."""
        import obstore

        try:
            for chunk in obstore.list(self._store, chunk_size=1000):
                for meta in chunk:
                    etag = (meta["e_tag"] or "").strip('"')
                    yield Listed(meta["path"], etag, meta["size"])
        except Exception as e:
            raise self._error("list", "", e) from e

    def _error(self, doing: str, key: str, e: Exception) -> PublishError:
        where = f"{self.url}/{key}" if key else self.url
        return PublishError(f"cannot {doing} {where}: {reason(e)}")


NO_CREDENTIALS = (
    "no S3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE)"
)
# Where obstore looks for credentials when none are given: an EC2 instance's metadata
# service (IMDS, or one named by AWS_METADATA_ENDPOINT) and ECS's.
_METADATA = re.compile(r"/latest/api/token|/latest/meta-data/|169\.254\.169\.254|169\.254\.170\.2")
_PERFORMING = re.compile(r"Error performing (?:[A-Z]+ )?(https?://[^/\s?]+)")
_NOISE = re.compile(r" in [0-9.]+[µm]?s\b|, after \d+ retries[^-]*|^Generic S3 error: ")


def reason(e: Exception) -> str:
    """Return why an S3 request failed, in words: the service's error code and message
    (a missing bucket by its name and the store's address), missing credentials, or the
    first line of obstore's error without its timings; never the metadata address."""
    text = str(e).strip() or type(e).__name__
    if _METADATA.search(text):
        return NO_CREDENTIALS
    code, message, bucket = (_element(text, name) for name in ("Code", "Message", "BucketName"))
    at = _PERFORMING.search(text)
    if code == "NoSuchBucket":
        bucket = bucket or "?"
        return f"no such bucket {bucket!r}" + (f" at {at.group(1)}" if at else "")
    if code:
        return f"{code}: {message}" if message else code
    if at and "HTTP error" in text:  # nothing answered: refused, timed out, no such host
        cause = re.search(r'message: "([^"]+)"', text)
        return f"no answer from {at.group(1)}" + (f" ({cause.group(1).lower()})" if cause else "")
    first = text.splitlines()[0]
    return _NOISE.sub("", first).strip()[:300]


def _element(text: str, name: str) -> str:
    """Return the text of an element of the S3 error document quoted in text ('' if none)."""
    m = re.search(rf"<{name}>([^<]*)</{name}>", text)
    return html.unescape(m.group(1)).strip()[:200] if m else ""


def credentials(environ: Mapping[str, str]) -> dict[str, str] | None:
    """Return the keys to give obstore: {} where it finds them itself (AWS_ACCESS_KEY_ID
    and AWS_SECRET_ACCESS_KEY, a web identity, ECS's container credentials), those of the
    profile AWS_PROFILE names (else `default`) in the shared credentials file, which it does
    not read; None when there are none of these."""
    own = ("AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")
    if environ.get("AWS_ACCESS_KEY_ID") and environ.get("AWS_SECRET_ACCESS_KEY"):
        return {}
    if any(environ.get(name) for name in own):
        return {}
    home = Path(environ.get("HOME") or Path.home())
    path = environ.get("AWS_SHARED_CREDENTIALS_FILE") or str(home / ".aws" / "credentials")
    profile = environ.get("AWS_PROFILE") or "default"
    shared = configparser.ConfigParser(interpolation=None)
    try:
        shared.read(path, encoding="utf-8")
    except (configparser.Error, UnicodeDecodeError):
        return None
    if not shared.has_section(profile):
        return None
    section = shared[profile]
    keys = {"access_key_id": "aws_access_key_id", "secret_access_key": "aws_secret_access_key",
            "token": "aws_session_token"}  # fmt: skip
    found = {ours: section[theirs].strip() for ours, theirs in keys.items() if section.get(theirs)}
    if "access_key_id" not in found or "secret_access_key" not in found:
        return None
    region = _profile_region(environ, home, profile)
    given = environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION")
    return {**found, "region": region} if region and not given else found


def _profile_region(environ: Mapping[str, str], home: Path, profile: str) -> str | None:
    """Return the region the shared config file gives a profile, if any."""
    config = configparser.ConfigParser(interpolation=None)
    try:
        config.read(environ.get("AWS_CONFIG_FILE") or str(home / ".aws" / "config"), "utf-8")
    except (configparser.Error, UnicodeDecodeError):
        return None
    name = profile if profile == "default" else f"profile {profile}"
    return config.get(name, "region", fallback=None) if config.has_section(name) else None
