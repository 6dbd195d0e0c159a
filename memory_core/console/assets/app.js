// The console's entry point: read the public config, sign in, then show the person's view
// and, for operators, the operator's view. No inline script: the CSP forbids it.

import { Api, ApiError } from "./api.js";
import { Session } from "./auth.js";
import { h, replace, field } from "./dom.js";
import { forgetScans } from "./hidden_text_scan.js";
import { OperatorView } from "./operator.js";
import { PersonView } from "./person.js";
import { announce, settleFocus } from "./ui.js";

const INSTANCE_STORE = "memory-core.console.instance";
const consoleBase = document.body.dataset.consoleBase;
// The route is case-insensitive (the handler finds "/console" in any case): so is taking it off.
const apiBase = consoleBase.replace(/\/console$/i, "");

async function boot() {
  const main = document.getElementById("main");
  let config;
  try {
    const response = await fetch(`${consoleBase}/config.json`, { cache: "no-store" });
    config = await response.json();
  } catch (error) {
    replace(main, h("p", { class: "error" }, "The console could not read its configuration."));
    return;
  }
  if (config.entra) config.entra.msal = `${consoleBase}/${config.entra.msal}`;
  const session = new Session(config);
  try {
    await session.start();
  } catch (error) {
    replace(main, h("p", { class: "error" }, `Sign-in could not start: ${error.message}`));
    return;
  }
  const api = new Api(apiBase, () => session.headers());
  api.instance = sessionStorage.getItem(INSTANCE_STORE) || config.instance_id || "default";
  if (!session.signedIn) {
    showSignIn(main, session, config, api);
    return;
  }
  showConsole(main, session, config, api);
}

function showSignIn(main, session, config, api) {
  document.getElementById("loading")?.remove();
  if (session.mode === "entra") {
    replace(main, h("section", { class: "panel", "aria-labelledby": "signin-title" },
      h("h2", { id: "signin-title" }, "Sign in"),
      h("p", {}, "Sign in with your organization account to see what assistants remember about you."),
      h("button", { class: "primary", id: "signin-entra", onclick: () => startSignIn(session) }, "Sign in with Microsoft")));
    return;
  }
  if (session.mode === "key") {
    const [keyField, key] = field("Service key", h("input", { type: "password", name: "key", autocomplete: "off", required: true }));
    const [upnField, upn] = field("Your user principal name (UPN)", h("input", { type: "email", name: "upn", autocomplete: "username", required: true }));
    const [instField, inst] = field("Instance", h("input", { type: "text", name: "instance", value: api.instance, required: true }));
    const form = h("form", { id: "key-form", novalidate: true },
      h("h2", { id: "signin-title" }, "Developer sign-in"),
      h("p", { class: "notice" }, "This deployment accepts service keys (MEMORY_AUTH_MODE=key). This form is for developers: "
        + "whoever holds a key can name any user. The key stays in this tab's session storage and is never put in a URL."),
      keyField, upnField, instField,
      h("div", { class: "actions" }, h("button", { type: "submit", class: "primary" }, "Sign in")));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      if (!key.value.trim() || !upn.value.trim() || !inst.value.trim()) {
        announce("Enter the key, your UPN and the instance.", { error: true });
        return;
      }
      session.setKeyCredential(key.value.trim(), upn.value.trim(), upn.value.trim());
      sessionStorage.setItem(INSTANCE_STORE, inst.value.trim());
      api.instance = inst.value.trim();
      showConsole(main, session, config, api);
    });
    replace(main, h("section", { class: "panel", "aria-labelledby": "signin-title" }, form));
    key.focus();
    return;
  }
  replace(main, h("p", { class: "error" }, `This console cannot sign in under MEMORY_AUTH_MODE=${(config.auth_modes || []).join(",")}.`));
}

/** Starts a sign-in by redirect, and says so when it cannot start (MSAL cannot reach the authority, or refuses). */
async function startSignIn(session) {
  try {
    await session.signIn();
  } catch (error) {
    announce(`Sign-in could not start: ${error.message || String(error)}`, { error: true });
  }
}

function showConsole(main, session, config, api) {
  document.getElementById("loading")?.remove();
  const who = document.getElementById("who");
  const [instField, inst] = field("Instance", h("input", { type: "text", value: api.instance, size: 14 }));
  inst.addEventListener("change", () => {
    if (!inst.value.trim()) return;
    api.instance = inst.value.trim();
    sessionStorage.setItem(INSTANCE_STORE, api.instance);
    selectTab(current);
  });
  instField.classList.add("inline-field");
  replace(who,
    h("span", { id: "signed-in", hidden: !session.who }, "Signed in as ", h("strong", { id: "signed-in-as" }, session.who)),
    instField,
    session.mode === "local" ? null
      : h("button", { type: "button", id: "sign-out", onclick: async () => {
        forgetScans();
        // Sign-out by App Service or Entra navigates away: a reload now would abort that navigation, and the
        // page would come back signed in. Only a sign-out that stays here (a key) reloads, to show the form.
        if (!(await session.signOut())) location.reload();
      } }, "Sign out"));

  const person = new PersonView(api, config);
  const operator = new OperatorView(api, session, config);
  const tabs = [
    { id: "tab-memory", label: "My memory", view: () => person.showMemory() },
    { id: "tab-audit", label: "My audit trail", view: () => person.showAudit() },
    { id: "tab-operator", label: "Operator", view: () => operator.show() },
  ];
  let current = tabs[0];
  let renders = 0;
  const nav = document.getElementById("tabs");
  nav.hidden = false;
  const list = h("div", { role: "tablist", "aria-label": "Console sections" });
  const buttons = tabs.map((tab, index) => h("button", {
    type: "button", role: "tab", id: tab.id, "aria-controls": "main", tabindex: index === 0 ? "0" : "-1",
    onclick: () => selectTab(tab),
    onkeydown: (event) => {
      const step = { ArrowRight: 1, ArrowLeft: -1 }[event.key];
      if (!step) return;
      const next = tabs[(tabs.indexOf(tab) + step + tabs.length) % tabs.length];
      document.getElementById(next.id).focus();
      selectTab(next);
    },
  }, tab.label));
  replace(nav, list);
  list.append(...buttons);

  async function selectTab(tab) {
    current = tab;
    for (const b of buttons) {
      const selected = b.id === tab.id;
      b.setAttribute("aria-selected", String(selected));
      b.tabIndex = selected ? 0 : -1;
    }
    main.setAttribute("aria-labelledby", tab.id);
    replace(main, h("p", { class: "muted" }, "Loading…"));
    // Only the newest selection may render: a slower view chosen earlier must not replace it.
    const turn = ++renders;
    try {
      const view = await tab.view();
      if (turn !== renders) return;
      replace(main, view);
      settleFocus();
      // Marked on the frame after the view is in the DOM: what the first-paint test measures.
      requestAnimationFrame(() => performance.mark("console:view-shown"));
    } catch (error) {
      if (turn !== renders) return;
      const signIn = error instanceof ApiError && error.status === 401;
      // Under App Service or Entra sign-in, a sign-in that expired while the page was open can be renewed.
      const again = signIn && (session.mode === "easyauth" || session.mode === "entra");
      replace(main, h("p", { class: "error", role: "alert" }, signIn
        ? `You are not signed in, or your sign-in was refused: ${error.message}`
        : error.message || String(error)),
      again ? h("p", {}, h("button", { type: "button", class: "primary", id: "sign-in-again",
        onclick: () => startSignIn(session) }, "Sign in again")) : null);
      settleFocus();
    }
  }
  person.onChange = () => selectTab(current);
  // In modes easyauth and entra the page cannot know the UPN the API resolves; the API says it.
  person.onIdentity = (upn) => {
    document.getElementById("signed-in-as").textContent = upn;
    document.getElementById("signed-in").hidden = false;
  };
  selectTab(tabs[0]);
}

// A page shown again from the back/forward cache is the page as it was, memory included, even after a sign-out
// (the page is no-store, yet a browser may still keep it): it is loaded afresh, so the sign-in is checked again.
window.addEventListener("pageshow", (event) => {
  if (event.persisted) location.reload();
});

boot();
