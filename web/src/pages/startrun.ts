import type { Schemas } from "../api/client";
import type { Context } from "../context";
import { errorBox, fill, h } from "../dom";
import { findVersion } from "./environments";

interface PhaseView {
  index?: number;
  name?: string;
}

type Source = "upload" | "live";

/**
 * Start a run of one registered environment version: an uploaded submission (POST /runs answers the URL the
 * file is PUT to) or a live model asked through one of your connections. Either way the run's page follows.
 */
export async function startRunPage(context: Context, main: HTMLElement, params: string[]): Promise<void> {
  const { api } = context;
  const [environmentId, version] = params.map(decodeURIComponent);
  const back = h("p", {}, h("a", { href: "#/environments" }, "All environments"));
  const [env, connections] = await Promise.all([
    findVersion(api, environmentId, version),
    api.get("/connections", { query: { inference: true, limit: 100 } }).then((page) => page.items),
  ]);
  if (!env) {
    fill(main, h("h1", {}, "Not found"));
    throw new Error(`no environment ${environmentId} version ${version}: the Environments page lists every version`);
  }
  if (env.status !== "Registered") {
    fill(main, back, h("h1", {}, `Start a run of ${env.environment_id} ${env.version}`));
    throw new Error(`${env.environment_id} ${env.version} is ${env.status}: runs start only from a registered version`);
  }
  const phases = env.phases as PhaseView[];
  const source = (value: Source, label: string) => {
    const id = `run-source-${value}`;
    const radio = h("input", { type: "radio", name: "run-source", id, value, checked: value === "upload" });
    return [radio, h("div", { class: "choice" }, radio, h("label", { for: id }, label))] as const;
  };
  const [uploadRadio, uploadChoice] = source("upload", "An uploaded submission (a predictions file or zip)");
  const [liveRadio, liveChoice] = source("live", "A live model through one of your connections");
  const input = (id: string, attributes: Record<string, string | number | boolean> = {}) =>
    h("input", { id, type: "text", autocomplete: "off", ...attributes });
  const model = input("run-model", { required: true, placeholder: "the model's name, as the leaderboard shows it" });
  const phase = h(
    "select",
    { id: "run-phase" },
    phases.map((p, position) => h("option", { value: p.name ?? String(p.index ?? position) }, `${p.index ?? position}: ${p.name ?? ""}`)),
  );
  const submission = h("input", { id: "run-submission", type: "file", accept: ".json,.jsonl,.zip" });
  const connection = h(
    "select",
    { id: "run-connection" },
    connections.map((c) => h("option", { value: c.connection_id }, `${c.name} (${c.provider})`)),
  );
  const modelId = input("run-model-id");
  // Named as the API names them, so that a refusal's "set inference_mode to on_demand" names an option.
  const mode = h(
    "select",
    { id: "run-inference-mode" },
    h("option", { value: "auto" }, "auto: batch for a run of many cases, when the provider has batch inference"),
    h("option", { value: "on_demand" }, "on_demand: a request per case, answered as the run goes"),
    h("option", { value: "batch" }, "batch: the provider's batch inference, cheaper, answered within hours"),
  );
  const number = (id: string, attributes: Record<string, string | number>) => input(id, { type: "number", inputmode: "decimal", ...attributes });
  const temperature = number("run-temperature", { min: 0, max: 2, step: "any" });
  const maxTokens = number("run-max-tokens", { min: 1, max: 32768, step: 1 });
  const topP = number("run-top-p", { min: 0, max: 1, step: "any" });
  const inFlight = number("run-max-in-flight", { min: 1, max: 1000, step: 1, value: 4 });
  const perMinute = number("run-requests-per-minute", { min: 1, step: 1 });
  const tokensPerMinute = number("run-tokens-per-minute", { min: 1, step: 1 });
  const field = (label: string, control: HTMLElement) => [h("label", { for: control.id }, label), control];

  const uploadPart = h(
    "fieldset",
    { id: "run-upload", class: "step-part" },
    h("legend", {}, "Submission"),
    h("div", { class: "step" }, field("Submission file", submission)),
    h("p", { class: "muted" }, "Its name is kept as the run's submission file: letters, digits, '.', '_' and '-', ending in .json, .jsonl or .zip."),
  );
  const livePart = h(
    "fieldset",
    { id: "run-live", class: "step-part", hidden: true },
    h("legend", {}, "Live model"),
    connections.length
      ? h(
          "div",
          { class: "step" },
          field("Connection", connection),
          field("Model id", modelId),
          field("Inference mode", mode),
          h("p", { class: "muted" }, "Sampling (empty leaves the provider's default)"),
          field("Temperature", temperature),
          field("Max tokens", maxTokens),
          field("Top p", topP),
          h("p", { class: "muted" }, "Limits: how hard the run may ask the model"),
          field("Requests at once", inFlight),
          field("Requests per minute", perMinute),
          field("Tokens per minute", tokensPerMinute),
        )
      : h("p", {}, "None of your connections answers live runs. ", h("a", { href: "#/connections" }, "Connect a provider"), " with an inference endpoint first."),
  );
  const start = h("button", { type: "submit", id: "run-start" }, "Start run");
  const outcome = h("div", { "aria-live": "polite", id: "run-outcome" });
  let key: string | null = null;
  const chosen = (): Source => (liveRadio.checked ? "live" : "upload");
  for (const radio of [uploadRadio, liveRadio]) {
    radio.addEventListener("change", () => {
      uploadPart.hidden = chosen() !== "upload";
      livePart.hidden = chosen() !== "live";
    });
  }
  // The API names the body's paths (a sentence about the live model by its path within model_config) and
  // the connection's id; the form has labels and the connection has the name its owner gave it.
  const controls: [string, HTMLElement][] = [
    ["model", model],
    ["phase", phase],
    ["filename", submission],
    ["model_config.connection_id", connection],
    ["model_config.model_id", modelId],
    ["model_config.inference_mode", mode],
    ["model_config.sampling.temperature", temperature],
    ["model_config.sampling.max_tokens", maxTokens],
    ["model_config.sampling.top_p", topP],
    ["model_config.limits.max_in_flight", inFlight],
    ["model_config.limits.requests_per_minute", perMinute],
    ["model_config.limits.tokens_per_minute", tokensPerMinute],
  ];
  const labelOf = (control: HTMLElement) => main.querySelector(`label[for="${control.id}"]`)?.textContent ?? control.id;
  const wording = () => ({
    labels: Object.fromEntries(
      controls.flatMap(([path, control]) => {
        const label = labelOf(control);
        const own = path.replace("model_config.", "");
        return path === own ? [[path, label]] : [[path, label], [own, label]];
      }),
    ),
    names: Object.fromEntries(connections.map((c) => [c.connection_id, c.name])),
  });
  const say = (text: string) => outcome.replaceChildren(h("p", { role: "status" }, text));
  const optional = (control: HTMLInputElement) => (control.value.trim() === "" ? undefined : Number(control.value));

  const submit = async () => {
    const base = { environment_id: env.environment_id, version: env.version, model: model.value.trim(), phase: phase.value || null };
    const file = submission.files?.[0];
    if (chosen() === "upload" && !file) {
      outcome.replaceChildren(errorBox(new Error("choose the submission file to upload")));
      return;
    }
    if (chosen() === "live" && !connections.length) {
      outcome.replaceChildren(errorBox(new Error("connect a provider that answers live runs first")));
      return;
    }
    // The generated type marks every field with a default as required, so the bodies are cast.
    const body = (
      chosen() === "upload"
        ? { ...base, filename: file?.name }
        : {
            ...base,
            model_config: {
              connection_id: connection.value,
              model_id: modelId.value.trim(),
              inference_mode: mode.value,
              sampling: { temperature: optional(temperature), max_tokens: optional(maxTokens), top_p: optional(topP) },
              limits: {
                max_in_flight: optional(inFlight),
                requests_per_minute: optional(perMinute),
                tokens_per_minute: optional(tokensPerMinute),
              },
            },
          }
    ) as Schemas["CreateRunRequest"];
    key ??= crypto.randomUUID();
    start.disabled = true;
    try {
      say("Creating the run...");
      const created = await api.post("/runs", { body, headers: { "Idempotency-Key": key } });
      if (file && created.upload_url) {
        say(`Uploading ${file.name} to run ${created.run.run_id}...`);
        const put = await fetch(created.upload_url, { method: created.upload_method ?? "PUT", body: file });
        if (!put.ok) {
          throw new Error(`the submission upload was refused (${put.status}): press Start run again for a new upload URL`);
        }
      }
      location.hash = `#/runs/${encodeURIComponent(created.run.run_id)}`;
    } catch (error) {
      start.disabled = false;
      outcome.replaceChildren(errorBox(error, wording()));
    }
  };

  fill(
    main,
    back,
    h("h1", {}, `Start a run of ${env.environment_id} ${env.version}`),
    env.title ? h("p", { class: "muted" }, env.title) : null,
    h(
      "form",
      {
        class: "wizard",
        "aria-label": "Start a run",
        // Any change makes the next press a new run, not a retry of the last one.
        oninput: () => (key = null),
        onsubmit: (event: Event) => {
          event.preventDefault();
          void submit();
        },
      },
      h("fieldset", { class: "step-part" }, h("legend", {}, "What answers the cases"), uploadChoice, liveChoice),
      h("fieldset", { class: "step-part" }, h("legend", {}, "Run"), h("div", { class: "step" }, field("Model name", model), field("Phase", phase))),
      uploadPart,
      livePart,
      h("p", {}, start),
      outcome,
    ),
  );
}
