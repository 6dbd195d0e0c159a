// The operator's agent settings: an agent's settings looked up by its ID or chosen from the agents with stored
// settings, edited and saved (PUT /operator/agent-settings) or deleted after a confirmation (DELETE), with the trail
// of changes to them. A panel of
// operator.js; like the rest of that view, it shows every text stored by others through ``storedText`` or
// ``storedId``, and through ``isolatedId`` inside a string it builds.

import { h, replace, field } from "./dom.js";
import { isolatedId, storedId, storedText } from "./invisible.js";
import { auditTable } from "./records.js";
import { announce, busy, confirmAction, cutShortNote, OPERATOR_LISTING_REST, showMore } from "./ui.js";

// Configured agents shown at once: each row holds a button, and an instance may configure thousands.
const AGENTS_AT_ONCE = 100;

export class AgentSettings {
  /** ``credential`` gives the operator's headers for each call (``OperatorView.credential``). */
  constructor(api, credential) {
    this.api = api;
    this.credential = credential;
  }

  /** The section: the lookup by ID, the list of configured agents, and the form of the agent opened. */
  section() {
    const [agentField, agent] = field("Agent object ID",
      h("input", { type: "text", id: "settings-agent", required: true }));
    const out = h("div", { id: "agent-settings" });
    const form = h("form", { class: "panel", "aria-label": "Agent settings lookup" },
      h("div", { class: "row" }, agentField, h("button", { type: "submit" }, "Load settings")));
    // An id typed in is trimmed (a space pasted with it is not part of it); one chosen from the list is opened as
    // stored, surrounding spaces included (an older release could store them): trimmed, it named another agent. The
    // list leaves the box alone, which would trim that id when submitted. True once the agent is shown (``busy``
    // has announced why not otherwise).
    const open = (button, id) => busy(button, async () => {
      const settings = await this.api.get("/operator/agent-settings", { agentObjectId: id }, this.credential);
      const changes = h("div", { id: "settings-changes" });
      replace(out, this.settingsForm(settings, () => this.showSettingsChanges(changes, id),
        (deleteButton) => { unlist(id); return open(deleteButton, id); }), changes);
      await this.showSettingsChanges(changes, id);
      out.querySelector("input")?.focus();
      return true;
    });
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      if (!agent.value.trim()) { agent.focus(); return; }
      open(form.querySelector("button"), agent.value.trim());
    });
    const listed = h("div", { id: "configured-agents" });
    // The agents listed, rows shown and rows "Show more" would add: an agent whose settings are deleted has none
    // stored, so it leaves both rather than show as configured with the settings erased.
    let agentsListed = [];
    const unlist = (id) => {
      const at = agentsListed.findIndex((a) => a.agent_object_id === id);
      if (at < 0) return;
      agentsListed.splice(at, 1);
      for (const row of listed.querySelectorAll("#agents-table tr[data-agent]")) {
        if (row.dataset.agent === id) row.remove();
      }
      if (!agentsListed.length) replace(listed, this.agentsTable(agentsListed, () => {}));
    };
    const list = h("button", { type: "button", id: "list-agents", onclick: (e) => busy(e.currentTarget, async () => {
      const page = await this.api.list("/operator/agents", {}, "agents", this.credential);
      // The API pages in a key order of its own; an operator looks an agent up by its id.
      const agents = (page.agents || []).slice().sort((a, b) =>
        a.agent_object_id < b.agent_object_id ? -1 : a.agent_object_id > b.agent_object_id ? 1 : 0);
      agentsListed = agents;
      replace(listed, this.agentsTable(agents, (id, button) => open(button, id)),
        cutShortNote(page, agents, "agents", OPERATOR_LISTING_REST));
    }) }, "List configured agents");
    return h("section", { "aria-labelledby": "settings-title" }, h("h2", { id: "settings-title" }, "Agent settings"),
      form, h("div", { class: "row" }, list), listed, out);
  }

  /**
   * The agents with stored settings, ``AGENTS_AT_ONCE`` at a time (the button that shows more is
   * ``show-more-agents``); choosing one loads its settings with ``load(id, button)``, the id exactly as stored.
   */
  agentsTable(agents, load) {
    if (!agents.length) return h("p", { class: "empty", id: "agents-table" }, "No agent has stored settings yet.");
    const instructions = (a) => a.policy_instructions_withheld ? h("strong", {}, "withheld: a secret or hidden text")
      : a.policy_instructions ? "set" : "none";
    const row = (a) => h("tr", { "data-agent": a.agent_object_id },
      h("td", {}, h("button", { type: "button", onclick: (e) => load(a.agent_object_id, e.currentTarget) },
        storedId(a.agent_object_id))),
      h("td", {}, a.enabled ? "on" : "off"),
      h("td", {}, a.auto_append ? "yes" : "no"),
      h("td", {}, a.default_write_scope),
      h("td", {}, a.allowed_group_ids ? a.allowed_group_ids.map((g, i) => [i ? ", " : "", storedText(g)]) : "any"),
      h("td", {}, instructions(a)));
    const body = h("tbody", {}, agents.slice(0, AGENTS_AT_ONCE).map(row));
    return [h("table", { id: "agents-table" },
      h("caption", { class: "visually-hidden" }, "Agents with stored settings"),
      h("thead", {}, h("tr", {}, ["Agent", "Memory", "Auto-append", "Default scope", "Groups", "Instructions"]
        .map((c) => h("th", { scope: "col" }, c)))),
      body),
    showMore({ container: body, items: agents, render: row, step: AGENTS_AT_ONCE, id: "show-more-agents",
      noun: "agents" })];
  }

  /** The agent's settings trail (who changed what, newest first) into ``out``. */
  async showSettingsChanges(out, agentObjectId) {
    const page = await this.api.list("/operator/agent-settings/audit", { agentObjectId, order: "newest_first" },
      "events", this.credential);
    replace(out, h("h3", {}, "Changes to these settings"), auditTable(page.events || [], "settings-audit-table"),
      cutShortNote(page, page.events, "changes, the newest,", OPERATOR_LISTING_REST));
  }

  /**
   * The form of the agent's settings ``s``: saved with a PUT, then ``onSaved()``; or deleted, once the operator
   * confirms, then ``onDeleted(button)`` (the agent opened again: the defaults, and the trail telling the deletion;
   * true once shown). With none stored (``s.stored`` false: the defaults) there is nothing to delete.
   */
  settingsForm(s, onSaved, onDeleted) {
    const enabled = h("input", { type: "checkbox", id: "set-enabled", checked: s.enabled });
    const auto = h("input", { type: "checkbox", id: "set-auto", checked: s.auto_append });
    const scope = h("select", { id: "set-scope" },
      ["user", "agent"].map((v) => h("option", { value: v, selected: s.default_write_scope === v }, v)));
    const [scopeField] = field("Default write scope", scope);
    const [policyField, policy] = field("Policy instructions",
      h("textarea", { id: "set-policy", value: s.policy_instructions || "" }));
    const [groupsField, groups] = field("Allowed group IDs", h("input", { type: "text", id: "set-groups",
      value: (s.allowed_group_ids || []).join(", ") }), "Comma-separated. Empty: every user may use agent scope.");
    const form = h("form", { id: "settings-form", "aria-label": `Settings of ${isolatedId(s.agent_object_id)}` },
      h("h3", {}, "Settings of ", storedId(s.agent_object_id)),
      h("div", {}, enabled, h("label", { for: enabled.id }, " Memory on for this agent")),
      h("div", {}, auto, h("label", { for: auto.id }, " Append automatically")),
      scopeField, policyField,
      s.policy_instructions_withheld ? h("p", { class: "notice", id: "policy-withheld" },
        "These instructions look like they contain a secret, or hold characters no one sees (they were saved "
        + "before instructions were screened for them). Models do not receive them until you save new ones.") : null,
      groupsField,
      h("div", { class: "actions" }, h("button", { type: "submit", class: "primary" }, "Save settings"),
        h("button", { type: "button", class: "danger", id: "delete-settings", disabled: s.stored === false,
          "aria-describedby": s.stored === false ? "no-settings-stored" : null,
          onclick: (e) => this.deleteSettings(s.agent_object_id, e.currentTarget, onDeleted) }, "Delete settings")),
      s.stored === false ? h("p", { class: "muted", id: "no-settings-stored" },
        "No settings are stored for this agent: it has the defaults (memory on, every group, no instructions).")
        : null);
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      busy(form.querySelector("button[type=submit]"), async () => {
        const ids = groups.value.split(",").map((g) => g.trim()).filter(Boolean);
        const query = new URLSearchParams({ agentObjectId: s.agent_object_id }).toString();
        await this.api.send("PUT", `/operator/agent-settings?${query}`, {
          enabled: enabled.checked, auto_append: auto.checked, default_write_scope: scope.value,
          policy_instructions: policy.value || null, allowed_group_ids: ids.length ? ids : null,
        }, this.credential);
        announce("Settings saved.");
        await onSaved();
      });
    });
    return form;
  }

  /** Delete the agent's settings once the operator confirms, naming what the agent gets instead and what stays. */
  async deleteSettings(agentObjectId, button, onDeleted) {
    const ok = await confirmAction({ title: "Delete this agent's settings?",
      text: ["The settings of ", storedId(agentObjectId), " are erased. The agent then has the defaults: memory on, "
        + "every group, no instructions. Its memory stays as it is."],
      ok: "Delete settings" });
    if (!ok) return;
    await busy(button, async () => {
      const query = new URLSearchParams({ agentObjectId }).toString();
      await this.api.send("DELETE", `/operator/agent-settings?${query}`, undefined, this.credential);
      // Success is told only over the form it describes: a reopening that failed has announced why, and the form
      // on the page still shows the settings erased.
      if (await onDeleted(button)) {
        announce("Settings deleted: the agent has the defaults.");
      } else {
        announce("Settings deleted, but the agent could not be opened again: the form shows the settings erased. "
          + "Load the agent again.", { error: true });
      }
    });
  }
}
