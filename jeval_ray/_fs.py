"""Filesystem seam: a local path or any pyarrow filesystem URI (``s3://``, ``gs://``, ``file://``)."""

from __future__ import annotations

import os
from urllib.parse import quote, unquote, urlsplit, urlunsplit

import pyarrow.fs as pafs


def resolve_fs(root: str, filesystem: pafs.FileSystem | None = None) -> tuple[pafs.FileSystem, str]:
    """``(filesystem, path)`` of an output root; relative local paths become absolute."""
    if filesystem is not None:
        return filesystem, root.rstrip("/")
    if "://" not in root:
        return pafs.LocalFileSystem(), os.path.abspath(os.path.expanduser(root))
    fs, path = pafs.FileSystem.from_uri(root)
    return fs, path.rstrip("/")


def join_uri(root: str, *parts: str) -> str:
    """``root`` with ``parts`` appended to its path; a URI keeps its query (``?endpoint_override=…``) at the end."""
    tail = "/".join(p.strip("/") for p in parts)
    if "://" not in root:
        return f"{root.rstrip('/')}/{tail}" if tail else root
    u = urlsplit(root)
    return urlunsplit(u._replace(path=f"{u.path.rstrip('/')}/{tail}" if tail else u.path))


def has_credentials(uri: str) -> bool:
    """Does a filesystem URI carry a secret in its user info (``s3://key:secret@bucket/…``)?

    A user info without one is left alone: ``hdfs://user@namenode/…`` names a user and
    ``abfs://container@account…`` a container.
    """
    if "://" not in uri:
        return False
    try:
        return urlsplit(uri).password is not None
    except ValueError:  # e.g. an unparsable port: pyarrow will say what is wrong with it
        return False


def is_local(fs: pafs.FileSystem) -> bool:
    inner = fs.base_fs if isinstance(fs, pafs.SubTreeFileSystem) else fs
    return isinstance(inner, pafs.LocalFileSystem)


def encode_segment(value: str) -> str:
    """A hive partition value as a path segment: URI-encoded like pyarrow's ``segment_encoding='uri'``."""
    return quote(str(value), safe="")


def decode_segment(segment: str) -> str:
    return unquote(segment)


def exists(fs: pafs.FileSystem, path: str) -> bool:
    return fs.get_file_info(path).type != pafs.FileType.NotFound


def is_dir(fs: pafs.FileSystem, path: str) -> bool:
    return fs.get_file_info(path).type == pafs.FileType.Directory


def list_dir(fs: pafs.FileSystem, path: str) -> list[pafs.FileInfo]:
    if not is_dir(fs, path):
        return []
    return fs.get_file_info(pafs.FileSelector(path, allow_not_found=True, recursive=False))
