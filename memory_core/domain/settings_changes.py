"""What the settings trail says of a change to an agent's settings (``agent_settings.AgentSettingsBook``): each
changed setting with its old and new value, never the instructions' text."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memory_core.domain.agent_settings import AgentSettings


def settings_change(before: AgentSettings, after: AgentSettings) -> str:
    """What an operator changed, for the audit trail: each changed setting with its old and new
    value ("enabled: true -> false"), the groups added and removed (each quoted: '"g-travel"'), and for the
    instructions only
    that they changed (the event carries their SHA-256); "no change" when nothing did."""
    changes = [
        f"{name}: {_shown(getattr(before, name))} -> {_shown(getattr(after, name))}"
        for name in ("enabled", "auto_append", "default_write_scope")
        if getattr(before, name) != getattr(after, name)
    ]
    if before.policy_instructions != after.policy_instructions:
        verb = "removed" if not after.policy_instructions else "set" if not before.policy_instructions else "replaced"
        changes.append(f"policy_instructions {verb}")
    old_groups, new_groups = before.allowed_group_ids, after.allowed_group_ids
    if old_groups is None or new_groups is None:
        if old_groups != new_groups:
            changes.append(f"allowed_group_ids: {_groups(old_groups)} -> {_groups(new_groups)}")
    elif set(old_groups) != set(new_groups):
        added = _listed(g for g in new_groups if g not in old_groups)
        removed = _listed(g for g in old_groups if g not in new_groups)
        parts = [f"added {added}"] * bool(added) + [f"removed {removed}"] * bool(removed)
        changes.append("allowed_group_ids: " + "; ".join(parts))
    return "; ".join(changes) or "no change"


def _shown(value: object) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _groups(groups: tuple[str, ...] | None) -> str:
    return "any group" if groups is None else _listed(groups) or "no group"


def _listed(groups: Iterable[str]) -> str:
    # Quoted as JSON strings: a group named "any group", or one holding "; enabled: true -> false", cannot read as
    # the trail's own words.
    return ", ".join(json.dumps(g, ensure_ascii=False) for g in groups)
