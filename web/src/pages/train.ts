import type { Schemas } from "../api/client";
import type { Context } from "../context";
import { errorBox, fill, formatBytes, formatTime, h } from "../dom";
import { LAUNCH_MESSAGES_KEY, type LaunchMessages } from "./training";

export const BENCHMARK_BANNER =
  "Benchmark fine-tune dataset selected: training will reuse the saved BenchGen artifact and its recorded base model.";
// A benchmark's fine-tune artifact teaches the correct answer: demonstration (SFT) material.
const ARTIFACT_METHOD: Schemas["Method"] = "demonstration";
const POLL_MS = 1500;
const NUMBER = /^-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?$/;

type Dataset = Schemas["DatasetRecord"];
type Connection = Schemas["ConnectionRecord"];
type Preparation = Schemas["PreparationDetail"];
type Package = Schemas["PackageRecord"];

/** What tells apart datasets that share a generated name: when, from which run, how many examples. */
function datasetLabel(dataset: Dataset): string {
  return `${dataset.name} · ${formatTime(dataset.created_at)} · run ${dataset.run_id} · ${dataset.example_count} examples`;
}

/**
 * The Train wizard: a dataset and its base model, a connection whose profile takes them, a Ready package
 * of the dataset's run in a profile the connection reads, hyperparameters beside the benchmark author's
 * suggestions, and a deliberate Launch.
 */
export async function trainPage(context: Context, main: HTMLElement): Promise<void> {
  const { api } = context;
  const query = new URLSearchParams(location.hash.split("?")[1] ?? "");
  const [datasets, profiles] = await Promise.all([
    api.get("/datasets", { query: { limit: 100 } }).then((page) => page.items),
    api.get("/export-profiles").then((page) => page.items),
  ]);
  const demonstrationProfiles = new Set(profiles.filter((p) => p.methods.includes(ARTIFACT_METHOD)).map((p) => p.profile_id));
  const datasetSelect = h(
    "select",
    { id: "train-dataset" },
    h("option", { value: "" }, "Choose a dataset"),
    datasets.map((d) => h("option", { value: d.dataset_id, selected: d.dataset_id === query.get("dataset") }, datasetLabel(d))),
  );
  const baseModel = h("input", { id: "train-base-model", type: "text", autocomplete: "off", "aria-describedby": "base-model-note" });
  const baseModelNote = h("p", { id: "base-model-note", class: "muted" });
  const banner = h("div", { "aria-live": "polite" });
  const connectionStep = h("fieldset", { id: "train-connections", class: "step-part" });
  const materialStep = h("fieldset", { id: "train-material", class: "step-part" });
  const hyperStep = h("fieldset", { id: "train-hyperparameters", class: "step-part" });
  const rows = h("div", { class: "hyper-rows" });
  const suggestions = h("div", { class: "suggestions" });
  const launch = h("button", { type: "submit", id: "train-launch", disabled: true }, "Launch training run");
  const outcome = h("div", { "aria-live": "polite", id: "train-outcome" });

  let dataset: Dataset | undefined;
  let connection: Connection | undefined;
  let packages: { item: Package; preparation: Preparation }[] = [];
  let chosen: { item: Package; preparation: Preparation } | undefined;
  let launchKey: string | null = null;
  // Each change starts a new generation: an answer that arrives for an older one is dropped.
  let generation = 0;

  const ready = () => {
    launch.disabled = !(dataset && connection && chosen && baseModel.value.trim());
    launchKey = null;
  };

  const showSuggestions = () => {
    const suggested = Object.entries(chosen?.preparation.suggested_hyperparams ?? {});
    suggestions.replaceChildren(
      h("h3", { id: "suggested-title" }, "The benchmark author's suggestions"),
      suggested.length
        ? h(
            "dl",
            { class: "facts", "aria-labelledby": "suggested-title" },
            suggested.flatMap(([name, value]) => [h("dt", {}, name), h("dd", {}, String(value))]),
          )
        : h("p", {}, chosen ? "The benchmark suggests none." : "Choose a package to see them."),
      h("p", { class: "muted" }, "Shown for reference: nothing is sent that you did not enter, in the provider's own names."),
    );
  };

  const chooseMaterial = async (mine: number) => {
    materialStep.replaceChildren(h("legend", {}, "3. Training material"));
    packages = [];
    chosen = undefined;
    showSuggestions();
    ready();
    if (!dataset || !connection) {
      materialStep.append(h("p", { class: "muted" }, "Choose a dataset and a connection first."));
      return;
    }
    const found = await materialOf(context, dataset);
    if (mine !== generation) return;
    const accepted = new Set(connection.profile.export_profiles);
    packages = found.packages.filter(({ item }) => item.status === "Ready" && accepted.has(item.profile as never));
    const readable = connection.profile.export_profiles.filter((id) => demonstrationProfiles.has(id));
    if (packages.length) {
      fill(
        materialStep,
        h("p", { class: "muted" }, `Ready packages of run ${dataset.run_id} in a profile ${connection.name} reads:`),
        packages.map(({ item, preparation }, index) => {
          const id = `train-package-${index}`;
          const radio = h("input", { type: "radio", name: "train-package", id, value: item.package_id, checked: index === 0 });
          radio.addEventListener("change", () => {
            chosen = packages[index];
            showSuggestions();
            ready();
          });
          return h(
            "div",
            { class: "choice" },
            radio,
            h(
              "label",
              { for: id },
              h("strong", {}, item.profile),
              ` · ${formatBytes(item.size)} · preparation ${preparation.preparation_id} · ${preparation.splits.train ?? 0} train rows · ${formatTime(item.created_at)}`,
            ),
          );
        }),
      );
      chosen = packages[0];
    } else {
      materialStep.append(
        buildMaterial(context, dataset, found.preparations, readable, () => {
          generation += 1;
          void chooseMaterial(generation);
        }),
      );
    }
    showSuggestions();
    ready();
  };

  const chooseConnection = async (mine: number) => {
    connectionStep.replaceChildren(h("legend", {}, "2. Connection"));
    connection = undefined;
    if (!dataset || !baseModel.value.trim()) {
      connectionStep.append(h("p", { class: "muted" }, "Choose a dataset first."));
      await chooseMaterial(mine);
      return;
    }
    const found = await api.get("/connections", {
      query: { method: ARTIFACT_METHOD, base_model: baseModel.value.trim(), limit: 100 },
    });
    if (mine !== generation) return;
    if (!found.items.length) {
      connectionStep.append(
        h(
          "p",
          {},
          `None of your connections trains ${ARTIFACT_METHOD} on ${baseModel.value.trim()}. `,
          h("a", { href: "#/connections" }, "Connect a provider"),
          " whose profile does, or name another base model.",
        ),
      );
    }
    connectionStep.append(
      ...found.items.map((item, index) => {
        const id = `train-connection-${index}`;
        const radio = h("input", { type: "radio", name: "train-connection", id, value: item.connection_id, checked: index === 0 });
        radio.addEventListener("change", () => {
          connection = item;
          generation += 1;
          void chooseMaterial(generation).catch(showError);
        });
        return h(
          "div",
          { class: "choice", "data-connection": item.connection_id },
          radio,
          h(
            "label",
            { for: id },
            h("strong", {}, item.name),
            ` (${item.provider}) · methods ${item.profile.methods.join(", ")} · model families ${item.profile.model_families.join(", ")}`,
          ),
        );
      }),
    );
    connection = found.items[0];
    await chooseMaterial(mine);
  };

  const showError = (error: unknown) => outcome.replaceChildren(errorBox(error));

  const chooseDataset = async () => {
    generation += 1;
    const mine = generation;
    outcome.replaceChildren();
    dataset = datasets.find((d) => d.dataset_id === datasetSelect.value);
    if (dataset) baseModel.value = dataset.base_model;
    noteBaseModel();
    await chooseConnection(mine);
  };

  const noteBaseModel = () => {
    const typed = baseModel.value.trim();
    // The banner holds while the recorded base model is the one trained; an override has its own note.
    const reused = dataset?.source === "benchmark" && typed === dataset.base_model;
    if (reused !== Boolean(banner.firstChild)) {
      banner.replaceChildren(reused ? h("p", { class: "banner", role: "status" }, BENCHMARK_BANNER) : "");
    }
    baseModelNote.textContent =
      dataset && typed && typed !== dataset.base_model
        ? `Overrides the dataset's base model ${dataset.base_model}: the API trains ${typed} and warns at launch.`
        : dataset
          ? "The dataset's recorded base model. Type another to override it."
          : "";
  };

  datasetSelect.addEventListener("change", () => void chooseDataset().catch(showError));
  baseModel.addEventListener("input", noteBaseModel);
  baseModel.addEventListener("change", () => {
    generation += 1;
    void chooseConnection(generation).catch(showError);
  });

  const addRow = (name = "", value = "") => {
    const index = rows.children.length;
    const nameInput = h("input", { type: "text", id: `hyper-name-${index}`, autocomplete: "off", value: name, class: "hyper-name" });
    const valueInput = h("input", { type: "text", id: `hyper-value-${index}`, autocomplete: "off", value, class: "hyper-value" });
    const row = h(
      "div",
      { class: "hyper-row" },
      h("label", { for: `hyper-name-${index}` }, "Name"),
      nameInput,
      h("label", { for: `hyper-value-${index}` }, "Value"),
      valueInput,
    );
    row.append(
      h(
        "button",
        {
          type: "button",
          "aria-label": `Remove hyperparameter ${index + 1}`,
          onclick: () => {
            row.remove();
            launchKey = null;
          },
        },
        "Remove",
      ),
    );
    for (const input of [nameInput, valueInput]) input.addEventListener("input", () => (launchKey = null));
    rows.append(row);
    nameInput.focus();
  };
  fill(
    hyperStep,
    h("legend", {}, "4. Hyperparameters"),
    h("p", { class: "muted" }, "In the provider's own names (Bedrock's epochCount, for one); none leaves the provider's defaults."),
    h("div", { class: "hyper-layout" }, h("div", {}, rows, h("button", { type: "button", onclick: () => addRow() }, "Add hyperparameter")), suggestions),
  );
  showSuggestions();

  const submit = async () => {
    if (!dataset || !connection || !chosen) return;
    const hyperparameters: Record<string, string | number> = {};
    for (const row of rows.querySelectorAll(".hyper-row")) {
      const name = (row.querySelector(".hyper-name") as HTMLInputElement).value.trim();
      const value = (row.querySelector(".hyper-value") as HTMLInputElement).value.trim();
      if (name) hyperparameters[name] = NUMBER.test(value) ? Number(value) : value;
    }
    const typed = baseModel.value.trim();
    launchKey ??= crypto.randomUUID();
    launch.disabled = true;
    outcome.replaceChildren(h("p", { role: "status" }, "Launching..."));
    try {
      const launched = await api.post("/training-runs", {
        body: {
          package_id: chosen.item.package_id,
          connection_id: connection.connection_id,
          // The package's own base model is sent as none, so the API's notice says it was reused.
          base_model: typed === chosen.preparation.base_model ? null : typed,
          hyperparameters,
        },
        headers: { "Idempotency-Key": launchKey },
      });
      const messages: LaunchMessages = {
        training_run_id: launched.training_run.training_run_id,
        notices: launched.notices ?? [],
        warnings: launched.warnings ?? [],
      };
      sessionStorage.setItem(LAUNCH_MESSAGES_KEY, JSON.stringify(messages));
      location.hash = `#/training-runs/${encodeURIComponent(launched.training_run.training_run_id)}`;
    } catch (error) {
      launch.disabled = false;
      outcome.replaceChildren(errorBox(error));
    }
  };

  fill(
    main,
    h("h1", {}, "Train"),
    h(
      "form",
      {
        class: "wizard",
        "aria-label": "Launch a training run",
        onsubmit: (event: Event) => {
          event.preventDefault();
          void submit();
        },
      },
      h(
        "fieldset",
        { class: "step-part" },
        h("legend", {}, "1. Model & Dataset"),
        h("div", { class: "step" }, h("label", { for: "train-dataset" }, "Dataset"), datasetSelect, h("label", { for: "train-base-model" }, "Base model"), baseModel, baseModelNote, banner),
      ),
      connectionStep,
      materialStep,
      hyperStep,
      h("p", {}, launch, h("span", { class: "muted" }, "Launching starts a provider job that may cost money.")),
      outcome,
    ),
  );
  await chooseDataset();
}

/** The preparations of the dataset's run (yours, Ready, demonstration) and their packages. */
async function materialOf(
  { api }: Context,
  dataset: Dataset,
): Promise<{ preparations: Preparation[]; packages: { item: Package; preparation: Preparation }[] }> {
  const summaries = (await api.get("/preparations", { query: { limit: 100 } })).items.filter(
    (p) =>
      p.status === "Ready" &&
      p.method === ARTIFACT_METHOD &&
      p.environment_id === dataset.environment_id &&
      p.environment_version === dataset.environment_version,
  );
  const details = await Promise.all(
    summaries.map((p) => api.get("/preparations/{preparation_id}", { path: { preparation_id: p.preparation_id } })),
  );
  const preparations = details.filter((p) => p.run_ids.includes(dataset.run_id));
  const lists = await Promise.all(
    preparations.map((p) =>
      api
        .get("/preparations/{preparation_id}/packages", { path: { preparation_id: p.preparation_id }, query: { limit: 100 } })
        .then((page) => page.items.map((item) => ({ item, preparation: p }))),
    ),
  );
  return { preparations, packages: lists.flat() };
}

/** No fitting package yet: prepare the run's material, or package a preparation in a profile the connection reads. */
function buildMaterial(
  { api }: Context,
  dataset: Dataset,
  preparations: Preparation[],
  readable: string[],
  built: () => void,
): HTMLElement {
  const status = h("div", { "aria-live": "polite" });
  const wait = async <T extends { status?: string | null }>(read: () => Promise<T>, busy: string, what: string): Promise<T> => {
    let found = await read();
    while (found.status === busy) {
      status.replaceChildren(h("p", { role: "status" }, `${what}...`));
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
      found = await read();
    }
    return found;
  };
  if (!readable.length) {
    return h("p", {}, "This connection reads no demonstration export profile: choose another connection.");
  }
  if (!preparations.length) {
    const prepare = h("button", { type: "button" }, "Prepare training material");
    prepare.addEventListener("click", async () => {
      prepare.disabled = true;
      try {
        // Selection and settings are left to the API (the bundle's own settings apply): the generated type
        // marks every field with a default as required, so the spec is cast.
        const spec = {
          environment_id: dataset.environment_id,
          environment_version: dataset.environment_version,
          method: ARTIFACT_METHOD,
          run_ids: [dataset.run_id],
        } as Schemas["PreparationSpec"];
        const created = await api.post("/preparations", { body: spec });
        const found = await wait(
          () => api.get("/preparations/{preparation_id}", { path: { preparation_id: created.preparation_id } }),
          "Generating",
          "Preparing the examples and the held-out cases",
        );
        if (found.status !== "Ready") throw new Error(found.failure_reason ?? `the preparation is ${found.status}`);
        built();
      } catch (error) {
        prepare.disabled = false;
        status.replaceChildren(errorBox(error));
      }
    });
    return h(
      "div",
      {},
      h("p", {}, `Run ${dataset.run_id} has no training material yet: a preparation holds out cases for the evaluation and writes the examples.`),
      prepare,
      status,
    );
  }
  const profile = h("select", { id: "train-package-profile" }, readable.map((id) => h("option", { value: id }, id)));
  const build = h("button", { type: "button" }, "Build package");
  build.addEventListener("click", async () => {
    build.disabled = true;
    try {
      const created = await api.post("/preparations/{preparation_id}/packages", {
        path: { preparation_id: preparations[0].preparation_id },
        body: { profile: profile.value },
      });
      const found = await wait(
        () => api.get("/packages/{package_id}", { path: { package_id: created.package_id } }),
        "Building",
        "Building the package",
      );
      if (found.status !== "Ready") throw new Error(found.reason ?? `the package is ${found.status}`);
      built();
    } catch (error) {
      build.disabled = false;
      status.replaceChildren(errorBox(error));
    }
  });
  return h(
    "div",
    {},
    h("p", {}, `No Ready package of preparation ${preparations[0].preparation_id} is in a profile this connection reads.`),
    h("div", { class: "filters" }, h("label", { for: "train-package-profile" }, "Export profile"), profile, build),
    status,
  );
}
