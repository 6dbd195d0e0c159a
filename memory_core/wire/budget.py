"""What a budgeted read answers besides the markdown: what was shown, what was left out, and how to reach it."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from memory_core.domain.budget import BudgetReport, ScopeBudget
from memory_core.domain.models import Scope
from memory_core.domain.rendering import format_time

MAX_BUDGET_CHARS = 10_000_000

HOW_TO_REACH_THE_REST = (
    "To reach them: search memory for what you need (MCP search_memory, REST POST .../memory/search, the words in "
    "its body), read again with a larger budget (max_chars / maxChars), or list every entry "
    "(REST GET .../memory/entries, page by page)."
)


class ScopeBudgetModel(BaseModel):
    """One scope of a budgeted read."""

    scope: Scope
    shown_entries: int = Field(description="Entries in content_markdown (newest first); a cut one counts")
    omitted_entries: int = Field(description="Older entries left out: the exact count")
    omitted_from: datetime | None = Field(description="Creation time of the oldest entry left out")
    omitted_to: datetime | None = Field(description="Creation time of the newest entry left out")
    cut_entry_id: str | None = Field(
        default=None, description="The entry shown only in part (its first lines, or the start of its first line), when one was"
    )

    @classmethod
    def from_scope(cls, scope: ScopeBudget) -> ScopeBudgetModel:
        return cls(scope=scope.scope, shown_entries=scope.shown_entries, omitted_entries=scope.omitted_entries,
                   omitted_from=scope.omitted_from, omitted_to=scope.omitted_to, cut_entry_id=scope.cut_entry_id)


class BudgetModel(BaseModel):
    """Set on a read with maxChars: the budget, and per scope what was shown and left out."""

    max_chars: int
    chars: int = Field(description="Characters (Unicode code points) of content_markdown; never above max_chars")
    shown_entries: int
    omitted_entries: int = Field(description="Entries left out, all scopes: the exact count")
    omitted_from: datetime | None
    omitted_to: datetime | None
    scopes: list[ScopeBudgetModel]

    @classmethod
    def from_report(cls, report: BudgetReport) -> BudgetModel:
        return cls(max_chars=report.max_chars, chars=report.chars, shown_entries=report.shown_entries,
                   omitted_entries=report.omitted_entries, omitted_from=report.omitted_from,
                   omitted_to=report.omitted_to, scopes=[ScopeBudgetModel.from_scope(s) for s in report.scopes])


def omission_notice(report: BudgetReport) -> str | None:
    """One paragraph for a model or a person: what the budget left out and how to reach it; None when nothing was."""
    omitted = report.omitted_entries
    if omitted == 0 and not any(s.cut_entry_id for s in report.scopes):
        return None
    parts = []
    for scope in report.scopes:
        if scope.omitted_entries and scope.omitted_from and scope.omitted_to:
            parts.append(
                f"{scope.omitted_entries} of {scope.scope.value} memory, created "
                f"{format_time(scope.omitted_from)} to {format_time(scope.omitted_to)}"
            )
    text = f"[memory-core: this read was limited to {report.max_chars} characters; newest entries first. "
    if omitted:
        text += f"{omitted} older {'entry was' if omitted == 1 else 'entries were'} left out ({'; '.join(parts)}). "
    cuts = [f"the newest {s.scope.value} memory entry ({s.cut})" for s in report.scopes if s.cut_entry_id]
    if cuts:
        text += f"Longer than its share, so shown only in part: {'; '.join(cuts)}. "
    return text + HOW_TO_REACH_THE_REST + "]"
