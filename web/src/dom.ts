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

export function errorBox(error: unknown): HTMLElement {
  return h("p", { class: "error", role: "alert" }, error instanceof Error ? error.message : String(error));
}

/** Appends children to an existing element, skipping the absent ones, as `h` does. */
export function fill(parent: HTMLElement, ...children: (Child | Child[])[]): void {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    parent.append(child instanceof Node ? child : String(child));
  }
}
