"""The S3 client of the bucket publish (see bucket.py): put, delete and list objects of an
`s3://bucket/prefix`, through obstore, with endpoint, region and keys from the standard
AWS_* variables. The only module that talks to the store; its errors come out as
PublishError, the cause chained."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import timedelta
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
        try:
            self._store: S3Store = S3Store(
                bucket,
                prefix=prefix or None,
                client_options={"allow_http": endpoint.startswith("http://")},
                retry_config={"max_retries": 3, "retry_timeout": timedelta(seconds=60)},
            )
        except Exception as e:  # obstore's configuration errors: ValueError and its own
            raise PublishError(f"cannot use {url}: {e}") from e

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
        return PublishError(f"cannot {doing} {where}: {_reason(e)}")


def _reason(e: Exception) -> str:
    """Return the first line of an obstore error: the rest is its Rust backtrace of causes."""
    text = str(e).strip() or type(e).__name__
    return text.splitlines()[0][:300]
