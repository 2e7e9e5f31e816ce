"""Attestation: a host signs what it witnessed of a finished run record (docs/verify.md,
"Attestation").

When a host finishes a run (`merchantbench run`, `serve`, a sweep's workers, the playground,
an arena) it calls `attest_finished(run_dir, manifest)`, the one signing hook. It writes
`attestation.dsse.json` beside the record: a DSSE envelope (`securesystemslib.dsse`) whose
payload is an in-toto Statement v1:

- `subject`: every record file (`record_subjects`: `run.json`, `metrics.json`, the trace, the
  transcript, the model-call log and the model's words, the tables, the checkpoint files) with
  its SHA-256;
- `predicateType` `PREDICATE_TYPE`, and a predicate naming the run (agent, harness, model,
  scenario, seed or sealed commitment, state hash, final net assets, `llm_usage`), the host
  that signed and its public key, and an honest `assurance`:
  `self-attested` (a local run: the user who ran it holds the key) or `host-attested` (a run
  served to an agent or a person over HTTP or MCP: the host saw every call and model words
  only as the agent sent them).

The signature is Ed25519 (`securesystemslib.signer.CryptoSigner`). The host's key lives in the
keys folder (`keys_dir()`: `$MERCHANTBENCH_KEYS`, else the user's config folder), made on first
use (`merchantbench keys` shows and makes keys). `check_attestation(run_dir, trusted)` checks
the envelope's signature against trusted public keys and every subject's digest against the
files now.

What it does not cover: a signature says which key signed these bytes, not that what they say
is true. A self-attested record's model, tokens and cost are what the local user's own code
wrote: that user could forge them and sign with their own key. A host-attested record says
what the host saw; the agent behind the protocol may have lied about its model or tokens. Only
the replay (`merchantbench verify`) shows that the store and the metrics follow from the calls.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from merchantbench.record.files import atomic_write_bytes
from merchantbench.record.manifest import RunManifest
from merchantbench.record.safe_read import (
    RecordFileError,
    file_sha256,
    is_record_file,
    read_record_bytes,
    record_files,
)
from merchantbench.record.schema import (
    DAILY_FILE,
    LISTINGS_FILE,
    METRICS_FILE,
    MODEL_CALLS_FILE,
    MODEL_WORDS_FILE,
    ORDERS_FILE,
    RUN_FILE,
    TIMESERIES_FILE,
    TRACE_FILE,
    TRANSCRIPT_FILE,
)

ATTESTATION_FILE = "attestation.dsse.json"
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"  # the in-toto specification's type name
PAYLOAD_TYPE = "application/vnd.in-toto+json"
PREDICATE_TYPE = "urn:merchantbench:run-record:v1"
SIGNED_FILES = (
    RUN_FILE, METRICS_FILE, TRACE_FILE, TRANSCRIPT_FILE, MODEL_CALLS_FILE, MODEL_WORDS_FILE,
    TIMESERIES_FILE, ORDERS_FILE, DAILY_FILE, LISTINGS_FILE,
)  # fmt: skip
SIGNED_FOLDERS = ("checkpoint",)
SELF, HOST = "self-attested", "host-attested"
SERVED_DRIVERS = frozenset({"external", "mcp", "human"})  # a host served the run to someone
PRIVATE_KEY, PUBLIC_KEY, TRUSTED_DIR = "host.key", "host.pub.json", "trusted"


class AttestError(ValueError):
    """A key or an attestation that cannot be made or read; one-line reason."""


# --- keys ---------------------------------------------------------------------------------------
def keys_dir() -> Path:
    """Where the host's key and the trusted public keys are kept."""
    configured = os.environ.get("MERCHANTBENCH_KEYS")
    if configured:
        return Path(configured)
    import platformdirs

    return Path(platformdirs.user_config_dir("merchantbench")) / "keys"


class HostKey:
    """The host's Ed25519 key pair. Signing needs only `cryptography` (a run pays no import of
    the checking side); `public_key` is the `securesystemslib` key that checks its signatures.
    Its key id is securesystemslib's default: the SHA-256 of the canonical JSON of the public
    key, so either library names the key alike."""

    def __init__(self, private: Any) -> None:
        from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

        self.private = private
        raw = private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw).hex()
        self.public: dict[str, Any] = {
            "keytype": "ed25519", "scheme": "ed25519", "keyval": {"public": raw},
        }  # fmt: skip
        canonical = json.dumps(self.public, sort_keys=True, separators=(",", ":"))
        self.keyid = hashlib.sha256(canonical.encode()).hexdigest()

    def public_json(self) -> dict[str, Any]:
        """The public key as JSON (what `keys show --json` prints and `--trust` reads)."""
        return {"keyid": self.keyid, **self.public}

    @property
    def public_key(self) -> Any:
        return public_key_of(self.public_json())

    def sign(self, data: bytes) -> bytes:
        signature: bytes = self.private.sign(data)
        return signature

    def pem(self) -> bytes:
        """The private key as PEM PKCS#8 (what securesystemslib's `file2:` signer loads)."""
        from cryptography.hazmat.primitives.serialization import (
            Encoding,
            NoEncryption,
            PrivateFormat,
        )

        pem: bytes = self.private.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
        return pem


def public_key_of(data: Any) -> Any:
    """An `SSlibKey` from its JSON (`{"keyid", "keytype", "scheme", "keyval"}`)."""
    from securesystemslib.signer import SSlibKey

    if not isinstance(data, dict) or not isinstance(data.get("keyid"), str):
        raise AttestError("not a public key (a JSON object with keyid, keytype, keyval)")
    fields = {k: v for k, v in data.items() if k != "keyid"}
    try:
        key = SSlibKey.from_dict(data["keyid"], fields)
    except (KeyError, TypeError, ValueError) as exc:
        raise AttestError(f"not a public key ({exc})") from None
    if key.keytype != "ed25519":
        raise AttestError(f"a {key.keytype} key: only ed25519 keys are used")
    return key


def key_json(key: Any) -> dict[str, Any]:
    """A public key as JSON (what `merchantbench keys show --json` prints and --trust reads)."""
    return {"keyid": key.keyid, **key.to_dict()}


def make_key(folder: Path | None = None, *, replace: bool = False) -> HostKey:
    """Make the host's Ed25519 key pair in `folder` (kept private: mode 0600); its signer.

    Raises:
        AttestError: a key is there already (and not `replace`).
    """
    folder = folder or keys_dir()
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    if (folder / PRIVATE_KEY).exists() and not replace:
        raise AttestError(f"{folder / PRIVATE_KEY} exists already (replace it with --force)")
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    made = HostKey(Ed25519PrivateKey.generate())
    tmp = folder / f".{PRIVATE_KEY}.{os.getpid()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(made.pem())
    if replace:
        os.replace(tmp, folder / PRIVATE_KEY)
    else:
        try:
            os.link(tmp, folder / PRIVATE_KEY)  # another process made one first: use theirs
        except FileExistsError:
            pass
        finally:
            tmp.unlink(missing_ok=True)
    kept = load_signer(folder)  # the key that won, whoever made it
    atomic_write_bytes(folder / PUBLIC_KEY, json.dumps(kept.public_json()).encode())
    return kept


def load_signer(folder: Path | None = None, *, make: bool = False) -> HostKey:
    """The host's signer from `folder` (made there first with `make` if there is none).

    Raises:
        AttestError: no key there (and not `make`), or a damaged one.
    """
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    folder = folder or keys_dir()
    try:
        pem = (folder / PRIVATE_KEY).read_bytes()
    except FileNotFoundError:
        if make:
            try:
                return make_key(folder)
            except AttestError:
                return load_signer(folder)
        raise AttestError(f"no key in {folder}: make one with `merchantbench keys new`") from None
    except OSError as exc:
        raise AttestError(f"{folder / PRIVATE_KEY}: cannot be read ({exc.strerror})") from None
    try:
        private = load_pem_private_key(pem, None)
    except (ValueError, TypeError) as exc:
        raise AttestError(f"{folder / PRIVATE_KEY} is not a private key ({exc})") from None
    if not isinstance(private, Ed25519PrivateKey):
        raise AttestError(f"{folder / PRIVATE_KEY} is not an Ed25519 key")
    return HostKey(private)


def read_public_key(path: Path) -> Any:
    """A public key from a JSON file (`keys show --json` output, or `host.pub.json`)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise AttestError(f"{path}: not a readable public key ({exc})") from None
    return public_key_of(data)


def trusted_keys(folder: Path | None = None) -> list[Any]:
    """The keys tables trust: the host's own key and every key in `<keys>/trusted/`."""
    folder = folder or keys_dir()
    found = []
    try:  # the host's own public key, from its private key (never a file beside it)
        found.append(load_signer(folder).public_key)
    except AttestError:
        pass
    for path in sorted((folder / TRUSTED_DIR).glob("*.json")):
        try:
            found.append(read_public_key(path))
        except AttestError:
            continue
    return found


# --- signing ------------------------------------------------------------------------------------
def record_subjects(run_dir: Path) -> list[dict[str, Any]]:
    """The in-toto subjects of a record: each record file present, with its SHA-256.

    Raises:
        RecordFileError: a record file is a link, FIFO, device or folder (never signed).
    """
    names = [name for name in SIGNED_FILES if is_record_file(run_dir, name)]
    for name in SIGNED_FILES:
        path = run_dir / name
        if name not in names and (path.exists() or path.is_symlink()):
            raise RecordFileError(f"{path} is not a regular file of the record")
    for folder in SIGNED_FOLDERS:
        if (run_dir / folder).is_dir() and not (run_dir / folder).is_symlink():
            names += [f"{folder}/{name}" for name in record_files(run_dir / folder)]
    return [{"name": name, "digest": {"sha256": file_sha256(run_dir, name)}} for name in names]


def _predicate(meta: RunManifest, key: dict[str, Any]) -> dict[str, Any]:
    settings = meta.agent.settings
    commitment = None if meta.seed_commitment is None else meta.seed_commitment.sha256
    assurance = HOST if meta.driver in SERVED_DRIVERS else SELF
    return {
        "run": {
            "agent": meta.agent.name,
            "driver": meta.driver,
            "model": settings.get("model"),
            "model_entry": settings.get("model_entry"),
            "harness": meta.agent.name if settings.get("model") else None,
            "scenario": {"name": meta.scenario.name, "sha256": meta.scenario.hash},
            "seed": meta.seed,
            "seed_commitment": commitment,
            "ended": meta.ended,
            "state_hash": meta.state_hash,
            "final_net_assets": (
                None if meta.final_accounts is None else meta.final_accounts.net_assets
            ),
            "llm_usage": meta.llm_usage,
            "finished": meta.finished,
        },
        "assurance": assurance,
        "covers": (
            "the host ran the agent in its own process; model, tokens and cost are what the "
            "local user's code recorded"
            if assurance == SELF
            else "the host served every tool call and window; what the agent says of its model "
            "and tokens is its own report"
        ),
        "host": {
            "package_version": meta.package_version,
            "source_sha256": meta.source_sha256,
            "key": key,
        },
    }


def statement(run_dir: Path, meta: RunManifest, key: dict[str, Any]) -> dict[str, Any]:
    """The in-toto Statement of a finished record."""
    return {
        "_type": STATEMENT_TYPE,
        "subject": record_subjects(run_dir),
        "predicateType": PREDICATE_TYPE,
        "predicate": _predicate(meta, key),
    }


def sign_record(run_dir: Path, meta: RunManifest, signer: HostKey) -> Path:
    """Sign the record in `run_dir`; the envelope's path. The envelope is DSSE v1 (the
    signature is over `PAE(payloadType, payload)`), as `securesystemslib.dsse.Envelope` reads
    and verifies it (`check_attestation`)."""
    body = statement(run_dir, meta, signer.public_json())
    payload = json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
    kind = PAYLOAD_TYPE.encode()
    pae = b"DSSEv1 %d %b %d %b" % (len(kind), kind, len(payload), payload)
    envelope = {
        "payload": base64.b64encode(payload).decode(),
        "payloadType": PAYLOAD_TYPE,
        "signatures": [{"keyid": signer.keyid,
                        "sig": base64.b64encode(signer.sign(pae)).decode()}],
    }  # fmt: skip
    path = run_dir / ATTESTATION_FILE
    atomic_write_bytes(path, (json.dumps(envelope, indent=1) + "\n").encode())
    return path


def attest_finished(run_dir: Path, meta: RunManifest) -> str | None:
    """The signing hook every host calls from its lifecycle's finish: sign the finished record
    with the host's key (made on first use). Never fails a run: a key that cannot be made or
    read, or a record that cannot be signed, leaves it unattested and says why (returned)."""
    if os.environ.get("MERCHANTBENCH_NO_SIGN"):
        return "signing turned off (MERCHANTBENCH_NO_SIGN)"
    try:
        sign_record(Path(run_dir), meta, load_signer(make=True))
    except (AttestError, OSError) as exc:
        return f"not signed: {exc}"
    return None


# --- checking -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class AttestationCheck:
    """What a record's attestation says, checked.

    Attributes:
        status: `attested` (a trusted key signed these very files), `untrusted` (a good
            signature of a key not trusted here), `differs` (signed, but a file changed since or
            the signature is bad), `unsigned` (no attestation), `refused` (an attestation file
            that cannot be read).
        key_id: The signing key's id (the predicate's), if any.
        assurance: `self-attested` or `host-attested`, as the predicate says.
        detail: One line: which key, or the first difference.
    """

    status: str
    key_id: str | None = None
    assurance: str | None = None
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "attested"

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "key_id": self.key_id, "assurance": self.assurance,
                "detail": self.detail}  # fmt: skip

    def summary(self) -> str:
        key = f"key {self.key_id[:16]}" if self.key_id else "no key"
        words = {
            "attested": f"{self.assurance} by trusted {key}",
            "untrusted": f"{self.assurance} by {key}, which is not trusted here",
            "differs": f"attestation DIFFERS: {self.detail}",
            "unsigned": "not attested (no signature)",
            "refused": f"attestation refused: {self.detail}",
        }
        return words[self.status]


def _envelope(run_dir: Path) -> tuple[Any, dict[str, Any]]:
    from securesystemslib.dsse import Envelope

    raw = read_record_bytes(run_dir, ATTESTATION_FILE, 16 << 20)
    try:
        envelope = Envelope.from_dict(json.loads(raw))
        body = json.loads(envelope.payload)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise AttestError(f"{ATTESTATION_FILE} is not a DSSE envelope ({exc})") from None
    if envelope.payload_type != PAYLOAD_TYPE or not isinstance(body, dict):
        raise AttestError(f"{ATTESTATION_FILE} is not an in-toto statement")
    if body.get("_type") != STATEMENT_TYPE or body.get("predicateType") != PREDICATE_TYPE:
        raise AttestError(f"{ATTESTATION_FILE} is not a statement of a run record")
    return envelope, body


def _subjects_difference(run_dir: Path, body: dict[str, Any]) -> str | None:
    signed = {str(s.get("name")): (s.get("digest") or {}).get("sha256")
              for s in body.get("subject") or [] if isinstance(s, dict)}  # fmt: skip
    try:
        now = {s["name"]: s["digest"]["sha256"] for s in record_subjects(run_dir)}
    except OSError as exc:
        return str(exc)
    for name in sorted(set(signed) | set(now)):
        if name not in now:
            return f"{name} was signed and is gone"
        if name not in signed:
            return f"{name} is not covered by the signature"
        if signed[name] != now[name]:
            return (f"{name} changed since it was signed (sha256 {now[name][:12]}…, signed "
                    f"{str(signed[name])[:12]}…)")  # fmt: skip
    return None


def check_attestation(run_dir: Path, trusted: list[Any]) -> AttestationCheck:
    """Check a record's attestation: the signature against `trusted` keys, then every subject
    against the files now."""
    from securesystemslib.exceptions import VerificationError

    run_dir = Path(run_dir)
    path = run_dir / ATTESTATION_FILE
    if not path.exists() and not path.is_symlink():
        return AttestationCheck("unsigned")
    try:
        envelope, body = _envelope(run_dir)
    except (AttestError, OSError) as exc:
        return AttestationCheck("refused", detail=str(exc))
    found = body.get("predicate")
    predicate: dict[str, Any] = found if isinstance(found, dict) else {}
    try:
        signer_key = public_key_of((predicate.get("host") or {}).get("key"))
    except AttestError as exc:
        return AttestationCheck("refused", detail=f"the predicate names no signing key ({exc})")
    assurance = predicate.get("assurance")
    assurance = assurance if assurance in (SELF, HOST) else None
    try:
        envelope.verify([signer_key], 1)
    except (VerificationError, ValueError) as exc:
        return AttestationCheck("differs", signer_key.keyid, assurance,
                                f"the signature does not match its key ({exc})")  # fmt: skip
    difference = _subjects_difference(run_dir, body)
    if difference is not None:
        return AttestationCheck("differs", signer_key.keyid, assurance, difference)
    if not any(key.keyid == signer_key.keyid and key == signer_key for key in trusted):
        return AttestationCheck("untrusted", signer_key.keyid, assurance,
                                "signed by a key not given with --trust")  # fmt: skip
    return AttestationCheck("attested", signer_key.keyid, assurance, "signature and files match")
