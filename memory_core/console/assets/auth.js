// Sign-in per MEMORY_AUTH_MODE (docs/console.md):
//   local     no sign-in: the service's local user;
//   easyauth  App Service signs the user in and injects the principal: nothing to send;
//   entra     MSAL.js (vendored, loaded only in this mode) gets an access token for the API;
//   key       a developer-only form: the key and identity live in sessionStorage, never in a URL.
// An operator key, when given, is also kept in sessionStorage and sent only on operator calls.

const KEY_STORE = "memory-core.console.key";
const OPERATOR_STORE = "memory-core.console.operator-key";

/**
 * JSON with every character outside ASCII written as a \uXXXX escape, for a header value.
 * fetch refuses a header holding a character above U+00FF (TypeError) and sends one in
 * U+0080-U+00FF as a single Latin-1 byte; servers read header bytes as Latin-1 (RFC 9110
 * leaves them opaque), so only ASCII arrives as written (docs/identity.md).
 */
function asciiJson(value) {
  return JSON.stringify(value).replace(/[\u0080-\uffff]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

export class Session {
  constructor(config) {
    this.config = config;
    this.modes = config.auth_modes || [];
    this.msal = null;
    this.account = null;
  }

  /** The way this page signs in: the first usable of easyauth, entra, local, key. */
  get mode() {
    if (this.modes.includes("easyauth")) return "easyauth";
    if (this.modes.includes("entra") && this.config.entra) return "entra";
    if (this.modes.includes("local")) return "local";
    if (this.modes.includes("key")) return "key";
    return "unsupported";
  }

  get keyCredential() {
    try { return JSON.parse(sessionStorage.getItem(KEY_STORE) || "null"); } catch { return null; }
  }

  setKeyCredential(key, upn, name) {
    sessionStorage.setItem(KEY_STORE, JSON.stringify({ key, upn, name }));
  }

  get operatorKey() {
    return sessionStorage.getItem(OPERATOR_STORE) || "";
  }

  setOperatorKey(key) {
    if (key) sessionStorage.setItem(OPERATOR_STORE, key);
    else sessionStorage.removeItem(OPERATOR_STORE);
  }

  /** True when the page can call the API as someone now. */
  get signedIn() {
    if (this.mode === "key") return Boolean(this.keyCredential);
    if (this.mode === "entra") return Boolean(this.account);
    return this.mode === "local" || this.mode === "easyauth";
  }

  get who() {
    if (this.mode === "key") return this.keyCredential?.upn || "";
    if (this.mode === "entra") return this.account?.username || "";
    if (this.mode === "local") return "local@localhost";
    return "";
  }

  /** Loads MSAL and completes a sign-in redirect, in mode entra only. */
  async start() {
    if (this.mode !== "entra") return;
    await loadScript(this.config.entra.msal);
    const { PublicClientApplication } = window.msal;
    this.msal = new PublicClientApplication({
      auth: {
        clientId: this.config.entra.client_id,
        authority: this.config.entra.authority,
        knownAuthorities: this.config.entra.known_authorities || [],
        redirectUri: `${location.origin}${location.pathname}`,
      },
      cache: { cacheLocation: "sessionStorage" },
    });
    await this.msal.initialize();
    const result = await this.msal.handleRedirectPromise();
    this.account = result?.account || this.msal.getAllAccounts()[0] || null;
  }

  /** Where an App Service sign-in starts, to come back to this page. */
  get easyAuthLogin() {
    return `/.auth/login/aad?post_login_redirect_uri=${encodeURIComponent(location.pathname)}`;
  }

  async signIn() {
    if (this.mode === "entra") await this.msal.loginRedirect({ scopes: this.config.entra.scopes });
    else if (this.mode === "easyauth") location.assign(this.easyAuthLogin);
  }

  /**
   * Forgets the tab's credentials and ends the sign-in. True when that navigates away (App Service's logout, or
   * Entra's by redirect): the caller must then leave the page alone, since a reload would abort the navigation.
   */
  async signOut() {
    sessionStorage.removeItem(KEY_STORE);
    sessionStorage.removeItem(OPERATOR_STORE);
    if (this.mode === "entra" && this.account) {
      // MSAL starts the navigation and resolves after a timeout, while the logout page may still be loading.
      await this.msal.logoutRedirect({ account: this.account });
      return true;
    }
    if (this.mode === "easyauth") {
      location.assign("/.auth/logout");
      return true;
    }
    return false;
  }

  /** Headers naming the person. */
  async headers() {
    if (this.mode === "key") {
      const c = this.keyCredential;
      if (!c) return {};
      return { "X-API-KEY": c.key, "X-USER-IDENTITY": asciiJson({ upn: c.upn, name: c.name || c.upn }) };
    }
    // App Service answers an XMLHttpRequest whose sign-in has expired with 401, not a 302 to its login page.
    if (this.mode === "easyauth") return { "X-Requested-With": "XMLHttpRequest" };
    if (this.mode === "entra" && this.account) {
      const request = { scopes: this.config.entra.scopes, account: this.account };
      try {
        const token = await this.msal.acquireTokenSilent(request);
        return { Authorization: `Bearer ${token.accessToken}` };
      } catch (error) {
        await this.msal.acquireTokenRedirect(request);
        return {};
      }
    }
    return {};
  }

  /** Headers for operator routes: the operator key alone when one is set, else the person's sign-in (role). */
  async operatorHeaders() {
    const key = this.operatorKey;
    if (key) return { "X-API-KEY": key };
    return this.headers();
  }
}

function loadScript(src) {
  return new Promise((resolve, reject) => {
    const script = document.createElement("script");
    script.src = src;
    script.addEventListener("load", resolve);
    script.addEventListener("error", () => reject(new Error(`could not load ${src}`)));
    document.head.append(script);
  });
}
