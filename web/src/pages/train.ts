import type { Schemas } from "../api/client";
import type { Context } from "../context";
import { errorBox, fill, h } from "../dom";

export const BENCHMARK_BANNER =
  "Benchmark fine-tune dataset selected: training will reuse the saved BenchGen artifact and its recorded base model.";
// A benchmark's fine-tune artifact teaches the correct answer: demonstration (SFT) material.
const ARTIFACT_METHOD: Schemas["Method"] = "demonstration";

/** The Train wizard's Model & Dataset step: a dataset, its base model, and the connections that take them. */
export async function trainPage({ api }: Context, main: HTMLElement): Promise<void> {
  const query = new URLSearchParams(location.hash.split("?")[1] ?? "");
  const datasets = (await api.get("/datasets", { query: { limit: 100 } })).items;
  const datasetSelect = h(
    "select",
    { id: "train-dataset" },
    h("option", { value: "" }, "Choose a dataset"),
    datasets.map((d) => h("option", { value: d.dataset_id, selected: d.dataset_id === query.get("dataset") }, d.name)),
  );
  const baseModel = h("input", { id: "train-base-model", type: "text", autocomplete: "off" });
  const banner = h("div", { "aria-live": "polite" });
  const connections = h("div", { id: "train-connections" });

  const update = async () => {
    const dataset = datasets.find((d) => d.dataset_id === datasetSelect.value);
    const fromBenchmark = dataset?.source === "benchmark";
    if (dataset && fromBenchmark) baseModel.value = dataset.base_model;
    baseModel.readOnly = fromBenchmark;
    banner.replaceChildren(fromBenchmark ? h("p", { class: "banner", role: "status" }, BENCHMARK_BANNER) : "");
    connections.replaceChildren();
    if (!dataset) return;
    try {
      const found = await api.get("/connections", {
        query: { method: ARTIFACT_METHOD, base_model: baseModel.value || null, limit: 100 },
      });
      connections.replaceChildren(
        h("h2", { id: "connections-title" }, "Connections that accept this dataset"),
        found.items.length
          ? h(
              "ul",
              { class: "connections", "aria-labelledby": "connections-title" },
              found.items.map((c) =>
                h("li", { "data-connection": c.connection_id }, h("strong", {}, c.name), ` (${c.provider}: ${c.profile.methods.join(", ")})`),
              ),
            )
          : h("p", {}, "None of your connections trains this method and base model. Connect a provider whose profile does."),
      );
    } catch (error) {
      connections.replaceChildren(errorBox(error));
    }
  };
  datasetSelect.addEventListener("change", () => void update());
  baseModel.addEventListener("change", () => void update());

  fill(main, 
    h("h1", {}, "Train"),
    h(
      "form",
      { class: "step", "aria-labelledby": "step-title", onsubmit: (e) => e.preventDefault() },
      h("h2", { id: "step-title" }, "Model & Dataset"),
      h("label", { for: "train-dataset" }, "Dataset"),
      datasetSelect,
      h("label", { for: "train-base-model" }, "Base model"),
      baseModel,
      banner,
    ),
    connections,
  );
  if (datasetSelect.value) await update();
}
