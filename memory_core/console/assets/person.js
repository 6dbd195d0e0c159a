// The person's view: their own memory only (the API decides whose memory from the sign-in).

import { ApiError } from "./api.js";
import { h, replace, field, formatCount, formatTime, isolated, isolatedText, uid } from "./dom.js";
import { hiddenRuns } from "./hidden_text.js";
import { renderEntryContent } from "./markdown.js";
import { transferPanel } from "./transfer.js";
import { agentLabel, auditTable, idsShownWhole, newestFirst, oldestFirst, pendingPanel } from "./records.js";
import { announce, busy, confirmAction, cutShortNote, focusAfterRedraw, showMore } from "./ui.js";

/**
 * Entries rendered at once, newest first; a button shows as many more each time. Rendering and tearing
 * down every entry of a long memory took most of a load at 10,000 entries (docs/performance.md).
 */
const SHOWN_AT_ONCE = 500;

/**
 * Agents asked for per page of ``GET /memory/agents`` (its most). The API pages in a key order of its own, so
 * the list is read to its end (``Api.list``) and sorted here: the most recently updated agent first.
 */
const AGENTS_PER_PAGE = 500;

/**
 * Agents listed at once beside "About me"; a button (``ui.showMore``) lists as many more each time. Listed whole,
 * 2,000 agents took most of a second to lay out and pushed the rest of the side navigation far down the page.
 */
const AGENTS_SHOWN_AT_ONCE = 100;

/** Search hits shown; the search asks for one more, to know whether more match. */
const SEARCH_SHOWN = 50;

export const MEMORY_OFF_TEXT = "An agent can switch memory off for a conversation (a \u201ctemporary chat\u201d) by sending "
  + "X-MEMORY-MODE: off. Then nothing is read from your memory and nothing new is stored, and the agent is told so. "
  + "Operators can also switch memory off for one agent. What is already stored stays here, and you can still see, "
  + "export and forget it.";

/**
 * A notice spelling out text the entry holds that no one sees and every agent reads (stored before such
 * writes were refused), or null. Its content, and what is shown beside it, are each looked at.
 */
function hiddenNotice(entry) {
  const fields = [["text", entry.content_markdown], ["reason", entry.reason], ["agent name", entry.agent?.name],
    ["session", entry.session_id], ["tags", (entry.tags || []).join(" ")]];
  const found = fields.flatMap(([name, text]) => hiddenRuns(text).map((run) => `${name}: \u201c${run}\u201d`));
  if (!found.length) return null;
  return h("p", { class: "notice hidden-text" }, "This entry holds text no one sees on screen and agents read: ",
    found.join("; "), ". If you did not write it, forget the entry.");
}

export class PersonView {
  constructor(api, config) {
    this.api = api;
    this.config = config;
    this.choose({ kind: "user" });
    // How many agents the side navigation lists; kept across redraws (choosing an agent redraws the view).
    this.shownAgents = AGENTS_SHOWN_AT_ONCE;
    this.onChange = () => {};
    this.onIdentity = () => {};
  }

  // -- the memory tab ---------------------------------------------------------------------------

  async showMemory() {
    // The reads go out together; the entries are read for the scope shown last time. A scope that cannot be read
    // (an agent whose memory is off answers 403) shows its error in its own place, with the rest of the view.
    let scopeError = null;
    const [agentsPage, waiting, entriesPage] = await Promise.all([
      this.api.list("/memory/agents", { limit: AGENTS_PER_PAGE }, "agents").catch((error) => {
        this.choose({ kind: "user" });  // "My memory" then starts again from "About me"
        throw error;
      }),
      this.waitingRequests(),
      this.api.list("/memory/entries", this.scopeQuery, "entries").catch((error) => {
        scopeError = error;
        return { entries: [] };
      }),
    ]);
    // An expired sign-in is the page's to report, with its way to sign in again; so is a failing "About me".
    if (scopeError && (this.scope.kind === "user" || (scopeError instanceof ApiError && scopeError.status === 401))) {
      throw scopeError;
    }
    const agents = newestFirst(agentsPage.agents || []);
    this.upn = agentsPage.upn || null;
    if (this.upn) this.onIdentity(this.upn);  // who the API says the caller is
    // An agent past a list cut short may still hold the scope shown: only a complete list proves it gone.
    if (this.scope.kind === "agent" && !agentsPage.truncated
        && !agents.some((a) => a.agent_object_id === this.scope.id)) {
      this.choose({ kind: "user" });
      return this.showMemory();
    }
    const root = h("div", { class: "layout" });
    const whole = idsShownWhole(agents);
    const agentItem = (a) => this.scopeButton({ kind: "agent", id: a.agent_object_id, name: a.agent_name },
      agentLabel(a.agent_name, a.agent_object_id, whole.has(a.agent_object_id)), a.entry_count);
    // The agent shown stays listed, however far down the list it sits.
    const current = this.scope.kind === "agent" ? agents.findIndex((a) => a.agent_object_id === this.scope.id) : -1;
    this.shownAgents = Math.max(this.shownAgents, current + 1);
    const agentList = h("ul", { class: "scopes", id: "agent-scopes" },
      agents.slice(0, this.shownAgents).map(agentItem));
    const nav = h("nav", { "aria-label": "Whose memory" },
      h("h2", {}, "Memory"),
      h("ul", { class: "scopes" }, this.scopeButton({ kind: "user" }, "About me (all agents)", null)),
      agents.length ? agentList : null,
      showMore({ container: agentList, items: agents, render: agentItem, step: AGENTS_SHOWN_AT_ONCE,
        id: "show-more-scopes", noun: "agents", onShown: (n) => { this.shownAgents = n; } }),
      agents.length ? null : h("p", { class: "muted" }, "No agent keeps its own memory about you yet."),
      cutShortNote(agentsPage, agents, "agents", "The others may have been updated more recently."),
      h("details", { class: "panel" }, h("summary", {}, "What is \u201cmemory off\u201d?"), h("p", {}, MEMORY_OFF_TEXT)));
    const section = h("section", { "aria-labelledby": "scope-title" });
    root.append(nav, section);
    if (scopeError) this.renderScopeError(section, scopeError);
    else this.renderScope(section, waiting, entriesPage);
    return root;
  }

  /**
   * The caller's deletion requests no operator has finished with (pending, or approved and not yet carried
   * out), oldest first, and whether every list was read. The panel is advisory, so a list that cannot be read
   * does not stop the view; ``unread`` makes it say so, since an empty panel would read as "nothing waiting".
   */
  async waitingRequests() {
    let unread = false;
    const lists = await Promise.all(["pending", "approved"].map((status) =>
      this.api.list("/memory/deletions", { status }, "requests").catch(() => {
        unread = true;
        return { requests: [] };
      })));
    return { requests: oldestFirst(lists.flatMap((list) => list.requests || [])), unread };
  }

  /** Show ``scope`` from its newest ``SHOWN_AT_ONCE`` entries; re-renders after a change keep ``shown``. */
  choose(scope) {
    this.scope = scope;
    this.shown = SHOWN_AT_ONCE;
  }

  scopeButton(scope, label, count) {
    const current = this.scope.kind === scope.kind && this.scope.id === scope.id;
    const key = scope.kind === "user" ? "user" : `agent:${scope.id}`;
    return h("li", {}, h("button", {
      type: "button", "aria-current": current ? "true" : "false", dataset: { scope: key },
      onclick: () => {
        // Choosing draws the view again, this button with it: the focus comes back to the button chosen (else to
        // "About me"), where a keyboard or screen-reader user left off, rather than to the top of the page.
        focusAfterRedraw(`nav button[data-scope="${CSS.escape(key)}"]`, "nav button[data-scope=user]");
        this.choose(scope);
        this.onChange();
      },
    }, label, count === null ? null : h("span", { class: "count" }, h("span", { class: "visually-hidden" }, ", entries: "), String(count))));
  }

  get scopeQuery() {
    return this.scope.kind === "user" ? { scope: "user" } : { scope: "agent", agentObjectId: this.scope.id };
  }

  get scopeBody() {
    return this.scope.kind === "user" ? { scope: "user" } : { scope: "agent", agent_object_id: this.scope.id };
  }

  get scopeLabel() {
    return this.scope.kind === "user" ? "your user memory" : `the memory of ${isolatedText(this.scope.name || this.scope.id)}`;
  }

  /** The agent's scope could not be read: its error where its entries would be, and the way back to "About me". */
  renderScopeError(section, error) {
    const back = () => {
      focusAfterRedraw("nav button[data-scope=user]");
      this.choose({ kind: "user" });
      this.onChange();
    };
    replace(section,
      h("h2", { id: "scope-title" }, "Agent: ", agentLabel(this.scope.name, this.scope.id)),
      h("p", { class: "error", role: "alert", id: "scope-error" },
        `This agent's memory could not be read: ${error.message || String(error)}`),
      h("div", { class: "actions" },
        h("button", { type: "button", id: "back-to-user", onclick: back }, "Back to About me")));
    focusAfterRedraw("#back-to-user");
  }

  renderScope(section, pending, entriesPage) {
    const title = this.scope.kind === "user" ? "About me" : ["Agent: ", agentLabel(this.scope.name, this.scope.id)];
    const entries = (entriesPage.entries || []).slice().reverse();
    const results = h("div", { id: "search-results", "aria-live": "polite" });
    replace(section,
      h("h2", { id: "scope-title" }, title),
      h("p", { class: "muted" }, this.scope.kind === "user"
        ? "Facts and preferences every agent may use when it helps you."
        : "What this agent keeps for itself about you. Other agents do not see it."),
      pending.requests.length ? pendingPanel(pending.requests) : null,
      pending.unread ? h("p", { class: "notice", id: "pending-unread", role: "note" },
        "Deletions waiting for an operator could not be read just now. Reload the page to try again.") : null,
      entriesPage.notice ? h("p", { class: "notice" }, entriesPage.notice) : null,
      this.searchForm(entries, results),
      results,
      h("h3", { id: "entries-title", tabindex: "-1" }, `Entries (${formatCount(entries.length)})`),
      cutShortNote(entriesPage, entries, "entries, the oldest,", "Export your memory to get all of it."),
      entries.length ? this.entryList(entries)
        : h("div", { class: "empty", id: "empty-state" },
          h("p", {}, "Nothing is remembered here."),
          h("p", {}, "When an agent remembers something about you, it appears here. You can also add a note yourself below.")),
      this.addForm(),
      transferPanel(this, entries.length));
  }

  /** The newest ``this.shown`` entries, and a button that shows the next ones while older ones are left. */
  entryList(entries) {
    const list = h("ul", { class: "entries", id: "entries" },
      entries.slice(0, this.shown).map((e) => this.entryItem(e)));
    const more = h("button", { type: "button", id: "show-more" });
    const label = () => {
      const left = entries.length - list.children.length;
      more.textContent = `Show ${formatCount(Math.min(SHOWN_AT_ONCE, left))} more`
        + ` (${formatCount(left)} older not shown)`;
    };
    more.addEventListener("click", () => {
      const start = list.children.length;
      list.append(...entries.slice(start, start + SHOWN_AT_ONCE).map((e) => this.entryItem(e)));
      this.shown = list.children.length;
      announce(`Showing ${formatCount(this.shown)} of ${formatCount(entries.length)} entries.`);
      if (this.shown < entries.length) {
        label();
        return;
      }
      // The button goes; focus moves to what replaces it rather than to the top of the page.
      const done = h("p", { class: "muted", id: "all-shown", tabindex: "-1" },
        `All ${formatCount(entries.length)} entries shown.`);
      more.replaceWith(done);
      done.focus();
    });
    if (list.children.length >= entries.length) return list;
    label();
    return h("div", {}, list, h("div", { class: "show-more" }, more));
  }

  entryItem(entry) {
    const agent = entry.agent ? (entry.agent.name || entry.agent.object_id) : null;
    // Under a team or legacy sharing policy the list holds entries others wrote: they show their
    // author and cannot be forgotten from here (only their author, or an operator, can).
    const author = entry.author?.upn;
    const mine = !author || !this.upn || author === this.upn;
    const shared = entry.share && entry.share !== "private";
    return h("li", { class: "entry", dataset: { entryId: entry.id } },
      h("div", { class: "meta" },
        h("time", { datetime: entry.created_on }, formatTime(entry.created_on)),
        // What others wrote is isolated, whatever the layout around it: an override in it reorders nothing else.
        agent ? h("span", {}, "Agent: ", isolated(agent)) : h("span", {}, "Added directly"),
        mine ? (shared ? h("span", {}, `Shared (${entry.share})`) : null)
          : h("span", { class: "author" }, `Shared (${entry.share || "team"}) by `, author ? isolated(author) : "a former author"),
        (entry.tags || []).length ? h("span", {}, h("span", { class: "visually-hidden" }, "Tags: "),
          entry.tags.map((t) => h("span", { class: "tag" }, isolated(t)))) : null),
      renderEntryContent(entry.content_markdown),
      hiddenNotice(entry),
      mine ? h("div", { class: "actions" }, h("button", {
        type: "button", class: "danger", "aria-label": forgetLabel(entry),
        onclick: (event) => this.forget(entry, event.currentTarget),
      }, "Forget")) : null);
  }

  async forget(entry, button) {
    const ok = await confirmAction({
      title: "Forget this entry?",
      text: this.config.deletion_mode === "immediate"
        ? "It is erased now and cannot be recovered."
        : "It disappears from your memory now. An operator approves the erasure; until then it is hidden, not yet erased.",
      ok: "Forget",
    });
    if (!ok) return;
    // After the redraw, focus goes to the entry that came after this one (else before it), then the list's heading.
    const item = button.closest("li.entry");
    const near = [item?.nextElementSibling, item?.previousElementSibling].filter(Boolean)
      .map((li) => `li.entry[data-entry-id="${CSS.escape(li.dataset.entryId)}"] button.danger`);
    await busy(button, async () => {
      const { status, data } = await this.api.send("DELETE", `/memory/entries/${encodeURIComponent(entry.id)}`);
      focusAfterRedraw(...near, "#entries-title");
      announce(status === 202 ? "Forgetting requested: hidden now, waiting for an operator's approval." : "Forgotten.");
      if (data?.status === "not_stored") announce(data.message);
      this.onChange();
    });
  }

  searchForm(entries, results) {
    const tags = [...new Set(entries.flatMap((e) => e.tags || []))].sort();
    const [qField, q] = field("Search", h("input", { type: "search", name: "q", id: "search-q" }));
    const tagBoxes = tags.map((t) => h("label", { class: "tag-choice" },
      h("input", { type: "checkbox", name: "tag", value: t }), " ", isolated(t)));
    const form = h("form", { class: "panel", role: "search", id: "search-form", "aria-label": "Search this memory" },
      h("div", { class: "row" }, qField, h("button", { type: "submit", class: "primary" }, "Search")),
      tags.length ? h("fieldset", {}, h("legend", {}, "Only entries with all of these tags"), tagBoxes) : null);
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const chosen = tagBoxes.map((l) => l.querySelector("input")).filter((i) => i.checked).map((i) => i.value);
      busy(form.querySelector("button"), async () => {
        // One hit more than is shown tells whether more match: the first SEARCH_SHOWN must never pass for all of them.
        // POST: the words go in the body, never in a URL (which proxies and request logs record).
        const { data: page } = await this.api.send("POST", "/memory/search",
          { ...this.scopeQuery, q: q.value, tags: chosen.join(","), limit: SEARCH_SHOWN + 1 });
        const found = page.hits || [];
        const more = found.length > SEARCH_SHOWN;
        const hits = found.slice(0, SEARCH_SHOWN);
        replace(results,
          h("h3", {}, `Search results (${more ? `the first ${formatCount(SEARCH_SHOWN)}` : hits.length})`),
          more ? h("p", { class: "notice", id: "search-more", role: "note" },
            `Only the first ${formatCount(SEARCH_SHOWN)} matching entries are shown, and more match: `
            + "narrow the search with more words or tags.") : null,
          hits.length ? h("ul", { class: "entries" }, hits.map((hit) => this.entryItem(hit.entry)))
            : h("p", { class: "empty" }, "No entry matches."));
      });
    });
    return form;
  }

  addForm() {
    const [textField, text] = field("Remember this", h("textarea", { name: "content", id: "add-text", required: true }),
      "Markdown. Secrets such as passwords and keys are refused.");
    const [tagsField, tags] = field("Tags", h("input", { type: "text", name: "tags", id: "add-tags" }), "Comma-separated, optional.");
    const form = h("form", { class: "panel", id: "add-form", "aria-labelledby": "add-title" },
      h("h3", { id: "add-title" }, `Add to ${this.scopeLabel}`), textField, tagsField,
      h("div", { class: "actions" }, h("button", { type: "submit", class: "primary" }, "Add")));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      if (!text.value.trim()) { announce("Write something to remember first.", { error: true }); text.focus(); return; }
      busy(form.querySelector("button"), async () => {
        const tagList = tags.value.split(",").map((t) => t.trim()).filter(Boolean);
        const { data } = await this.api.send("POST", "/memory/append",
          { ...this.scopeBody, content_markdown: text.value, tags: tagList, reason: "added in the memory console" });
        announce(data?.status === "not_stored" ? data.message : "Added.");
        focusAfterRedraw("#add-text");
        this.onChange();
      });
    });
    return form;
  }

  // -- the audit tab ----------------------------------------------------------------------------

  async showAudit() {
    const page = await this.api.list("/memory/audit", { order: "newest_first" }, "events");
    return h("section", { "aria-labelledby": "audit-title" },
      h("h2", { id: "audit-title" }, "My audit trail"),
      h("p", { class: "muted" }, "Every change to your memory, newest first. The trail records what happened, never the content."),
      auditTable(page.events || [], "own-audit"),
      cutShortNote(page, page.events, "changes, the newest,", "Older ones are not shown here."));
  }
}

/** How much of an entry's text names its Forget button: enough to tell entries written in one minute apart. */
const LABEL_CHARS = 60;

/**
 * The accessible name of an entry's Forget button: its time and the start of its text. Screen readers list
 * buttons by name, and entries written in one minute (an agent writes several at once) would all read alike.
 */
export function forgetLabel(entry) {
  // Read as the entry shows it: a link as its text (its address is no words), and no markdown markers.
  const text = String(entry.content_markdown ?? "").replace(/!?\[([^[\]]*)\]\([^()]*\)/g, "$1")
    .replace(/[#>*_`[\]()!-]+/g, " ").replace(/\s+/g, " ").trim();
  const cut = text.slice(0, LABEL_CHARS - 1);
  const start = text.length > LABEL_CHARS ? `${cut.slice(0, cut.lastIndexOf(" ") + 1 || undefined).trimEnd()}\u2026` : text;
  return `Forget the entry from ${formatTime(entry.created_on)}${start ? `: ${start}` : ""}`;
}
