import type { Schemas } from "../api/client";
import type { Context } from "../context";
import { errorBox, fill, formatBytes, formatNumber, formatTime, h, pageQuery, pageState, pager, statusBadge } from "../dom";
import { pairwisePanel } from "../judge";
import { baseModelField, connectionChoices, hyperparameterEditor, launchControl } from "./launch";
import { trainingRunTitle } from "./training";

const TABS = [
  ["overview", "Overview"],
  ["dataset", "Dataset"],
  ["coverage", "Coverage"],
  ["results", "Results"],
] as const;
type Tab = (typeof TABS)[number][0];
const SPLITS = ["train", "validation", "test"];
const EVALUATORS_GROUP = "evaluators";
const POLL_MS = 1500;

/** A preparation by what people know it as: the environment version, the base model and the method. */
function preparationTitle(p: Schemas["PreparationSummary"]): string {
  return `${p.environment_id} ${p.environment_version}: ${p.base_model}, ${p.method}`;
}

/** The preparations a trainer can open as a workspace, newest first. */
export async function workspacesPage({ api }: Context, main: HTMLElement): Promise<void> {
  const query = new URLSearchParams(location.hash.split("?")[1] ?? "");
  const page = pageState(query);
  const preparations = await api.get("/preparations", { query: { limit: page.size, next_token: page.token || null } });
  fill(main, 
    h("h1", {}, "Weights training workspaces"),
    preparations.items.length
      ? h(
          "table",
          { class: "list", "aria-label": "Preparations" },
          h("thead", {}, h("tr", {}, ["Preparation", "Status", "Benchmark", "Method", "Examples", "Created"].map((t) => h("th", { scope: "col" }, t)))),
          h(
            "tbody",
            {},
            preparations.items.map((p) =>
              h(
                "tr",
                {},
                h(
                  "td",
                  {},
                  h("a", { href: `#/workspace/${encodeURIComponent(p.preparation_id)}` }, preparationTitle(p)),
                  h("div", { class: "muted wrap" }, p.preparation_id),
                ),
                h("td", {}, statusBadge(p.status)),
                h("td", {}, p.benchmark),
                h("td", {}, p.method),
                h("td", { class: "number" }, formatNumber(p.example_count)),
                h("td", {}, formatTime(p.created_at)),
              ),
            ),
          ),
        )
      : page.token
        ? null
        : h("p", {}, "No preparations yet: Train prepares training material from a dataset's run."),
    pager("preparations", preparations.items.length, page, preparations.next_token, (token, number) => {
      location.hash = `#/workspace?${pageQuery(query, token, number)}`;
    }),
  );
}

/** One preparation as a workspace: Overview, Dataset, Coverage and Results tabs. */
export async function workspacePage(context: Context, main: HTMLElement, [preparationId, tabName]: string[]): Promise<void> {
  const tab: Tab = TABS.some(([id]) => id === tabName) ? (tabName as Tab) : "overview";
  const preparation = await context.api.get("/preparations/{preparation_id}", { path: { preparation_id: preparationId } });
  const base = `#/workspace/${encodeURIComponent(preparationId)}`;
  const panel = h("div", { role: "tabpanel", id: "workspace-panel", "aria-labelledby": `tab-${tab}`, tabindex: "0" });
  fill(main, 
    h("h1", {}, preparationTitle(preparation)),
    h("p", { class: "muted subtitle" }, `Workspace of preparation ${preparation.preparation_id} · created ${formatTime(preparation.created_at)}`),
    h(
      "nav",
      { class: "tabs", "aria-label": "Workspace sections" },
      TABS.map(([id, label]) =>
        h("a", { id: `tab-${id}`, href: `${base}/${id}`, "aria-current": id === tab ? "page" : undefined }, label),
      ),
    ),
    panel,
  );
  const render = { overview, dataset, coverage, results }[tab];
  await render(context, panel, preparation);
}

async function overview(context: Context, panel: HTMLElement, p: Schemas["PreparationDetail"]): Promise<void> {
  const field = (label: string, value: Node | string) => [h("dt", {}, label), h("dd", {}, value)];
  const query = new URLSearchParams(location.hash.split("?")[1] ?? "");
  const page = pageState(query);
  const [packages, profiles] = await Promise.all([
    context.api.get("/preparations/{preparation_id}/packages", {
      path: { preparation_id: p.preparation_id },
      query: { limit: page.size, next_token: page.token || null },
    }),
    context.api.get("/export-profiles"),
  ]);
  // The list holds records; a Ready package's view carries its (short-lived) download URL.
  const views = await Promise.all(
    packages.items.map((item) =>
      item.status === "Ready" ? context.api.get("/packages/{package_id}", { path: { package_id: item.package_id } }) : item,
    ),
  );
  // Only the profiles that take the preparation's method: the API refuses the others.
  const profile = h(
    "select",
    { id: "package-profile" },
    profiles.items
      .filter((item) => item.methods.includes(p.method))
      .map((item) => h("option", { value: item.profile_id, title: item.row_shape }, item.title)),
  );
  const outcome = h("div", { "aria-live": "polite" });
  const prepare = h("button", { type: "button" }, "Prepare download");
  prepare.addEventListener("click", async () => {
    prepare.disabled = true;
    try {
      let found = await context.api.post("/preparations/{preparation_id}/packages", {
        path: { preparation_id: p.preparation_id },
        body: { profile: profile.value },
      });
      while (found.status === "Building") {
        outcome.replaceChildren(h("p", {}, "Building the package..."));
        await new Promise((resolve) => setTimeout(resolve, POLL_MS));
        found = await context.api.get("/packages/{package_id}", { path: { package_id: found.package_id } });
      }
      outcome.replaceChildren(packageLine(found));
    } catch (error) {
      outcome.replaceChildren(errorBox(error));
    } finally {
      prepare.disabled = false;
    }
  });
  fill(panel, 
    h("h2", {}, "Summary"),
    h(
      "dl",
      { class: "facts" },
      field("Status", statusBadge(p.status)),
      field("Benchmark", `${p.benchmark} (${p.environment_id} ${p.environment_version})`),
      field("Base model", p.base_model),
      field("Method", p.method),
      field("Selection", p.selection),
      field("Examples", formatNumber(p.example_count)),
      field("Splits", Object.entries(p.splits).map(([s, n]) => `${s} ${n}`).join(", ") || "—"),
      field("Kinds", Object.entries(p.kinds).map(([k, n]) => `${k} ${n}`).join(", ") || "—"),
      field("Runs", p.run_ids.join(", ")),
      field("State", h("code", {}, p.state_hash ?? "—")),
    ),
    h("h2", {}, "Generation checks"),
    h(
      "ul",
      { class: "checks" },
      h("li", {}, `Held-out cases kept out of training: ${formatNumber(p.held_out_count)}`),
      h("li", {}, `Source cases used: ${formatNumber(p.source_cases)}`),
      h("li", {}, `Coverage gaps: ${formatNumber(p.gap_count)}`),
      Object.entries(p.dropped).map(([reason, count]) => h("li", {}, `Dropped (${reason}): ${count}`)),
      p.failure_reason ? h("li", { class: "error" }, p.failure_reason) : null,
    ),
    h("h2", {}, "Prepare download"),
    h("p", {}, "An exact package of this state, in one export profile: the same state gives the same bytes."),
    h("div", { class: "filters" }, h("label", { for: "package-profile" }, "Package profile"), profile, prepare),
    outcome,
    views.length ? h("ul", { class: "packages", "aria-label": "Packages" }, views.map((item) => h("li", {}, packageLine(item)))) : null,
    pager("packages", views.length, page, packages.next_token, (token, number) => {
      location.hash = `#/workspace/${encodeURIComponent(p.preparation_id)}/overview?${pageQuery(query, token, number)}`;
    }),
  );
}

function packageLine(item: Schemas["PackageView"] | Schemas["PackageRecord"]): HTMLElement {
  const url = "download_url" in item ? item.download_url : null;
  return h(
    "span",
    {},
    `${item.profile}: `,
    statusBadge(item.status ?? "Building"),
    item.size ? ` ${formatBytes(item.size)}, sha256 ` : "",
    item.size ? h("code", {}, item.sha256 ?? "") : null,
    item.reason ? ` ${item.reason}` : "",
    url ? [" ", h("a", { href: url, class: "button" }, "Download package")] : null,
    item.status === "Ready"
      ? [
          " ",
          h(
            "a",
            { href: `#/workspace/${encodeURIComponent(item.preparation_id)}/results?package=${encodeURIComponent(item.package_id)}` },
            "Launch training",
          ),
        ]
      : null,
  );
}

async function dataset(context: Context, panel: HTMLElement, p: Schemas["PreparationDetail"]): Promise<void> {
  const query = new URLSearchParams(location.hash.split("?")[1] ?? "");
  const split = (query.get("split") ?? "train") as Schemas["Split"];
  const position = pageState(query, 25);
  const page = await context.api.get("/preparations/{preparation_id}/examples", {
    path: { preparation_id: p.preparation_id },
    query: { split, limit: position.size, next_token: position.token || null },
  });
  const base = `#/workspace/${encodeURIComponent(p.preparation_id)}/dataset`;
  fill(panel, 
    h(
      "nav",
      { class: "filters", "aria-label": "Splits" },
      SPLITS.map((s) => h("a", { href: `${base}?split=${s}`, "aria-current": s === split ? "page" : undefined }, `${s} (${p.splits[s] ?? 0})`)),
    ),
    page.items.length
      ? page.items.map((example) =>
          h(
            "article",
            { class: "example", "aria-label": `Example ${example.example_id}` },
            h("h3", {}, example.example_id, " ", h("span", { class: "tag" }, example.kind)),
            h("p", {}, h("strong", {}, "Criteria: "), example.criteria?.join(", ") || "—"),
            h(
              "p",
              {},
              h("strong", {}, "Source: "),
              `case ${example.source.case_id}, run ${example.source.run_id ?? "—"}, layer ${example.source.layer}`,
              example.source.verdict ? `, verdict ${JSON.stringify(example.source.verdict)}` : "",
            ),
            h("pre", { class: "prompt" }, example.prompt),
            h("pre", { class: "chosen" }, example.chosen),
          ),
        )
      : position.token
        ? null
        : h("p", {}, `No ${split} examples.`),
    pager(`${split} examples`, page.items.length, position, page.next_token, (token, number) => {
      location.hash = `${base}?${pageQuery(query, token, number)}`;
    }),
  );
}

async function coverage(context: Context, panel: HTMLElement, p: Schemas["PreparationDetail"]): Promise<void> {
  const found = await context.api.get("/preparations/{preparation_id}/coverage", { path: { preparation_id: p.preparation_id } });
  const gapsBySubject = new Set(found.gaps.map((gap) => gap.subject));
  const criteria = found.criteria as Record<string, Record<string, number>>;
  fill(panel, 
    h("h2", { id: "coverage-title" }, "Coverage per criterion and split"),
    h(
      "table",
      { class: "list coverage", "aria-labelledby": "coverage-title" },
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Criterion"), SPLITS.map((s) => h("th", { scope: "col" }, s)))),
      h(
        "tbody",
        {},
        Object.entries(criteria).map(([criterion, splits]) =>
          h(
            "tr",
            { class: gapsBySubject.has(criterion) ? "gap" : undefined },
            h("th", { scope: "row" }, criterion, gapsBySubject.has(criterion) ? h("span", { class: "tag tag-gap" }, "gap") : null),
            SPLITS.map((s) => h("td", { class: (splits[s] ?? 0) === 0 ? "number empty" : "number" }, String(splits[s] ?? 0))),
          ),
        ),
      ),
    ),
    h("h2", {}, `Gaps (${found.gaps.length})`),
    found.gaps.length
      ? h("ul", { class: "gaps" }, found.gaps.map((gap) => h("li", { "data-kind": gap.kind }, h("strong", {}, gap.subject), `: ${gap.message}`)))
      : h("p", {}, "No gaps: every criterion has rows in every split."),
  );
}

const TRAINING_RUNS_PAGE = 10;
const EVALUATIONS_PAGE = 5;

async function results(context: Context, panel: HTMLElement, p: Schemas["PreparationDetail"]): Promise<void> {
  const query = new URLSearchParams(location.hash.split("?")[1] ?? "");
  const page = pageState(query, TRAINING_RUNS_PAGE);
  const evaluationsPage = pageState(new URLSearchParams({ limit: query.get("evaluations") ?? "" }), EVALUATIONS_PAGE).size;
  const [found, launch] = await Promise.all([
    context.api.get("/training-runs", {
      query: { preparation_id: p.preparation_id, limit: page.size, next_token: page.token || null },
    }),
    launchFromPackage(context, p, query.get("package")),
  ]);
  const identity = context.session.identity();
  const connections = found.items.length ? (await context.api.get("/connections", { query: { limit: 100 } })).items : [];
  const items = await Promise.all(
    found.items.map(async (run) => trainingRun(context, run, identity, connections, await evaluationsOf(context, run, evaluationsPage))),
  );
  fill(
    panel,
    launch,
    h("h2", {}, "Training runs"),
    items.length
      ? h("ul", { class: "training-runs" }, items)
      : page.token
        ? null
        : h("p", {}, "No training runs of this preparation yet: launch one above, or from ", h("a", { href: "#/train" }, "Train"), "."),
    items.length || page.token
      ? pager("training runs", items.length, page, found.next_token, (token, number) => {
          location.hash = `#/workspace/${encodeURIComponent(p.preparation_id)}/results?${pageQuery(query, token, number)}`;
        })
      : null,
  );
}

/**
 * Send one of the preparation's Ready packages to training: the same parts as Train (a connection whose
 * profile takes the preparation's method, the base model's family and the package's files; the base model
 * with its override note; hyperparameters beside the suggestions) and a deliberate Launch.
 */
async function launchFromPackage(context: Context, p: Schemas["PreparationDetail"], wanted: string | null): Promise<HTMLElement> {
  const listed = await context.api.get("/preparations/{preparation_id}/packages", {
    path: { preparation_id: p.preparation_id },
    query: { limit: 100 },
  });
  const ready = listed.items.filter((item) => item.status === "Ready");
  const title = h("h2", { id: "results-launch-title" }, "Launch training from a package");
  if (!ready.length) {
    return h(
      "section",
      { "aria-labelledby": "results-launch-title" },
      title,
      h(
        "p",
        {},
        "No Ready package of this preparation yet: ",
        h("a", { href: `#/workspace/${encodeURIComponent(p.preparation_id)}/overview` }, "Prepare download"),
        " builds one in an export profile.",
      ),
    );
  }
  const packageSelect = h(
    "select",
    { id: "results-package" },
    ready.map((item) =>
      h(
        "option",
        { value: item.package_id, selected: item.package_id === wanted },
        `${item.profile} · ${formatBytes(item.size)} · ${formatTime(item.created_at)}`,
      ),
    ),
  );
  const baseModel = baseModelField("results");
  baseModel.input.value = p.base_model;
  const connectionStep = h("fieldset", { id: "results-connections", class: "step-part" }, h("legend", {}, "Connection"));
  const control = launchControl(context, "results");
  const hyper = hyperparameterEditor("results", "Hyperparameters", () => control.changed());
  hyper.suggest(p.suggested_hyperparams);
  let connection: Schemas["ConnectionRecord"] | undefined;
  let generation = 0;
  const chosen = () => ready.find((item) => item.package_id === packageSelect.value);
  const refresh = () => {
    control.button.disabled = !(connection && chosen() && baseModel.value());
    control.changed();
  };
  const chooseConnection = async () => {
    generation += 1;
    const mine = generation;
    connection = undefined;
    refresh();
    const item = chosen();
    if (!item || !baseModel.value()) {
      connectionStep.replaceChildren(h("legend", {}, "Connection"), h("p", { class: "muted" }, "Name a base model first."));
      return;
    }
    connectionStep.replaceChildren(h("legend", {}, "Connection"));
    const offered = h("fieldset", {});
    const first = await connectionChoices(
      context,
      offered,
      "results",
      "Connection",
      { method: p.method, baseModel: baseModel.value(), exportProfile: item.profile },
      (picked) => {
        connection = picked;
        refresh();
      },
    );
    if (mine !== generation) return;
    connectionStep.replaceChildren(...offered.childNodes);
    connection = first;
    refresh();
  };
  const showError = (error: unknown) => control.outcome.replaceChildren(errorBox(error));
  packageSelect.addEventListener("change", () => void chooseConnection().catch(showError));
  baseModel.input.addEventListener("input", () => baseModel.describe(p.base_model, "the preparation's"));
  baseModel.input.addEventListener("change", () => void chooseConnection().catch(showError));
  baseModel.describe(p.base_model, "the preparation's");
  await chooseConnection();
  const submit = async () => {
    const item = chosen();
    if (!item || !connection) return;
    await control.launch({
      package: item,
      recorded: p.base_model,
      connection,
      baseModel: baseModel.value(),
      hyperparameters: hyper.values(),
    });
  };
  return h(
    "section",
    { "aria-labelledby": "results-launch-title" },
    title,
    h(
      "form",
      {
        class: "wizard",
        "aria-label": "Launch a training run from a package",
        onsubmit: (event: Event) => {
          event.preventDefault();
          void submit();
        },
      },
      h(
        "fieldset",
        { class: "step-part" },
        h("legend", {}, "Package and base model"),
        h(
          "div",
          { class: "step" },
          h("label", { for: "results-package" }, "Ready package"),
          packageSelect,
          h("label", { for: "results-base-model" }, "Base model"),
          baseModel.input,
          baseModel.note,
        ),
      ),
      connectionStep,
      hyper.element,
      control.element,
      control.outcome,
    ),
  );
}

interface Evaluations {
  /** The list, empty while the training run has no evaluation. */
  element: HTMLElement;
  /** Show the first page again, as it is now: an evaluation just authorized is on it. */
  reload(): Promise<void>;
}

/** A training run's evaluations, a page at a time, paged in place. */
async function evaluationsOf(context: Context, run: Schemas["TrainingRunRecord"], size: number): Promise<Evaluations> {
  const box = h("div", { class: "evaluations" });
  const show = async (token: string, number: number): Promise<void> => {
    const found = await context.api.get("/training-runs/{training_run_id}/evaluations", {
      path: { training_run_id: run.training_run_id },
      query: { limit: size, next_token: token || null },
    });
    if (!found.items.length && number === 1) return;
    const views = await Promise.all(found.items.map((item) => evaluationView(context, item)));
    box.replaceChildren(
      h("h3", {}, "Evaluations"),
      ...views,
      pager("evaluations", found.items.length, { token, number, size }, found.next_token, (next, to) => {
        void show(next, to).catch((error) => box.append(errorBox(error)));
      }),
    );
  };
  await show("", 1);
  return { element: box, reload: () => show("", 1) };
}

function trainingRun(
  context: Context,
  run: Schemas["TrainingRunRecord"],
  identity: ReturnType<Context["session"]["identity"]>,
  connections: Schemas["ConnectionRecord"][],
  evaluations: Evaluations,
): HTMLElement {
  const evaluation = h("div", { "aria-live": "polite" });
  const allowed = identity !== null && identity.sub === run.owner && identity.groups.includes(EVALUATORS_GROUP);
  return h(
    "li",
    { class: "training-run", "aria-label": `Training run ${run.training_run_id}` },
    h("a", { href: `#/training-runs/${encodeURIComponent(run.training_run_id)}` }, h("strong", {}, trainingRunTitle(run))),
    " ",
    statusBadge(run.status ?? "Pending"),
    ` ${run.provider}, ${formatTime(run.created_at)}, job ${run.job_id ?? "not started"}, `,
    h("code", { class: "muted" }, run.training_run_id),
    run.result_model ? `, trained model ${run.result_model}` : "",
    run.failure_reason ? h("p", { class: "error" }, run.failure_reason) : null,
    allowed && run.status === "Succeeded" ? authorizeForm(context, run, connections, evaluation, evaluations) : null,
    evaluation,
    evaluations.element,
  );
}

/** The deliberate step: which model answers as the trained one, and which base run to reuse, then Authorize. */
function authorizeForm(
  context: Context,
  run: Schemas["TrainingRunRecord"],
  connections: Schemas["ConnectionRecord"][],
  evaluation: HTMLElement,
  evaluations: Evaluations,
): HTMLElement {
  const id = (name: string) => `${name}-${run.training_run_id}`;
  const connection = h(
    "select",
    { id: id("tuned-connection") },
    h("option", { value: "" }, "the training connection"),
    connections.map((c) => h("option", { value: c.connection_id }, `${c.name} (${c.provider})`)),
  );
  const model = h("input", { id: id("tuned-model"), type: "text", autocomplete: "off", value: run.result_model ?? "" });
  const baseRun = h("input", { id: id("base-run"), type: "text", autocomplete: "off", placeholder: "newest reusable run" });
  const authorize = h("button", { type: "submit" }, "Authorize evaluation");
  const submit = async () => {
    authorize.disabled = true;
    try {
      let found = await context.api.post("/training-runs/{training_run_id}/evaluations", {
        path: { training_run_id: run.training_run_id },
        body: {
          tuned: connection.value ? { connection_id: connection.value, model_id: model.value } : null,
          base_run_id: baseRun.value || null,
        },
      });
      // The training run's list holds the evaluation from now on, first Running, then as it ended.
      await evaluations.reload();
      while (found.status === "Running") {
        evaluation.replaceChildren(h("p", {}, `Evaluation ${found.evaluation_id} running...`));
        await new Promise((resolve) => setTimeout(resolve, POLL_MS));
        found = await context.api.get("/evaluations/{evaluation_id}", { path: { evaluation_id: found.evaluation_id } });
      }
      evaluation.replaceChildren();
      await evaluations.reload();
    } catch (error) {
      authorize.disabled = false;
      evaluation.replaceChildren(errorBox(error));
    }
  };
  return h(
    "form",
    {
      class: "evaluate-form",
      "aria-label": `Evaluate ${run.training_run_id}`,
      onsubmit: (event: Event) => {
        event.preventDefault();
        void submit();
      },
    },
    h("label", { for: id("tuned-connection") }, "Trained model's connection"),
    connection,
    h("label", { for: id("tuned-model") }, "Trained model id"),
    model,
    h("label", { for: id("base-run") }, "Base run to reuse"),
    baseRun,
    authorize,
  );
}

type Answering = Schemas["Answering"];

// A rate of the answers the grader read; "not known" when the run's scoring did not record which it could read.
function answered(side: Answering, rate: "answer_rate" | "accuracy_among_answered"): string {
  if (side.answered === null || side.answered === undefined) return "not known";
  return formatNumber(side[rate]);
}

async function evaluationView(context: Context, found: Schemas["EvaluationView"]): Promise<HTMLElement> {
  const summary = h(
    "p",
    {},
    `Evaluation ${found.evaluation_id}: `,
    statusBadge(found.status),
    ` accuracy before ${formatNumber(found.accuracy_before)}, after ${formatNumber(found.accuracy_after)} on ${formatNumber(found.paired_cases)} paired cases`,
    found.verdict ? `; verdict ${found.verdict}: ${found.verdict_reason}` : "",
  );
  if (found.status !== "Completed") return h("div", {}, summary, found.failure_reason ? h("p", { class: "error" }, found.failure_reason) : null);
  const report = await context.api.get("/evaluations/{evaluation_id}/report", { path: { evaluation_id: found.evaluation_id } });
  const c = report.report.comparison;
  return h(
    "div",
    { class: "comparison" },
    summary,
    h("p", {}, `Fixed ${c.fixed_count}, broken ${c.broken_count}, McNemar p ${formatNumber(c.mcnemar_p)}`),
    h("p", { class: "method" }, `Method: ${c.verdict_rule}`),
    h(
      "p",
      {},
      `Answer rate ${answered(c.answering_before, "answer_rate")} → ${answered(c.answering_after, "answer_rate")}; ` +
        `accuracy among answered ${answered(c.answering_before, "accuracy_among_answered")} → ` +
        `${answered(c.answering_after, "accuracy_among_answered")}`,
    ),
    c.pairwise ? pairwisePanel(c.pairwise) : null,
    h(
      "div",
      { class: "section-head" },
      h("h4", {}, "Paired comparison report"),
      h("a", { class: "button", href: report.html_url, "aria-label": `Download the report of ${found.evaluation_id}` }, "Download"),
    ),
    // No allow-same-origin: the report runs as an opaque origin, like Detailed Results.
    h("iframe", { src: report.view_url, sandbox: "", title: `Paired comparison report of ${found.evaluation_id}`, class: "report" }),
  );
}
