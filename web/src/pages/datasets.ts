import type { Schemas } from "../api/client";
import type { Context } from "../context";
import { fill, formatTime, h, pageQuery, pageState, pager } from "../dom";

const FINETUNE = "finetune";

export function benchmarkBadge(dataset: Schemas["DatasetRecord"]): HTMLElement | null {
  return dataset.source === "benchmark" ? h("span", { class: "badge badge-benchmark" }, "Benchmark") : null;
}

/**
 * What tells a dataset from the others of its generated name (which shares the benchmark, model, score and
 * month): when it was saved, its size, the environment version and the start of its run's id.
 */
export function datasetDistinction(dataset: Schemas["DatasetRecord"]): string {
  return [
    `saved ${formatTime(dataset.created_at)}`,
    `${dataset.example_count} examples`,
    `${dataset.environment_id} ${dataset.environment_version}`,
    `run ${dataset.run_id.slice(0, 8)}`,
  ].join(" · ");
}

/** Datasets, newest first; the Fine-tune filter keeps the fine-tune datasets only. */
export async function datasetsPage({ api }: Context, main: HTMLElement): Promise<void> {
  const query = new URLSearchParams(location.hash.split("?")[1] ?? "");
  const finetuneOnly = query.get("kind") === FINETUNE;
  const page = pageState(query);
  const datasets = await api.get("/datasets", {
    query: { kind: finetuneOnly ? FINETUNE : null, limit: page.size, next_token: page.token || null },
  });
  const go = (kind: boolean) => {
    const next = new URLSearchParams();
    if (kind) next.set("kind", FINETUNE);
    if (query.get("limit")) next.set("limit", query.get("limit")!);
    location.hash = `#/datasets?${next}`;
  };
  const filter = h("input", {
    type: "checkbox",
    id: "filter-finetune",
    checked: finetuneOnly,
    onchange: (e) => go((e.target as HTMLInputElement).checked),
  });
  fill(main, 
    h("h1", {}, "Datasets"),
    h("div", { class: "filters" }, filter, h("label", { for: "filter-finetune" }, "Fine-tune")),
    datasets.items.length
      ? h(
          "div",
          { class: "table-scroll" },
          h(
          "table",
          { class: "list", "aria-label": "Datasets" },
          h("thead", {}, h("tr", {}, ["Dataset", "Kind", "Base model", "Examples", "Run", "Created"].map((t) => h("th", { scope: "col" }, t)))),
          h(
            "tbody",
            {},
            datasets.items.map((dataset) =>
              h(
                "tr",
                {},
                h(
                  "td",
                  {},
                  h("a", { href: `#/datasets/${encodeURIComponent(dataset.dataset_id)}` }, dataset.name),
                  " ",
                  benchmarkBadge(dataset),
                  h("div", { class: "muted distinction" }, datasetDistinction(dataset)),
                ),
                h("td", {}, dataset.kind ?? "—"),
                h("td", {}, dataset.base_model),
                h("td", { class: "number" }, String(dataset.example_count)),
                h("td", {}, h("a", { href: `#/runs/${encodeURIComponent(dataset.run_id)}`, "aria-label": `View run ${dataset.run_id}` }, "View run")),
                h("td", {}, formatTime(dataset.created_at)),
              ),
            ),
          ),
          ),
        )
      : page.token
        ? null
        : h("p", {}, "No datasets yet: a run whose benchmark emits a fine-tune artifact saves one."),
    pager("datasets", datasets.items.length, page, datasets.next_token, (token, number) => {
      location.hash = `#/datasets?${pageQuery(query, token, number)}`;
    }),
  );
}

export async function datasetPage({ api }: Context, main: HTMLElement, [datasetId]: string[]): Promise<void> {
  const dataset = await api.get("/datasets/{dataset_id}", { path: { dataset_id: datasetId } });
  const field = (label: string, value: Node | string) => [h("dt", {}, label), h("dd", {}, value)];
  fill(main, 
    h("h1", {}, dataset.name, " ", benchmarkBadge(dataset)),
    h("p", { class: "muted subtitle" }, `${datasetDistinction(dataset)} · dataset ${dataset.dataset_id}`),
    h(
      "dl",
      { class: "facts" },
      field("Base model", dataset.base_model),
      field("Examples", String(dataset.example_count)),
      field("Splits", `train ${dataset.train_count}, validation ${dataset.validation_count}, test ${dataset.test_count}`),
      field("Selection criterion", dataset.selection_criterion),
      field("Benchmark", `${dataset.benchmark} (${dataset.environment_id} ${dataset.environment_version})`),
      field("Artifact sha256", h("code", {}, dataset.artifact_sha256)),
      field("Created", formatTime(dataset.created_at)),
    ),
    h(
      "p",
      {},
      h("a", { class: "button", href: `#/runs/${encodeURIComponent(dataset.run_id)}` }, "View benchmark"),
      " ",
      h("a", { class: "button", href: `#/train?dataset=${encodeURIComponent(dataset.dataset_id)}` }, "Train on it"),
    ),
  );
}
