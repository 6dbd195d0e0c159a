"""Timer functions of a FunctionApp, run locally on their NCRONTAB schedules.

Schedules written as "%SETTING%" are resolved from the environment, as the
Functions host resolves them from app settings. NCRONTAB has six fields, the
first being seconds; croniter parses that with ``second_at_beginning``.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import anyio.to_thread
import azure.functions as func
from croniter import croniter

from memory_core.api.function_table import functions_of
from memory_core.domain.errors import ConfigurationError

log = logging.getLogger("memory_core.local")


class LocalTimerRequest(func.TimerRequest):
    def __init__(self, past_due: bool = False) -> None:
        self._past_due = past_due

    @property
    def past_due(self) -> bool:
        return self._past_due


@dataclass(frozen=True)
class TimerFunction:
    name: str
    schedule: str
    handler: Callable[..., Any]
    arg_name: str

    def next_fire(self, after: datetime) -> datetime:
        result: datetime = croniter(self.schedule, after, second_at_beginning=True).get_next(datetime)
        return result


def resolve_schedule(schedule: str, environ: Mapping[str, str]) -> str:
    if schedule.startswith("%") and schedule.endswith("%"):
        name = schedule.strip("%")
        if name not in environ:
            raise ConfigurationError(f"timer schedule {schedule} names setting {name}, which is not set")
        schedule = environ[name]
    if not croniter.is_valid(schedule, second_at_beginning=True) or len(schedule.split()) != 6:
        raise ConfigurationError(f"timer schedule {schedule!r} is not a six-field NCRONTAB expression")
    return schedule


def timer_functions(app: func.FunctionApp, environ: Mapping[str, str] | None = None) -> list[TimerFunction]:
    env = os.environ if environ is None else environ
    timers = []
    for function in functions_of(app):
        trigger: Any = function.get_trigger()
        if getattr(trigger, "type", None) != "timerTrigger":
            continue
        timers.append(
            TimerFunction(
                name=str(function.get_function_name()),
                schedule=resolve_schedule(str(trigger.schedule), env),
                handler=function.get_user_function(),
                arg_name=trigger.name,
            )
        )
    return timers


async def run_timer(timer: TimerFunction, clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
    """Fire ``timer`` on its schedule until cancelled; a failing run is logged, not fatal."""
    while True:
        due = timer.next_fire(clock())
        await asyncio.sleep(max(0.0, (due - clock()).total_seconds()))
        request = LocalTimerRequest(past_due=(clock() - due).total_seconds() > 1)
        try:
            if inspect.iscoroutinefunction(timer.handler):
                await timer.handler(request)
            else:
                await anyio.to_thread.run_sync(timer.handler, request)
        except Exception:
            log.exception("timer function %s failed", timer.name)
