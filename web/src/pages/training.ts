import type { Schemas } from "../api/client";
import type { Context } from "../context";
import { type Child, errorBox, fill, formatTime, h, pageQuery, pageState, pager, statusBadge } from "../dom";

const TERMINAL: Schemas["TrainingStatus"][] = ["Succeeded", "Failed", "Cancelled"];
const POLL_MS = 2000;
/** Where Train leaves what the API said at launch (notices, warnings) for the run's page to show. */
export const LAUNCH_MESSAGES_KEY = "benchgen.launchMessages";

export interface LaunchMessages {
  training_run_id: string;
  notices: string[];
  warnings: string[];
}

/** A training run by what people know it as: the base model trained, on which environment's material. */
export function trainingRunTitle(run: Pick<Schemas["TrainingRunRecord"], "base_model" | "environment_id" | "environment_version">): string {
  return `${run.base_model} trained on ${run.environment_id} ${run.environment_version}`;
}

/** Your training runs, newest first, a page at a time. */
export async function trainingRunsPage({ api }: Context, main: HTMLElement): Promise<void> {
  const query = new URLSearchParams(location.hash.split("?")[1] ?? "");
  const page = pageState(query);
  const found = await api.get("/training-runs", { query: { limit: page.size, next_token: page.token || null } });
  fill(
    main,
    h("h1", {}, "Training runs"),
    found.items.length
      ? trainingRunTable(found.items, "Training runs")
      : page.token
        ? null
        : h("p", {}, "No training runs yet: launch one from ", h("a", { href: "#/train" }, "Train"), "."),
    pager("training runs", found.items.length, page, found.next_token, (token, number) => {
      location.hash = `#/training-runs?${pageQuery(query, token, number)}`;
    }),
  );
}

function trainingRunTable(items: Schemas["TrainingRunRecord"][], label: string): HTMLElement {
  return h(
    "div",
    { class: "table-scroll" },
    h(
      "table",
      { class: "list", "aria-label": label },
      h("thead", {}, h("tr", {}, ["Training run", "Status", "Provider", "Base model", "Created"].map((t) => h("th", { scope: "col" }, t)))),
      h(
        "tbody",
        {},
        items.map((run) =>
          h(
            "tr",
            {},
            h(
              "td",
              {},
              h("a", { href: `#/training-runs/${encodeURIComponent(run.training_run_id)}` }, trainingRunTitle(run)),
              h("div", { class: "muted wrap" }, run.training_run_id),
            ),
            h("td", {}, statusBadge(run.status ?? "Queued")),
            h("td", {}, run.provider),
            h("td", { class: "wrap" }, run.base_model),
            h("td", {}, formatTime(run.created_at)),
          ),
        ),
      ),
    ),
  );
}

/** One training run: its status timeline as the pipeline records it, live until it ends, with Cancel. */
export async function trainingRunPage(context: Context, main: HTMLElement, [trainingRunId]: string[]): Promise<void> {
  let timer: number | undefined;
  context.onLeave(() => window.clearTimeout(timer));
  const launched = launchMessages(trainingRunId);
  // The connection's name, read once: a deleted connection is said to be one.
  let connectionName: string | undefined;
  const refresh = async (): Promise<void> => {
    const run = await context.api.get("/training-runs/{training_run_id}", { path: { training_run_id: trainingRunId } });
    connectionName ??= await context.api
      .get("/connections/{connection_id}", { path: { connection_id: run.connection_id } })
      .then((connection) => connection.name, () => "a deleted connection");
    main.replaceChildren();
    fill(main, ...view(context, run, connectionName, launched, refresh));
    if (!TERMINAL.includes(run.status ?? "Queued") && main.isConnected) {
      timer = window.setTimeout(() => void refresh().catch((error) => main.append(errorBox(error))), POLL_MS);
    }
  };
  await refresh();
}

function launchMessages(trainingRunId: string): LaunchMessages | null {
  const stored = sessionStorage.getItem(LAUNCH_MESSAGES_KEY);
  const found = stored ? (JSON.parse(stored) as LaunchMessages) : null;
  return found && found.training_run_id === trainingRunId ? found : null;
}

function view(
  context: Context,
  run: Schemas["TrainingRunRecord"],
  connectionName: string,
  launched: LaunchMessages | null,
  refresh: () => Promise<void>,
): Child[] {
  const status = run.status ?? "Queued";
  const going = !TERMINAL.includes(status);
  const field = (label: string, ...value: (Node | string)[]) => [h("dt", {}, label), h("dd", {}, ...value)];
  const outcome = h("div", { "aria-live": "polite" });
  const cancel = h("button", { type: "button", id: "cancel-training" }, "Cancel training run");
  cancel.addEventListener("click", async () => {
    cancel.disabled = true;
    try {
      await context.api.post("/training-runs/{training_run_id}/cancel", { path: { training_run_id: run.training_run_id } });
      await refresh();
    } catch (error) {
      cancel.disabled = false;
      outcome.replaceChildren(errorBox(error));
    }
  });
  const cost = Object.entries(run.cost ?? {});
  return [
    h("p", {}, h("a", { href: "#/training-runs" }, "All training runs")),
    h("h1", {}, trainingRunTitle(run)),
    status === "Failed" ? h("p", { class: "failure-reason headline", role: "alert" }, run.failure_reason ?? "It failed, and no reason was recorded.") : null,
    going
      ? h(
          "p",
          { class: "live", role: "status" },
          run.cancel_requested
            ? `Cancel requested: the pipeline stops the provider job at its next check. The page updates itself.`
            : `This training run is ${status}: the page updates itself.`,
        )
      : null,
    launched?.notices.length ? h("ul", { class: "notices", "aria-label": "Launch notices" }, launched.notices.map((n) => h("li", {}, n))) : null,
    launched?.warnings.length ? h("ul", { class: "warnings", "aria-label": "Launch warnings" }, launched.warnings.map((w) => h("li", {}, w))) : null,
    going && !run.cancel_requested ? h("p", {}, cancel) : null,
    outcome,
    h(
      "div",
      { class: "run-layout" },
      h(
        "section",
        { "aria-labelledby": "timeline-title" },
        h("h2", { id: "timeline-title" }, "Status timeline"),
        h(
          "ol",
          { class: "timeline", "aria-labelledby": "timeline-title" },
          (run.timeline ?? []).map((change) =>
            h(
              "li",
              { "data-status": change.status },
              statusBadge(change.status),
              " ",
              h("span", { class: "muted" }, formatTime(change.at)),
              change.provider_status ? [" ", h("span", { class: "tag" }, `provider: ${change.provider_status}`)] : null,
              change.message ? h("p", { class: "timeline-message" }, change.message) : null,
            ),
          ),
        ),
        h("h2", {}, "Hyperparameters"),
        hyperparameters(run),
      ),
      h(
        "aside",
        { class: "sidebar", "aria-label": "Training run details" },
        h(
          "dl",
          {},
          field("Status", statusBadge(status)),
          field("Training run ID", h("code", {}, run.training_run_id)),
          field("Provider", run.provider),
          field("Connection", connectionName, " ", h("code", { class: "muted" }, run.connection_id)),
          field("Provider job", run.job_id ? h("code", {}, run.job_id) : "not started yet"),
          field("Job name", h("code", {}, run.job_name)),
          field("Resulting model", run.result_model ? h("code", {}, run.result_model) : status === "Succeeded" ? "the provider named none" : "not yet"),
          field("Base model", run.base_model, h("span", { class: "muted" }, run.base_model_source === "package" ? " (the package's)" : " (chosen at launch)")),
          field("Method", run.method),
          field("Package", h("code", {}, run.package_id), ` (${run.package_profile})`),
          field(
            "Workspace",
            h("a", { href: `#/workspace/${encodeURIComponent(run.preparation_id)}/results` }, `${run.environment_id} ${run.environment_version}, ${run.method}`),
            " ",
            h("code", { class: "muted" }, run.preparation_id),
          ),
          field("Environment", `${run.environment_id} ${run.environment_version}`),
          field("Created", formatTime(run.created_at)),
          field("Finished", formatTime(run.finished_at)),
          field("Cost", cost.length ? cost.map(([name, value]) => `${name} ${value}`).join(", ") : "not reported by the provider"),
        ),
      ),
    ),
  ];
}

function hyperparameters(run: Schemas["TrainingRunRecord"]): HTMLElement {
  const used = Object.entries(run.hyperparameters ?? {});
  const suggested = Object.entries(run.suggested_hyperparams ?? {});
  return h(
    "div",
    { class: "hyperparameters" },
    h("h3", {}, "Sent to the provider"),
    used.length ? h("dl", { class: "facts" }, used.flatMap(([name, value]) => [h("dt", {}, name), h("dd", {}, String(value))])) : h("p", {}, "None: the provider's defaults."),
    h("h3", {}, "Suggested by the benchmark's author (never applied by themselves)"),
    suggested.length
      ? h("dl", { class: "facts" }, suggested.flatMap(([name, value]) => [h("dt", {}, name), h("dd", {}, String(value))]))
      : h("p", {}, "No suggestions."),
  );
}
