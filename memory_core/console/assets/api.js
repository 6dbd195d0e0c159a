// The console's only way to the CoreAPI. Every call carries the signed-in credential in
// headers (never in a URL); every body is JSON sent as application/json, so a cross-site
// form can never make one of these calls.

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/** The code of the error a redirect (to a login page) becomes: the sign-in has expired. */
export const SIGN_IN_EXPIRED = "sign_in_expired";

// Names a listing may use for "there is more": the first one present is followed.
const NEXT_TOKEN_FIELDS = ["continuation", "continuation_token", "continuationToken", "next", "next_token"];
const MAX_PAGES = 50;

// What a status means, in words, for an answer that carries no message of the service's own: a front (App Service,
// a gateway, a proxy) answers with its own page, in HTML, and "The service answered 503." told no one what to do.
const PLAIN_STATUS = {
  400: "The service could not read this request.",
  401: "The service did not accept the sign-in.",
  403: "You are not allowed to do this.",
  404: "It is not there any more: it may have been removed meanwhile.",
  409: "It changed meanwhile (another tab or person acted first). Reload to see it as it is now.",
  413: "This is too large for the service.",
  429: "The service is receiving too many requests. Wait a moment and try again.",
  500: "The service failed on this request. Try again; if it keeps failing, tell the service's administrator.",
  502: "The service cannot be reached just now. Try again in a moment.",
  503: "The service is unavailable just now. Try again in a moment.",
  504: "The service took too long to answer. Try again in a moment.",
};

/**
 * The message for an error answer whose body holds none: the status in words and its number, and how long to wait
 * when the answer says (``Retry-After`` in seconds).
 */
export function plainStatus(status, retryAfter) {
  const words = PLAIN_STATUS[status] || (status >= 500 ? PLAIN_STATUS[500] : "The service refused this request.");
  const wait = /^\d+$/.test(String(retryAfter || "").trim()) ? ` It asks to wait ${Number(retryAfter)} s.` : "";
  return `${words}${wait} (HTTP ${status})`;
}

export function nextToken(page) {
  for (const name of NEXT_TOKEN_FIELDS) {
    const value = page && page[name];
    if (typeof value === "string" && value) return value;
  }
  return null;
}

export class Api {
  /**
   * @param {string} base   the API root, e.g. "/api"
   * @param {() => Promise<Record<string,string>>} credential  headers naming the caller
   */
  constructor(base, credential) {
    this.base = base;
    this.credential = credential;
    this.instance = "default";
  }

  /** The URL of ``path`` on ``instance`` (by default the one the console shows now). */
  url(path, query, instance = this.instance) {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(query || {})) {
      if (v !== undefined && v !== null && v !== "") params.set(k, v);
    }
    const qs = params.toString();
    return `${this.base}/instances/${encodeURIComponent(instance)}${path}${qs ? `?${qs}` : ""}`;
  }

  /**
   * Send ``method`` ``path`` to ``instance`` (by default the one shown now: a caller whose answer belongs to the
   * instance it started on names it, as the Instance field may change while it waits).
   */
  async request(method, path, { query, body, credential, instance } = {}) {
    const headers = { Accept: "application/json", ...(await (credential || this.credential)()) };
    // A redirect is never followed: App Service answers 302 to its login page once the sign-in has expired, and
    // "error" made that a network failure. "manual" makes it an opaque redirect, read below as an expired sign-in.
    const init = { method, headers, credentials: "same-origin", cache: "no-store", redirect: "manual" };
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    let response;
    try {
      response = await fetch(this.url(path, query, instance), init);
    } catch (error) {
      throw new ApiError(0, "network", "The service could not be reached. Check your connection and try again.");
    }
    if (response.type === "opaqueredirect") {
      throw new ApiError(401, SIGN_IN_EXPIRED, "Your sign-in has expired. Sign in again.");
    }
    return response;
  }

  async json(method, path, options) {
    const response = await this.request(method, path, options);
    const text = await response.text();
    let data = null;
    try { data = text ? JSON.parse(text) : null; } catch { data = null; }
    if (!response.ok) {
      const err = (data && data.error) || {};
      throw new ApiError(response.status, err.code || `http_${response.status}`,
        err.message || plainStatus(response.status, response.headers.get("Retry-After")));
    }
    return { status: response.status, data };
  }

  async get(path, query, credential, instance) {
    return (await this.json("GET", path, { query, credential, instance })).data;
  }

  async send(method, path, body, credential, instance) {
    return this.json(method, path, { body: body === undefined ? {} : body, credential, instance });
  }

  /**
   * Every item of a listing, following continuation tokens when the API pages it, up to
   * ``MAX_PAGES`` pages: ``truncated`` is then true, and ``cutShortNote`` says so under the list.
   * ``itemsField`` names the field each page's items are in, or several fields (each gathered over every page).
   * Every page is read from ``instance`` (by default the one shown when the listing starts): a continuation is
   * that instance's, and a later page must not be asked of another one chosen meanwhile.
   */
  async list(path, query, itemsField, credential, instance = this.instance) {
    const fields = [].concat(itemsField);
    const items = Object.fromEntries(fields.map((name) => [name, []]));
    let token = null;
    let first = null;
    for (let page = 0; page < MAX_PAGES; page += 1) {
      const data = await this.get(path, token ? { ...query, continuation: token } : query, credential, instance);
      if (!first) first = data;
      for (const name of fields) items[name].push(...((data && data[name]) || []));
      token = nextToken(data);
      if (!token) break;
    }
    return { ...first, ...items, truncated: token !== null };
  }

  /** The raw text of a download (export), with the file name the API proposes. */
  async download(path, query) {
    const response = await this.request("GET", path, { query });
    if (!response.ok) {
      let message = plainStatus(response.status, response.headers.get("Retry-After"));
      try { message = (await response.json()).error.message || message; } catch { /* not JSON */ }
      throw new ApiError(response.status, "export_failed", message);
    }
    const disposition = response.headers.get("Content-Disposition") || "";
    const match = disposition.match(/filename="([^"]+)"/);
    return { text: await response.text(), filename: match ? match[1] : "memory.md" };
  }
}
