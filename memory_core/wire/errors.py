"""The error document every HTTP answer and CoreAPI client shares."""

from __future__ import annotations

from pydantic import BaseModel


class ErrorDetail(BaseModel):
    field: str
    message: str


class ErrorBody(BaseModel):
    code: str
    message: str
    details: list[ErrorDetail] | None = None


class ErrorResponse(BaseModel):
    """Every error: {"error": {"code": ..., "message": ...}}."""

    error: ErrorBody
