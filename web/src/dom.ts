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

/** The error's sentence and, for an invalid request, each field to fix as the API named it. */
export function errorBox(error: unknown): HTMLElement {
  const message = error instanceof Error ? error.message : String(error);
  const problems = (error as { problems?: { field: string; message: string }[] }).problems ?? [];
  if (!problems.length) return h("p", { class: "error", role: "alert" }, message);
  return h(
    "div",
    { class: "error", role: "alert" },
    h("p", {}, message),
    h("ul", {}, problems.map((p) => h("li", {}, h("strong", {}, p.field), `: ${p.message}`))),
  );
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
