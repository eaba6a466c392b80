import type { Schemas } from "../api/client";
import type { Context } from "../context";
import { fill, formatNumber, formatTime, h, pageQuery, pageState, pager, statusBadge } from "../dom";

const STATUSES: Schemas["RunStatus"][] = ["Pending", "Deploying", "Running", "Completed", "Failed"];

/** Runs, newest first (the API's order), filtered by status and environment, a page at a time. */
export async function runsPage({ api }: Context, main: HTMLElement): Promise<void> {
  const query = new URLSearchParams(location.hash.split("?")[1] ?? "");
  const status = query.get("status") ?? "";
  const environment = query.get("environment") ?? "";
  const page = pageState(query);
  const [environments, runs] = await Promise.all([
    api.get("/environments", { query: { limit: 100 } }),
    api.get("/runs", {
      query: {
        status: (status || null) as Schemas["RunStatus"] | null,
        environment_id: environment || null,
        limit: page.size,
        next_token: page.token || null,
      },
    }),
  ]);
  const go = (changes: Record<string, string>) => {
    const next = new URLSearchParams({ status, environment, limit: query.get("limit") ?? "", ...changes });
    for (const [name, value] of [...next.entries()]) if (!value) next.delete(name);
    location.hash = `#/runs?${next}`;
  };
  const statusFilter = h(
    "select",
    { id: "filter-status", onchange: (e) => go({ status: (e.target as HTMLSelectElement).value }) },
    h("option", { value: "" }, "Any status"),
    STATUSES.map((s) => h("option", { value: s, selected: s === status }, s)),
  );
  const environmentIds = [...new Set(environments.items.map((e) => e.environment_id))].sort();
  const environmentFilter = h(
    "select",
    { id: "filter-environment", onchange: (e) => go({ environment: (e.target as HTMLSelectElement).value }) },
    h("option", { value: "" }, "Any environment"),
    environmentIds.map((id) => h("option", { value: id, selected: id === environment }, id)),
  );
  const rows = runs.items.map((run) =>
    h(
      "tr",
      {},
      h("td", {}, h("a", { href: `#/runs/${encodeURIComponent(run.run_id)}` }, run.run_id)),
      h("td", {}, statusBadge(run.status)),
      h("td", {}, run.model, run.case_scope ? h("span", { class: "tag" }, `${run.case_scope} held-out cases only`) : null),
      h("td", {}, `${run.environment_id} ${run.environment_version}`),
      h("td", { class: "number" }, formatNumber(run.overall_score)),
      h("td", {}, formatTime(run.created_at)),
    ),
  );
  fill(main, 
    h("h1", {}, "Runs"),
    h(
      "div",
      { class: "filters" },
      h("label", { for: "filter-status" }, "Status"),
      statusFilter,
      h("label", { for: "filter-environment" }, "Environment"),
      environmentFilter,
    ),
    rows.length
      ? h(
          "div",
          { class: "table-scroll" },
          h(
          "table",
          { class: "list", "aria-label": "Runs" },
          h(
            "thead",
            {},
            h("tr", {}, ["Run", "Status", "Model", "Environment", "Score", "Created"].map((t) => h("th", { scope: "col" }, t))),
          ),
          h("tbody", {}, rows),
          ),
        )
      : h("p", {}, "No runs match these filters."),
    pager("runs", rows.length, page, runs.next_token, (token, number) => {
      location.hash = `#/runs?${pageQuery(query, token, number)}`;
    }),
  );
}
