"""Typed errors: every error the service answers carries a media.v1.ErrorDetails; MediaApiError
lifts its reason and field violations onto the exception."""

from __future__ import annotations

from dataclasses import dataclass

from connectrpc.errors import ConnectError

from .gen.media.v1.common_pb import ErrorDetails


@dataclass(frozen=True)
class FieldViolation:
    field: str
    description: str


class MediaApiError(ConnectError):
    """A refused call: ``code`` (connectrpc.code.Code, whose value is e.g. "invalid_argument"),
    ``reason`` (ErrorDetails.code, e.g. validation_error), ``field_violations`` and ``procedure``."""

    def __init__(self, cause: ConnectError, procedure: str) -> None:
        super().__init__(cause.code, cause.message, cause.details)
        self.procedure = procedure
        self.reason = ""
        self.field_violations: list[FieldViolation] = []
        for detail in cause.details:
            if detail.type_name != "media.v1.ErrorDetails":
                continue
            value = detail.value(ErrorDetails)
            if value is not None:
                self.reason = value.code
                self.field_violations = [FieldViolation(v.field, v.description) for v in value.field_violations]
        self.__cause__ = cause

    def __str__(self) -> str:
        fields = "; ".join(f"{v.field}: {v.description}" for v in self.field_violations if f"{v.field}: {v.description}" not in self.message)
        return f"{self.procedure}: [{self.code.value}] {self.message}" + (f" ({fields})" if fields else "")
