"""Where a recorder's spans go: rotated OTLP/JSON lines files in a folder the reviewer
reads as it is, or OTLP/HTTP (Posit Connect's own collection, a Collector in front of
ClickHouse). Also switches on chatlas' content capture, without which the chat spans
carry no messages and the reviewer has nothing to play back."""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import urlsplit

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

CAPTURE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
ENDPOINTS = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
ROTATE_BYTES = 64 * 1024 * 1024
# Spans reach the folder within half a second of ending: a reviewer (or a test) reading
# the folder while the chat runs sees an answer soon after it finished streaming.
DELAY_MS = 500
_NUMBERED = re.compile(r"trace-(\d{1,9})\.jsonl")

log = logging.getLogger("trajectory_review.record")
_lock = threading.Lock()
_provider: TracerProvider | None = None


class RotatingFileExporter(SpanExporter):
    """`trace-1.jsonl`, `trace-2.jsonl`, … in one folder, a new file past `max_bytes`
    and for every process (never appending to a file another process may still write),
    with a `trace-latest.jsonl` hard link to the newest, as R commons writes them. Each
    export is one OTLP/JSON line, by the OpenTelemetry file exporter.

    The files hold whole conversations: the folder is the recording user's alone (0700,
    tightened when it already exists and is theirs) and every file is created new
    (0600, never an existing file, never through a symlink someone planted under the
    next name), so two recorders never share one and nobody else can read them."""

    def __init__(self, folder: str | Path, max_bytes: int = ROTATE_BYTES) -> None:
        from opentelemetry.exporter.otlp.json.file import FileSpanExporter

        self._file_exporter = FileSpanExporter
        self.folder = Path(folder)
        _private_folder(self.folder)
        self._max = max_bytes
        self._lock = threading.Lock()
        numbers = [int(m[1]) for p in self.folder.iterdir() if (m := _NUMBERED.fullmatch(p.name))]
        self._number = max(numbers, default=0)
        self._open()

    def _open(self) -> None:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND
        flags |= getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        while True:
            self._number += 1
            self.path = self.folder / f"trace-{self._number}.jsonl"
            try:
                fd = os.open(self.path, flags, 0o600)
                break
            except FileExistsError:  # another recorder's file, or a planted link: the next
                continue
        self._stream = open(fd, "a", encoding="utf-8")
        self._inner = self._file_exporter(stream=self._stream)
        latest, staged = self.folder / "trace-latest.jsonl", self.folder / ".trace-latest.tmp"
        try:
            staged.unlink(missing_ok=True)
            os.link(self.path, staged)
            os.replace(staged, latest)  # a rename: a symlink under that name is replaced
        except OSError as exc:  # a filesystem without hard links: the numbered files suffice
            log.warning("trajectory-review record: no trace-latest.jsonl link (%s)", exc)

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        with self._lock:
            if self._stream.tell() >= self._max:
                self._inner.shutdown()
                self._stream.close()
                self._open()
            return self._inner.export(spans)

    def shutdown(self) -> None:
        with self._lock:
            self._inner.shutdown()
            self._stream.close()


def _private_folder(folder: Path) -> None:
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = folder.stat()
    if st.st_mode & 0o077 and st.st_uid == os.geteuid():
        folder.chmod(0o700)
        log.warning(
            "trajectory-review record: %s was readable by others; now 0700 (it holds "
            "whole conversations)",
            folder,
        )


# Headers of the environment's exporter variables: credentials for the environment's
# endpoint. A `to=` endpoint is another one, perhaps plain http; they never go there.
ENV_HEADERS = ("OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS")


def exporter_for(to: str | Path | None) -> SpanExporter:
    """A folder, an `http(s)://` endpoint, or (None) the environment: the OTLP endpoint
    variables, else `COMMONS_TRACES_DIR`, else `./traces`."""
    target = str(to) if to is not None else None
    if target is None and any(os.environ.get(name) for name in ENDPOINTS):
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        _warn_plain_http(next(os.environ[n] for n in ENDPOINTS if os.environ.get(n)))
        return OTLPSpanExporter()  # reads the endpoint, headers and timeout variables
    if target is not None and target.startswith(("http://", "https://")):
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        endpoint = target if target.rstrip("/").endswith("/v1/traces") else (
            target.rstrip("/") + "/v1/traces"
        )  # fmt: skip
        _warn_plain_http(endpoint)
        # the exporter reads the header variables when it is made, and nothing else
        # can tell it not to: they are set aside for that moment (configure holds _lock)
        saved = {n: os.environ.pop(n) for n in ENV_HEADERS if n in os.environ}
        try:
            return OTLPSpanExporter(endpoint=endpoint)
        finally:
            os.environ.update(saved)
    return RotatingFileExporter(target or os.environ.get("COMMONS_TRACES_DIR") or "traces")


def _warn_plain_http(endpoint: str) -> None:
    parts = urlsplit(endpoint)
    host = (parts.hostname or "").lower()
    loopback = host in ("localhost", "::1") or host.startswith("127.")
    if parts.scheme == "http" and not loopback:
        log.warning(
            "trajectory-review record: spans (whole conversations) go unencrypted to %s; "
            "use https:// off this machine",
            f"http://{parts.netloc.rsplit('@', 1)[-1]}",
        )


def configure(to: str | Path | None = None) -> TracerProvider:
    """Once per process: the tracer provider the recorder's spans (and chatlas') go to.
    An app's own SDK provider is kept; `to` then adds one more exporter to it."""
    global _provider
    with _lock:
        if _provider is None:
            current = trace.get_tracer_provider()
            if isinstance(current, TracerProvider) and to is None:
                _provider = current
            else:
                provider = current if isinstance(current, TracerProvider) else TracerProvider(
                    resource=Resource.create(
                        {"service.name": os.environ.get("OTEL_SERVICE_NAME", "commons")}
                    )
                )  # fmt: skip
                provider.add_span_processor(
                    BatchSpanProcessor(exporter_for(to), schedule_delay_millis=DELAY_MS)
                )
                if provider is not current:
                    trace.set_tracer_provider(provider)
                _provider = provider
        capture_content()
        return _provider


def capture_content() -> None:
    value = os.environ.get(CAPTURE, "").strip()
    if not value:
        os.environ[CAPTURE] = "true"
    elif value.lower() not in ("true", "1"):
        log.warning(
            "trajectory-review record: %s=%s turns content capture off, so the reviewer "
            "will show these conversations without their messages",
            CAPTURE,
            value,
        )


def flush(timeout_ms: int = 10_000) -> bool:
    """Write every ended span now (the batch processor otherwise waits up to half a
    second): before a process exits, or before reading the folder."""
    return _provider.force_flush(timeout_ms) if _provider is not None else True
