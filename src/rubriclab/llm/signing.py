"""Ed25519 signatures of cache exports (the `cryptography` package).

A signature covers an export's header, canonical JSON without its `signature` field. The
header holds the checksum over every row's checksum, and each row's checksum covers its
content, so a signature that verifies vouches for every row: an answer changed after signing,
with every checksum recomputed, changes the header and fails it.

Keys: `rubriclab cache keygen FILE` writes FILE, the private key (PEM, PKCS#8, unencrypted,
mode 600), and FILE.pub, the public key (PEM), which the publisher hands out beside the export
(see docs/cache.md). A key is named by its id: the first 16 hex digits of the sha256 of its 32
raw bytes.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

SIGNATURE_FIELD = "signature"
ALGORITHM = "ed25519"
_CONTEXT = b"rubriclab-cache-export-signature-v1\n"


class SignatureRefused(ValueError):
    """A signature missing, malformed, not verifying, or by a key not trusted."""


def _raw(public: Ed25519PublicKey) -> bytes:
    return public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def key_id(public: Ed25519PublicKey) -> str:
    return hashlib.sha256(_raw(public)).hexdigest()[:16]


def generate_key(path: str | Path) -> tuple[Path, Path, str]:
    """A new key pair: the private key at `path` (mode 600), the public one at `path`.pub.
    Refuses to overwrite either."""
    path = Path(path)
    public_path = path.with_name(path.name + ".pub")
    for existing in (path, public_path):
        if existing.exists():
            raise FileExistsError(f"{existing} exists; a key is never overwritten")
    private = Ed25519PrivateKey.generate()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(private.private_bytes(serialization.Encoding.PEM,
                                        serialization.PrivateFormat.PKCS8,
                                        serialization.NoEncryption()))
    public_path.write_bytes(private.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    return path, public_path, key_id(private.public_key())


def load_private_key(path: str | Path) -> Ed25519PrivateKey:
    path = Path(path)
    try:
        key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    except FileNotFoundError:
        raise ValueError(f"{path}: no such private key file") from None
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{path}: not an unencrypted PEM private key ({exc}); make one with "
                         "`rubriclab cache keygen FILE`") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise ValueError(f"{path}: a {type(key).__name__}, not an ed25519 private key")
    return key


def load_public_key(value: str | Path) -> Ed25519PublicKey:
    """A public key from a PEM file (FILE.pub of `keygen`), or its 32 raw bytes in base64 (as
    a signature's `public_key` field shows it)."""
    path = Path(value)
    if path.is_file():
        try:
            key = serialization.load_pem_public_key(path.read_bytes())
        except ValueError as exc:
            raise ValueError(f"{path}: not a PEM public key ({exc})") from None
        if not isinstance(key, Ed25519PublicKey):
            raise ValueError(f"{path}: a {type(key).__name__}, not an ed25519 public key")
        return key
    try:
        raw = base64.b64decode(str(value), validate=True)
        return Ed25519PublicKey.from_public_bytes(raw)
    except (binascii.Error, ValueError):
        raise ValueError(f"{value!r}: neither a public key file nor a base64 ed25519 public "
                         "key (32 bytes)") from None


def _signed_bytes(header: dict[str, Any]) -> bytes:
    body = {k: v for k, v in header.items() if k != SIGNATURE_FIELD}
    canonical = json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return _CONTEXT + canonical.encode("utf-8")


def sign_header(header: dict[str, Any], private: Ed25519PrivateKey) -> dict[str, str]:
    """The `signature` field of `header`."""
    public = private.public_key()
    return {"algorithm": ALGORITHM, "key_id": key_id(public),
            "public_key": base64.b64encode(_raw(public)).decode(),
            "value": base64.b64encode(private.sign(_signed_bytes(header))).decode()}


def verify_header(header: dict[str, Any], trusted: list[Ed25519PublicKey] | None) -> str | None:
    """The id of the key that signed `header`, after checking its signature; None if it has
    none and no key is required. With `trusted`, the signer must be one of those keys."""
    trusted_ids = [key_id(k) for k in trusted or []]
    signature = header.get(SIGNATURE_FIELD)
    if signature is None:
        if trusted:
            raise SignatureRefused(f"the file is not signed, and a signature by a trusted key "
                                   f"({', '.join(trusted_ids)}) is required")
        return None
    if (not isinstance(signature, dict) or signature.get("algorithm") != ALGORITHM
            or not all(isinstance(signature.get(f), str) for f in ("public_key", "value"))):
        raise SignatureRefused(f"the header's signature is not an {ALGORITHM} signature "
                               "(algorithm, public_key, value)")
    try:
        public = Ed25519PublicKey.from_public_bytes(
            base64.b64decode(signature["public_key"], validate=True))
        value = base64.b64decode(signature["value"], validate=True)
    except (binascii.Error, ValueError):
        raise SignatureRefused("the header's signature holds a malformed key or value") from None
    signer = key_id(public)
    try:
        public.verify(value, _signed_bytes(header))
    except InvalidSignature:
        raise SignatureRefused(f"the signature by key {signer} does not verify: the file was "
                               "altered after it was signed") from None
    if trusted and signer not in trusted_ids:
        raise SignatureRefused(f"signed by key {signer}, which is not among the trusted keys "
                               f"({', '.join(trusted_ids)})")
    return signer
