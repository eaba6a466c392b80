/** Small DOM builders: text is always set as text, never parsed as HTML. */
export type Child = Node | string | number | null | undefined | false;
type Attributes = Record<string, string | number | boolean | ((event: Event) => void) | undefined>;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Attributes = {},
  ...children: (Child | Child[])[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === false) continue;
    if (typeof value === "function") element.addEventListener(name.replace(/^on/, ""), value);
    else element.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    element.append(child instanceof Node ? child : String(child));
  }
  return element;
}

export function formatNumber(value: number | null | undefined, precision?: number | null): string {
  if (value === null || value === undefined) return "—";
  if (precision !== null && precision !== undefined) return value.toFixed(precision);
  return Number.isInteger(value) ? String(value) : value.toFixed(4).replace(/0+$/, "");
}

export function formatTime(iso: string | null | undefined): string {
  if (!iso) return "—";
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC");
}

export function statusBadge(status: string): HTMLElement {
  return h("span", { class: `status status-${status.toLowerCase()}` }, status);
}

/**
 * How a page says the API's words: the API names fields by their paths in the body and things by their ids,
 * while the person reading sees the form's labels and the names they gave.
 */
export interface Wording {
  /** A field's path as the API names it ("limits.max_in_flight") to the form's label ("Requests at once"). */
  labels?: Record<string, string>;
  /** A field's path to what its value must look like, said instead of the pattern the API checked it with. */
  formats?: Record<string, string>;
  /** An id to the name people know it by, such as a connection's. */
  names?: Record<string, string>;
}

/**
 * The error's sentence, in the page's words. For an invalid request, each field to fix by its label, with
 * the API's reason; the API's sentence repeats those reasons, so it is not shown as well.
 */
export function errorBox(error: unknown, wording: Wording = {}): HTMLElement {
  const message = error instanceof Error ? error.message : String(error);
  const problems = (error as { problems?: { location: string; field: string; message: string }[] }).problems ?? [];
  if (!problems.length) return h("p", { class: "error", role: "alert" }, reword(message, wording));
  return h(
    "div",
    { class: "error", role: "alert" },
    h("p", {}, problems.length === 1 ? "Check this:" : "Check these:"),
    h(
      "ul",
      {},
      problems.map((p) => {
        // A pattern means nothing to a reader: the form says what the value looks like instead.
        const reason = /should match pattern/.test(p.message)
          ? (wording.formats?.[p.field] ?? "this is not in the form the field takes")
          : reword(p.message, wording);
        // A problem of the whole request (its field is where it came from) is its reason alone.
        if (p.field === p.location) return h("li", {}, reason);
        return h("li", {}, h("strong", {}, wording.labels?.[p.field] ?? p.field), `: ${reason}`);
      }),
    ),
  );
}

/**
 * The sentence with each field path and id it holds replaced by its label or name, longest first. A field
 * named by a plain word ("model") is left alone: in a sentence that word is more often English than a field.
 */
function reword(sentence: string, { labels = {}, names = {} }: Wording): string {
  const paths = Object.entries(labels).filter(([path]) => /[._]/.test(path));
  const words = { ...Object.fromEntries(paths), ...Object.fromEntries(Object.entries(names).map(([id, name]) => [id, `\u201c${name}\u201d`])) };
  const found = Object.keys(words).sort((a, b) => b.length - a.length);
  if (!found.length) return sentence;
  const escaped = found.map((word) => word.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  // A path is replaced only whole: "limits.max_in_flight" but not the "max_in_flight" inside it.
  return sentence.replace(new RegExp(`(?<![\\w.-])(?:${escaped.join("|")})(?![\\w-]|\\.\\w)`, "g"), (word) => words[word]);
}

/** Appends children to an existing element, skipping the absent ones, as `h` does. */
export function fill(parent: HTMLElement, ...children: (Child | Child[])[]): void {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    parent.append(child instanceof Node ? child : String(child));
  }
}

/** A byte count as people read it: 4.3 KB, 12 MB (powers of 1,000, as file managers show). */
export function formatBytes(bytes: number | null | undefined): string {
  if (bytes === null || bytes === undefined) return "—";
  if (bytes < 1000) return `${bytes} B`;
  const units = ["KB", "MB", "GB", "TB"];
  let value = bytes / 1000;
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit += 1;
  }
  return `${value < 10 ? value.toFixed(1) : Math.round(value)} ${units[unit]}`;
}

/** Where a paged list is: the API's token of the shown page and its number, kept in the route's query. */
export interface PageState {
  token: string;
  number: number;
  /** Items a page: the route's `limit` (1 to 100, as the API takes), else the list's own size. */
  size: number;
}

export function pageState(query: URLSearchParams, fallbackSize = 20): PageState {
  const number = Number(query.get("n") ?? "1");
  const token = query.get("page") ?? "";
  const limit = Number(query.get("limit"));
  return {
    token,
    number: token && Number.isInteger(number) && number > 1 ? number : 1,
    size: Number.isInteger(limit) && limit >= 1 && limit <= 100 ? limit : fallbackSize,
  };
}

/** The query of another page of a list, the list's other parameters kept. */
export function pageQuery(query: URLSearchParams, token: string, number: number): string {
  const next = new URLSearchParams(query);
  next.delete("page");
  next.delete("n");
  if (token) {
    next.set("page", token);
    next.set("n", String(number));
  }
  return next.toString();
}

/**
 * How many a list shows and where it is ("Training runs 21–40 of more", "3 training runs"), with First and
 * Next page. The API does not count a listing; the last page knows the total, the others say there are more.
 */
export function pager(
  noun: string,
  shown: number,
  page: PageState,
  nextToken: string | null | undefined,
  go: (token: string, number: number) => void,
): HTMLElement {
  const first = (page.number - 1) * page.size + 1;
  const last = first + shown - 1;
  const text =
    page.number === 1 && !nextToken
      ? `${shown} ${shown === 1 ? noun.replace(/s$/, "") : noun}`
      : shown === 0
        ? `No more ${noun}`
        : nextToken
          ? `${noun} ${first}–${last}, more on the next page`
          : `${noun} ${first}–${last} of ${last}`;
  return h(
    "nav",
    { class: "pager", "aria-label": `Pages of ${noun}` },
    h("span", { class: "count" }, text[0].toUpperCase() + text.slice(1)),
    page.number > 1 ? h("button", { type: "button", onclick: () => go("", 1) }, "First page") : null,
    nextToken ? h("button", { type: "button", onclick: () => go(nextToken, page.number + 1) }, "Next page") : null,
  );
}
