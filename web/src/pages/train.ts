import type { Schemas } from "../api/client";
import type { Context } from "../context";
import { errorBox, fill, formatBytes, formatTime, h } from "../dom";
import { datasetDistinction } from "./datasets";
import { baseModelField, connectionChoices, hyperparameterEditor, launchControl } from "./launch";

export const BENCHMARK_BANNER =
  "Benchmark fine-tune dataset selected: training will reuse the saved BenchGen artifact and its recorded base model.";
// A benchmark's fine-tune artifact teaches the correct answer: demonstration (SFT) material.
const ARTIFACT_METHOD: Schemas["Method"] = "demonstration";
const POLL_MS = 1500;

type Dataset = Schemas["DatasetRecord"];
type Connection = Schemas["ConnectionRecord"];
type Preparation = Schemas["PreparationDetail"];
type Package = Schemas["PackageRecord"];

/**
 * The datasets under their generated names, each option saying what tells it apart from the others of its
 * name: a narrow menu cuts an option's end, and the shared name would fill it.
 */
function datasetOptions(datasets: Dataset[], wanted: string | null): HTMLElement[] {
  const names = [...new Set(datasets.map((d) => d.name))];
  return names.map((name) =>
    h(
      "optgroup",
      { label: name },
      datasets
        .filter((d) => d.name === name)
        .map((d) =>
          h(
            "option",
            { value: d.dataset_id, selected: d.dataset_id === wanted },
            datasetDistinction(d),
          ),
        ),
    ),
  );
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
    datasetOptions(datasets, query.get("dataset")),
  );
  // A closed menu shows the chosen option alone: the name it is grouped under is said beside it.
  const datasetName = h("p", { id: "train-dataset-name", class: "muted" });
  const baseModel = baseModelField("train");
  const banner = h("div", { "aria-live": "polite" });
  const connectionStep = h("fieldset", { id: "train-connections", class: "step-part" });
  const materialStep = h("fieldset", { id: "train-material", class: "step-part" });
  const control = launchControl(context, "train");
  const hyper = hyperparameterEditor("train", "4. Hyperparameters", () => control.changed());

  let dataset: Dataset | undefined;
  let connection: Connection | undefined;
  let packages: { item: Package; preparation: Preparation }[] = [];
  let chosen: { item: Package; preparation: Preparation } | undefined;
  // Each change starts a new generation: an answer that arrives for an older one is dropped.
  let generation = 0;

  const ready = () => {
    control.button.disabled = !(dataset && connection && chosen && baseModel.value());
    control.changed();
  };

  const chooseMaterial = async (mine: number) => {
    materialStep.replaceChildren(h("legend", {}, "3. Training material"));
    packages = [];
    chosen = undefined;
    hyper.suggest(undefined);
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
        h("p", { class: "muted" }, `Ready packages of the run behind ${dataset.name} in a profile ${connection.name} reads:`),
        packages.map(({ item, preparation }, index) => {
          const id = `train-package-${index}`;
          const radio = h("input", { type: "radio", name: "train-package", id, value: item.package_id, checked: index === 0 });
          radio.addEventListener("change", () => {
            chosen = packages[index];
            hyper.suggest(chosen.preparation.suggested_hyperparams);
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
    hyper.suggest(chosen?.preparation.suggested_hyperparams);
    ready();
  };

  const chooseConnection = async (mine: number) => {
    connection = undefined;
    if (!dataset || !baseModel.value()) {
      connectionStep.replaceChildren(h("legend", {}, "2. Connection"), h("p", { class: "muted" }, "Choose a dataset first."));
      await chooseMaterial(mine);
      return;
    }
    // Cleared at once, so no earlier base model's connections stay on show while the new ones load.
    connectionStep.replaceChildren(h("legend", {}, "2. Connection"));
    const offered = h("fieldset", {});
    const first = await connectionChoices(context, offered, "train", "2. Connection", { method: ARTIFACT_METHOD, baseModel: baseModel.value() }, (item) => {
      connection = item;
      generation += 1;
      void chooseMaterial(generation).catch(showError);
    });
    if (mine !== generation) return;
    connectionStep.replaceChildren(...offered.childNodes);
    connection = first;
    await chooseMaterial(mine);
  };

  const showError = (error: unknown) => control.outcome.replaceChildren(errorBox(error));

  const chooseDataset = async () => {
    generation += 1;
    const mine = generation;
    control.outcome.replaceChildren();
    dataset = datasets.find((d) => d.dataset_id === datasetSelect.value);
    datasetName.textContent = dataset ? dataset.name : "";
    if (dataset) baseModel.input.value = dataset.base_model;
    noteBaseModel();
    await chooseConnection(mine);
  };

  const noteBaseModel = () => {
    // The banner holds while the recorded base model is the one trained; an override has its own note.
    const reused = dataset?.source === "benchmark" && baseModel.value() === dataset.base_model;
    if (reused !== Boolean(banner.firstChild)) {
      banner.replaceChildren(reused ? h("p", { class: "banner", role: "status" }, BENCHMARK_BANNER) : "");
    }
    baseModel.describe(dataset?.base_model, "the dataset's");
  };

  datasetSelect.addEventListener("change", () => void chooseDataset().catch(showError));
  baseModel.input.addEventListener("input", noteBaseModel);
  baseModel.input.addEventListener("change", () => {
    generation += 1;
    void chooseConnection(generation).catch(showError);
  });

  const submit = async () => {
    if (!dataset || !connection || !chosen) return;
    await control.launch({
      package: chosen.item,
      recorded: chosen.preparation.base_model,
      connection,
      baseModel: baseModel.value(),
      hyperparameters: hyper.values(),
    });
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
        h(
          "div",
          { class: "step" },
          h("label", { for: "train-dataset" }, "Dataset"),
          datasetSelect,
          datasetName,
          h("label", { for: "train-base-model" }, "Base model"),
          baseModel.input,
          baseModel.note,
          banner,
        ),
      ),
      connectionStep,
      materialStep,
      hyper.element,
      control.element,
      control.outcome,
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
