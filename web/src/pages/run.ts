import { ApiError, type Schemas } from "../api/client";
import type { Context } from "../context";
import { type Child, errorBox, fill, formatBytes, formatNumber, formatTime, h, statusBadge } from "../dom";
import { judgePanel, usd } from "../judge";

const FINAL = ["Completed", "Failed"];
const POLL_MS = 2000;
const LOG_LABELS = ["Ingest Log", "Scoring Log", "Inference Log", "Failure Log"];
const ARTIFACT_LABEL = "Finetune Artifact";
const DETAILED_LABEL = "Detailed Results";

/** One run: score tiles, the embedded report, its files and its fine-tune dataset; live while it runs. */
export async function runPage(context: Context, main: HTMLElement, [runId]: string[]): Promise<void> {
  let timer: number | undefined;
  context.onLeave(() => window.clearTimeout(timer));
  const refresh = async (): Promise<void> => {
    const [run, files] = await Promise.all([
      context.api.get("/runs/{run_id}", { path: { run_id: runId } }),
      context.api.get("/runs/{run_id}/files", { path: { run_id: runId } }),
    ]);
    main.replaceChildren();
    fill(main, ...view(context, run, files.files, refresh));
    if (!FINAL.includes(run.status) && main.isConnected) timer = window.setTimeout(() => void refresh().catch(showError), POLL_MS);
  };
  const showError = (error: unknown) => main.append(errorBox(error));
  await refresh();
}

function view(
  context: Context,
  run: Schemas["RunDetail"],
  files: Schemas["RunFile"][],
  refresh: () => Promise<void>,
): Child[] {
  const identity = context.session.identity();
  const isOwner = identity?.sub === run.owner;
  const byLabel = new Map(files.map((file) => [file.label, file]));
  const going = !FINAL.includes(run.status);
  return [
    h("p", {}, h("a", { href: "#/runs" }, "All runs")),
    h("h1", {}, runTitle(run)),
    run.status === "Failed" ? h("p", { class: "failure-reason headline", role: "alert" }, run.failure_reason ?? "It failed, and no reason was recorded.") : null,
    run.case_scope
      ? h("p", { class: "banner scope" }, `This run covers only ${run.case_scope} held-out cases (an evaluation's), not every case of the environment: its score is theirs alone.`)
      : null,
    h(
      "div",
      { class: "run-layout" },
      h(
        "div",
        { class: "run-main" },
        going
          ? h("p", { class: "live", role: "status" }, `This run is ${run.status}${run.phase ? ` (${run.phase})` : ""}: the page updates itself.`)
          : null,
        tiles(run),
        run.warnings?.length ? h("ul", { class: "warnings", "aria-label": "Warnings" }, run.warnings.map((w) => h("li", {}, w))) : null,
        run.judging || run.judge ? judgePanel(run) : null,
        run.status === "Failed" ? failure(byLabel) : detailedResults(byLabel.get(DETAILED_LABEL)),
        going && run.progress ? progressPanel(run.progress) : null,
        going ? stepLogs(byLabel) : null,
        run.inference ? inferencePanel(run.inference) : null,
        run.batch ? batchPanel(run.batch) : null,
        filesTable(files),
        finetunePanel(context, run, byLabel.has(ARTIFACT_LABEL), isOwner, refresh),
      ),
      sidebar(context, run, isOwner),
    ),
  ];
}

/** A run by what people know it as: the model they named and the environment version it ran. */
function runTitle(run: Pick<Schemas["RunDetail"], "model" | "environment_id" | "environment_version">): string {
  return `${run.model} on ${run.environment_id} ${run.environment_version}`;
}

/** What a going live run has asked its model, and what it waits for now. */
function progressPanel(progress: Schemas["InferenceProgressView"]): HTMLElement {
  const field = (label: string, value: string) => [h("dt", {}, label), h("dd", {}, value)];
  const count = (value: number) => value.toLocaleString("en-US");
  return h(
    "section",
    { class: "panel progress", "aria-labelledby": "progress-title" },
    h("h2", { id: "progress-title" }, "Progress"),
    progress.waiting_for ? h("p", { class: "waiting-for" }, `Waiting for ${progress.waiting_for}.`) : null,
    h(
      "dl",
      {},
      field("Cases", progress.cases === null || progress.cases === undefined ? "not planned yet" : count(progress.cases)),
      field("Asked", count(progress.asked ?? 0)),
      field("Answered", count(progress.answered ?? 0)),
      field("Given up on", count(progress.unanswered ?? 0)),
      field("Waiting for an answer", count(progress.waiting)),
      progress.call_deadline ? field("Latest call answers by", formatTime(progress.call_deadline)) : [],
      field("As of", formatTime(progress.updated_at)),
    ),
  );
}

function tiles(run: Schemas["RunDetail"]): HTMLElement {
  const overall = h(
    "div",
    { class: "tile tile-overall" },
    h("span", { class: "tile-title" }, "Overall Score"),
    h("span", { class: "tile-value" }, formatNumber(run.overall_score)),
  );
  return h(
    "section",
    { class: "tiles", "aria-label": "Scores" },
    overall,
    run.metrics?.length
      ? run.metrics.map((tile) =>
          h(
            "div",
            { class: "tile", "data-key": tile.key },
            h("span", { class: "tile-title" }, tile.title),
            h("span", { class: "tile-value" }, formatNumber(tile.value, tile.precision)),
          ),
        )
      : h("p", { class: "no-breakdown" }, "score breakdown isn't available for that run"),
  );
}

function detailedResults(report: Schemas["RunFile"] | undefined): HTMLElement {
  const url = report?.view_url;
  return h(
    "section",
    { class: "detailed", "aria-labelledby": "detailed-title" },
    h(
      "div",
      { class: "section-head" },
      h("h2", { id: "detailed-title" }, "Detailed Results"),
      url ? h("a", { class: "button", href: url, target: "_blank", rel: "noopener noreferrer" }, "Open") : null,
    ),
    url
      ? // No allow-same-origin: the report runs as an opaque origin, whatever its author put in it.
        h("iframe", { src: url, sandbox: "allow-scripts", title: "Detailed results report", class: "report" })
      : h("p", {}, "No detailed results yet."),
  );
}

function failure(byLabel: Map<string, Schemas["RunFile"]>): HTMLElement {
  return h(
    "section",
    { class: "failure", "aria-labelledby": "failure-title" },
    h("h2", { id: "failure-title" }, "Why it failed: its logs"),
    logFrames(byLabel, "The run kept no logs: the reason above is its whole record."),
  );
}

function stepLogs(byLabel: Map<string, Schemas["RunFile"]>): HTMLElement {
  return h("section", { class: "step-logs", "aria-labelledby": "logs-title" }, h("h2", { id: "logs-title" }, "Step logs"), logFrames(byLabel, "No logs yet."));
}

function logFrames(byLabel: Map<string, Schemas["RunFile"]>, none: string): HTMLElement[] {
  const logs = LOG_LABELS.map((label) => byLabel.get(label)).filter((file) => file?.view_url);
  if (!logs.length) return [h("p", { class: "no-logs" }, none)];
  return logs.map((file) =>
    h(
      "div",
      { class: "log" },
      h("h3", {}, file!.label),
      h("iframe", { src: file!.view_url!, sandbox: "", title: file!.label, class: "log-frame" }),
    ),
  );
}

function filesTable(files: Schemas["RunFile"][]): HTMLElement {
  return h(
    "section",
    { "aria-labelledby": "files-title" },
    h("h2", { id: "files-title" }, "Files"),
    files.length
      ? h(
          "table",
          { class: "list files", "aria-labelledby": "files-title" },
          h("thead", {}, h("tr", {}, ["File", "Size", "Actions"].map((t) => h("th", { scope: "col" }, t)))),
          h(
            "tbody",
            {},
            files.map((file) =>
              h(
                "tr",
                { "data-label": file.label },
                h("td", {}, file.label),
                h("td", { class: "number" }, formatBytes(file.size)),
                h(
                  "td",
                  {},
                  h("a", { href: file.url, class: "button", "aria-label": `Download ${file.label}` }, "Download"),
                  file.view_url && file.key.endsWith(".html")
                    ? h(
                        "a",
                        { href: file.view_url, class: "button", target: "_blank", rel: "noopener noreferrer", "aria-label": `View ${file.label}` },
                        "View",
                      )
                    : null,
                ),
              ),
            ),
          ),
        )
      : h("p", {}, "No files yet."),
  );
}

/** How a live run's model was asked: answers, the tokens it reported, and what they cost. */
function inferencePanel(inference: Schemas["InferenceSummary"]): HTMLElement {
  const field = (label: string, value: string) => [h("dt", {}, label), h("dd", {}, value)];
  const count = (value: number | undefined) => (value ?? 0).toLocaleString("en-US");
  const cost = inference.cost;
  const mode = cost?.mode === "batch" ? "batch" : "on-demand";
  return h(
    "section",
    { class: "panel inference", "aria-labelledby": "inference-title" },
    h("h2", { id: "inference-title" }, "Inference"),
    h(
      "dl",
      {},
      field("Cases answered", `${count(inference.answered)} of ${count(inference.cases)}`),
      field("Input tokens", count(inference.input_tokens)),
      field("Output tokens", count(inference.output_tokens)),
      inference.reasoning_tokens ? field("Of them, reasoning", count(inference.reasoning_tokens)) : [],
      inference.cases_without_tokens ? field("Cases without a token count", count(inference.cases_without_tokens)) : [],
      field("Cost", cost ? `${usd(cost.total)} (${mode}, ${cost.currency})` : (inference.cost_note ?? "no prices on the connection")),
    ),
  );
}

/** A batch run's provider jobs: each one's id, status and record counts. */
function batchPanel(batch: Schemas["BatchSummary"]): HTMLElement {
  const count = (value: number | null | undefined) => (value === null || value === undefined ? "not yet" : value.toLocaleString("en-US"));
  const jobs = batch.jobs ?? [];
  const polls = batch.polls ?? 0;
  return h(
    "section",
    { class: "panel batch", "aria-labelledby": "batch-title" },
    h("h2", { id: "batch-title" }, "Batch jobs"),
    h("p", {}, `${jobs.length} ${jobs.length === 1 ? "job" : "jobs"} at the provider, looked at ${polls} ${polls === 1 ? "time" : "times"}.`),
    batch.next_poll_at ? h("p", { class: "next-poll" }, `Next look at the provider: ${formatTime(batch.next_poll_at)}.`) : null,
    h(
      "div",
      { class: "table-scroll" },
      h(
        "table",
        {},
        h("thead", {}, h("tr", {}, ["Job", "Provider job id", "Status", "Records", "Answered", "Failed"].map((t) => h("th", { scope: "col" }, t)))),
        h(
          "tbody",
          {},
          jobs.map((job) =>
            h(
              "tr",
              {},
              h("td", {}, job.name),
              h("td", { class: "wrap" }, job.job_id ? h("code", {}, job.job_id) : "not submitted"),
              h("td", {}, job.message ? `${job.status}: ${job.message}` : job.status),
              h("td", { class: "number" }, count(job.records)),
              h("td", { class: "number" }, count(job.succeeded)),
              h("td", { class: "number" }, count(job.failed)),
            ),
          ),
        ),
      ),
    ),
  );
}

function finetunePanel(
  context: Context,
  run: Schemas["RunDetail"],
  hasArtifact: boolean,
  isOwner: boolean,
  refresh: () => Promise<void>,
): HTMLElement {
  const panel = h("section", { class: "panel finetune", "aria-labelledby": "finetune-title" }, h("h2", { id: "finetune-title" }, "Fine-tune Dataset"));
  if (run.dataset) {
    fill(panel, 
      h("p", {}, "Saved as ", h("a", { href: `#/datasets/${encodeURIComponent(run.dataset.dataset_id)}` }, run.dataset.name ?? run.dataset.dataset_id), "."),
    );
  } else if (hasArtifact) {
    const problem = h("div", { "aria-live": "polite" });
    const save = h("button", { type: "button" }, "Save to FineTune Datasets");
    save.addEventListener("click", async () => {
      save.disabled = true;
      try {
        await context.api.post("/runs/{run_id}/dataset", { path: { run_id: run.run_id } });
        await refresh();
      } catch (error) {
        save.disabled = false;
        if (error instanceof ApiError && error.status === 409) await refresh();
        else problem.replaceChildren(errorBox(error));
      }
    });
    fill(panel, 
      h("p", {}, "The run left a fine-tune artifact that has not been saved as a dataset."),
      isOwner ? save : h("p", {}, "Only the run's owner can save it."),
      problem,
    );
  } else {
    fill(panel, h("p", { class: "finetune-state" }, finetuneState(run)));
  }
  return panel;
}

/** Why a run has no dataset, in the one sentence that is true of its state. */
function finetuneState(run: Schemas["RunDetail"]): string {
  if (run.status === "Failed") return "No dataset: the run failed before it was scored, so no fine-tune artifact was built.";
  if (!FINAL.includes(run.status) || run.artifact_status === "Pending") return "The artifact is built once the run is scored.";
  if (run.artifact_status === "Failed") return `No dataset: building the fine-tune artifact failed (${run.artifact_reason ?? "no reason was recorded"}).`;
  if (run.artifact_reason) return `No dataset: ${run.artifact_reason}.`;
  return "No dataset was recorded for this run.";
}

function sidebar(context: Context, run: Schemas["RunDetail"], isOwner: boolean): HTMLElement {
  const field = (label: string, ...value: (Node | string)[]) => [h("dt", {}, label), h("dd", {}, ...value)];
  const config = h("div", { id: "run-config" });
  return h(
    "aside",
    { class: "sidebar", "aria-label": "Run details" },
    h(
      "dl",
      {},
      field("Status", statusBadge(run.status)),
      field("Model", run.model),
      field("Environment", `${run.environment_id} ${run.environment_version}`),
      field("Created", formatTime(run.created_at)),
      field("Phase", run.phase ?? "—"),
      field("Submission", run.submission_filename ?? h("span", { class: "tag" }, "no file")),
      field("Run ID", h("code", {}, run.run_id)),
      field(
        "Generated Dataset",
        run.dataset ? h("a", { href: `#/datasets/${encodeURIComponent(run.dataset.dataset_id)}` }, run.dataset.name ?? run.dataset.dataset_id) : "—",
      ),
      field("Score", formatNumber(run.overall_score)),
    ),
    isOwner
      ? h(
          "button",
          {
            type: "button",
            "aria-controls": "run-config",
            onclick: async () => {
              try {
                const found = await context.api.get("/runs/{run_id}/config", { path: { run_id: run.run_id } });
                config.replaceChildren(h("h2", {}, "Run configuration"), h("pre", {}, JSON.stringify(found, null, 2)));
              } catch (error) {
                config.replaceChildren(errorBox(error));
              }
            },
          },
          "Run configuration",
        )
      : null,
    config,
  );
}
