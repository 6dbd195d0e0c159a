// The operator's panel of holds whose deletion request is gone (GET /operator/orphan-holds, a page of users at a
// time), each with a Release (hold_release.js asks first and tells what the answer comes to). A panel of
// operator.js; like the rest of that view it shows every text stored by others through ``storedText``.

import { ApiError } from "./api.js";
import { formatCount, h, replace } from "./dom.js";
import {
  confirmRelease, releaseName, releaseOutcome, releaseUpn, shownKind, shownOwner, shownScope, unreleasableWhy,
} from "./hold_release.js";
import { storedText } from "./invisible.js";
import { announce, busy, focusAfterRedraw, showMore } from "./ui.js";

// Users' memories one request of the listing reads at most (the route's own bound).
const OWNERS_PER_REQUEST = 100;
// Requests one page of the panel makes at most while they find no orphan: orphans are rare, and a click each for
// hundreds of users' memories holding none would hide the one that does behind as many clicks.
const REQUESTS_PER_PAGE = 10;
// Holds a request of the listing reads at most (domain/orphan_holds.py HOLDS_PER_PAGE).
const HOLDS_PER_REQUEST = 500;
// Holds shown at once (a request may answer 500, each row with its button); a button shows the next ones.
const HOLDS_AT_ONCE = 100;

/** The key of what one release lifts: a request's holds on one user's memory (or on every author's copies). */
const releaseKey = (hold) => `${hold.request_id}\u0000${releaseUpn(hold)}`;

export class OrphanHolds {
  /**
   * @param {import("./api.js").Api} api  the console's API (its ``instance`` is the one listed)
   * @param {() => Promise<Record<string,string>>} credential  the operator's headers
   * @param {() => void} refresh  redraws the operator's view (after a 409: the request is listed there again)
   */
  constructor(api, credential, refresh) {
    this.api = api;
    this.credential = credential;
    this.refresh = refresh;
    // The page shown ({ instance, holds, owners, page, start, next, stale }) and what each release came to (by
    // ``releaseKey``): both outlive the view's redraws, for the instance they were read on. ``refused`` is the last
    // read's refusal ({ instance, error }), said above the page it left stale.
    this.listing = null;
    this.refused = null;
    this.outcomes = new Map();
    this.said = null;
    // How many holds the table shows: kept through a release's redraw, reset by a page read.
    this.shownHolds = HOLDS_AT_ONCE;
  }

  /** The section: the button that reads the first page, then the page shown, its outcome line and Next page. */
  section() {
    if (this.listing && this.listing.instance !== this.api.instance) {
      this.listing = null;
      this.outcomes.clear();
    }
    if (this.refused && this.refused.instance !== this.api.instance) this.refused = null;
    this.out = h("div", { id: "orphan-holds" });
    this.draw();
    const read = h("button", { type: "button", id: "list-orphan-holds",
      onclick: (e) => this.read(e.currentTarget, null, 1) }, "List orphan holds");
    return h("section", { "aria-labelledby": "orphan-holds-title" },
      h("h2", { id: "orphan-holds-title" }, "Orphan holds"),
      h("p", { class: "muted" }, "Holds whose deletion request is no longer stored (dismissed past them, or expired "
        + "before its rejection lifted them): what they hide stays hidden from every read and is never erased. "
        + "Listed by ids, never memory text; a release shows the memory again."),
      h("div", { class: "row" }, read), this.out);
  }

  /**
   * Read the page after ``start`` (null: the first), numbered ``page``, into the panel. Every request of it goes to
   * the instance shown when it starts (a continuation is that instance's); when the Instance field changed
   * meanwhile, what it read is dropped, never shown as the new instance's. A refusal is said on the panel with its
   * status and code, and the page shown before is marked as not current.
   */
  read(button, start, page) {
    const instance = this.api.instance;
    return busy(button, async () => {
      const holds = [];
      let token = start;
      let owners = 0;
      try {
        for (let n = 0; n < REQUESTS_PER_PAGE && !holds.length; n += 1) {
          const data = await this.api.get("/operator/orphan-holds",
            { limit: OWNERS_PER_REQUEST, continuation: token }, this.credential, instance);
          holds.push(...(data.holds || []));
          owners += data.owners_scanned || 0;
          token = data.continuation || null;
          if (!token) break;
          if (this.api.instance !== instance) return;
        }
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
        if (this.api.instance !== instance) return;
        this.refused = { instance, error };
        if (this.listing) this.listing.stale = true;
        this.said = null;
        this.draw();
        announce(`${error.message} (${error.status} ${error.code})`, { error: true });
        document.getElementById("orphan-holds-refused")?.focus();
        return;
      }
      if (this.api.instance !== instance) return;
      this.listing = { instance, holds, owners, page, start, next: token, stale: false };
      this.refused = null;
      this.outcomes.clear();
      this.said = null;
      this.shownHolds = HOLDS_AT_ONCE;
      this.draw();
      document.getElementById("orphan-holds-summary")?.focus();
    });
  }

  /** The line saying why the last read was refused, with its status and code, or null. */
  refusedLine() {
    const error = this.refused?.error;
    return error ? h("p", { class: "notice", id: "orphan-holds-refused", role: "alert", tabindex: "-1" },
      `The listing was refused: ${error.message} (${error.status} ${error.code})`,
      this.listing ? ". The page below was read before it and may be out of date." : ".") : null;
  }

  /** The page shown (or nothing before the first read) into ``this.out``. */
  draw() {
    const listing = this.listing;
    if (!listing) { replace(this.out, this.refusedLine()); return; }
    const { holds, owners, page, next, stale } = listing;
    const found = holds.length ? `${formatCount(holds.length)} orphan hold${holds.length === 1 ? "" : "s"} found`
      : "no orphan hold found";
    // A request of the listing ends after HOLDS_PER_REQUEST holds, inside a memory when one holds more.
    const cut = holds.length >= HOLDS_PER_REQUEST ? ` (a page ends after ${formatCount(HOLDS_PER_REQUEST)} holds)` : "";
    const summary = h("p", { id: "orphan-holds-summary", tabindex: "-1" }, stale ? "Read before the refusal: " : "",
      `Page ${formatCount(page)}: ${found}; `
      + `users' memories read whole: ${formatCount(owners)}${cut}`,
      next ? "; more are left to read." : page > 1 ? "; that was the last page." : ".");
    const body = h("tbody", {}, holds.slice(0, this.shownHolds).map((hold) => this.row(hold)));
    const table = holds.length ? h("table", { id: "orphan-holds-table" },
      h("caption", { class: "visually-hidden" }, "Orphan holds"),
      h("thead", {}, h("tr", {}, ["Request", "Whose", "Scope", "What it hides", "Release"]
        .map((c) => h("th", { scope: "col" }, c)))), body) : null;
    const nextPage = next ? h("button", { type: "button", id: "next-orphan-holds",
      onclick: (e) => this.read(e.currentTarget, next, page + 1) }, "Next page") : null;
    replace(this.out, this.refusedLine(), summary, this.outcomeLine(), table,
      table ? showMore({ container: body, items: holds, render: (hold) => this.row(hold), step: HOLDS_AT_ONCE,
        id: "show-more-orphan-holds", noun: "orphan holds", onShown: (n) => { this.shownHolds = n; } }) : null,
      nextPage ? h("div", { class: "row" }, nextPage) : null);
  }

  /** The line saying what the last release came to, or null. */
  outcomeLine() {
    const said = this.said;
    return said ? h("p", { class: said.success ? "success" : "notice", id: "orphan-release-outcome",
      tabindex: "-1" }, said.shown) : null;
  }

  row(hold) {
    const done = this.outcomes.get(releaseKey(hold));
    const why = unreleasableWhy(hold);
    const release = done ? h("span", { class: "muted" }, done.success ? "released"
      : done.gone ? "released already" : "its request is stored again")
      : why ? h("span", { class: "muted unreleasable" }, `Cannot be released from the console: ${why}.`)
        : h("button", { type: "button", class: "danger release-hold", "aria-label": releaseName(hold),
          onclick: (e) => this.release(hold, e.currentTarget) }, "Release");
    return h("tr", { dataset: { requestId: hold.request_id, owner: hold.owner } },
      h("td", {}, h("code", {}, storedText(hold.request_id))), h("td", {}, shownOwner(hold)),
      h("td", {}, shownScope(hold)), h("td", {}, shownKind(hold)), h("td", {}, release));
  }

  /**
   * Ask, then release ``hold`` (POST .../orphan-holds/release, the request id and ``release_upn`` in the body, so
   * an id a URL's path would resolve or split is named as listed). The outcome line says what it came to, with the
   * error's status and code when refused; every row the same release lifts is then marked released, and so is one
   * whose hold no longer stands (404 ``hold_not_found``). A 409 ``hold_not_orphaned`` (its request stored again)
   * marks them so and redraws the operator's view, whose table then lists the request. The POST goes to the
   * instance the listing was read on; when the Instance field shows another by then, nothing is posted (the panel
   * is drawn for that instance anew).
   */
  async release(hold, button) {
    const { instance } = this.listing;
    if (!(await confirmRelease(hold))) return;
    if (this.api.instance !== instance) return;
    let outcome;
    await busy(button, async () => {
      try {
        const { data } = await this.api.json("POST", "/operator/orphan-holds/release", {
          body: { request_id: hold.request_id, upn: releaseUpn(hold) }, credential: this.credential, instance });
        outcome = releaseOutcome(hold, { answer: data });
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
        outcome = releaseOutcome(hold, { error });
      }
    });
    if (!outcome) return;
    // A refusal that may pass (403: the key changed) keeps the button; a release done, refused because its request
    // is stored again, or finding no hold standing, is marked on every row it concerns.
    if (outcome.success || outcome.stored || outcome.gone) this.outcomes.set(releaseKey(hold), outcome);
    this.said = outcome;
    announce(outcome.said, { error: !outcome.success });
    if (outcome.stored) {
      focusAfterRedraw("#orphan-release-outcome");
      this.refresh();
      return;
    }
    // The rows are drawn again, this release's marked: focus goes to the next Release (else the one before), then
    // to the outcome line, not to the top of the page.
    const at = this.listing.holds.indexOf(hold);
    this.draw();
    const rows = [...this.out.querySelectorAll("#orphan-holds-table tbody tr")];
    const releaseIn = (tr) => tr.querySelector("button.release-hold");
    const target = rows.slice(at + 1).map(releaseIn).find(Boolean)
      || rows.slice(0, at).reverse().map(releaseIn).find(Boolean) || document.getElementById("orphan-release-outcome");
    target.focus();
  }
}
