import type { Schemas } from "../api/client";
import type { Context } from "../context";
import { errorBox, fill, formatTime, h, pageQuery, pageState, pager, statusBadge } from "../dom";
import { agreementFigures } from "../judge";

const POLL_MS = 1500;
const REGISTRATION_TIMEOUT_MS = 120_000;
type Environment = Schemas["EnvironmentView"];

interface PhaseView {
  index?: number;
  name?: string;
  tasks?: { index: number; name: string }[];
}

/** Environment versions, registered and rejected, a page at a time, and the form that publishes one. */
export async function environmentsPage(context: Context, main: HTMLElement): Promise<void> {
  const you = context.session.identity()?.sub;
  const query = new URLSearchParams(location.hash.split("?")[1] ?? "");
  const page = pageState(query);
  const found = await context.api.get("/environments", { query: { limit: page.size, next_token: page.token || null } });
  fill(
    main,
    h("h1", {}, "Environments"),
    publishForm(context),
    h("h2", {}, "Versions"),
    found.items.length ? h("div", { class: "environments" }, found.items.map((env) => environmentCard(env, you))) : page.token ? null : h("p", {}, "No environments yet."),
    pager("environment versions", found.items.length, page, found.next_token, (token, number) => {
      location.hash = `#/environments?${pageQuery(query, token, number)}`;
    }),
  );
}

/** A user id as the page names it: "you" for the signed-in user. */
function who(user: string | null | undefined, you: string | undefined): string {
  if (!user) return "—";
  return user === you ? `you (${user})` : user;
}

function environmentCard(env: Environment, you: string | undefined): HTMLElement {
  const field = (label: string, ...value: (Node | string)[]) => [h("dt", {}, label), h("dd", {}, ...value)];
  const phases = env.phases as PhaseView[];
  const columns = env.columns as { key?: string; title?: string }[];
  const rejected = env.status === "Rejected";
  return h(
    "article",
    { class: "panel environment", "aria-label": `${env.environment_id} ${env.version}`, "data-status": env.status },
    h("h3", {}, `${env.environment_id} ${env.version}`, " ", statusBadge(env.status), env.title ? h("span", { class: "muted" }, ` ${env.title}`) : null),
    rejected
      ? h(
          "div",
          { class: "headline", role: "note" },
          h("p", {}, "Rejected: the bundle was not registered. Fix these and publish a new version:"),
          h("ul", { class: "problems" }, (env.problems ?? []).map((problem) => h("li", {}, problem))),
        )
      : null,
    h(
      "dl",
      { class: "facts" },
      field("Owner", env.owner ? who(env.owner, you) : "none (published before environments had owners)"),
      field("Publisher group", env.publisher_group ?? "none: only its owner publishes"),
      field("Published by", who(env.published_by, you)),
      field("Created", formatTime(env.created_at)),
      ...(rejected
        ? []
        : [
            field("Template", env.template ?? "its own scoring program"),
            field("Runtime", env.runtime ?? "—"),
            field(
              "Phases",
              phases.length
                ? h(
                    "ul",
                    { class: "phases" },
                    phases.map((phase) =>
                      h(
                        "li",
                        {},
                        `${phase.index ?? 0}: ${phase.name ?? ""}`,
                        phase.tasks?.length ? ` (tasks ${phase.tasks.map((t) => (t.name ? `${t.index} ${t.name}` : String(t.index))).join(", ")})` : "",
                      ),
                    ),
                  )
                : "—",
            ),
            field("Criteria", env.criteria?.length ? env.criteria.join(", ") : "—"),
            field("Leaderboard columns", columns.length ? columns.map((c) => c.title ?? c.key ?? "").join(", ") : "—"),
            field("Fine-tune artifact", env.has_finetune ? "emitted by its scoring" : "none"),
          ]),
    ),
    env.warnings?.length ? h("ul", { class: "warnings", "aria-label": "Warnings" }, env.warnings.map((w) => h("li", {}, w))) : null,
    env.judge_calibration ? agreementFigures(env.judge_calibration, "Judge calibration") : null,
    rejected
      ? null
      : h(
          "p",
          {},
          h(
            "a",
            {
              class: "button",
              href: `#/environments/${encodeURIComponent(env.environment_id)}/${encodeURIComponent(env.version)}/run`,
              "aria-label": `Start a run of ${env.environment_id} ${env.version}`,
            },
            "Start a run",
          ),
        ),
  );
}

/** Ask the API for an upload URL, PUT the chosen bundle to it with the signed headers, and wait for its record. */
function publishForm({ api, session }: Context): HTMLElement {
  const environmentId = h("input", { id: "publish-environment", type: "text", autocomplete: "off", required: true, placeholder: "gsm8k" });
  const version = h("input", { id: "publish-version", type: "text", autocomplete: "off", required: true, placeholder: "1" });
  const group = h("input", { id: "publish-group", type: "text", autocomplete: "off", placeholder: "optional" });
  const bundle = h("input", { id: "publish-bundle", type: "file", accept: ".zip,application/zip", required: true });
  const publish = h("button", { type: "submit" }, "Publish version");
  const outcome = h("div", { "aria-live": "polite", id: "publish-outcome" });
  const say = (text: string) => outcome.replaceChildren(h("p", { role: "status" }, text));
  const submit = async () => {
    const file = bundle.files?.[0];
    if (!file) {
      outcome.replaceChildren(errorBox(new Error("choose the bundle's zip file to publish")));
      return;
    }
    publish.disabled = true;
    try {
      const upload = await api.post("/environments", {
        body: {
          environment_id: environmentId.value.trim(),
          version: version.value.trim(),
          publisher_group: group.value.trim() || null,
        },
      });
      say(`Uploading ${file.name} as ${upload.environment_id} ${upload.version} (owner ${upload.owner}${upload.publisher_group ? `, publisher group ${upload.publisher_group}` : ""})...`);
      const put = await fetch(upload.upload_url, { method: upload.upload_method ?? "PUT", headers: upload.upload_headers, body: file });
      if (!put.ok) throw new Error(`the bundle upload was refused (${put.status}): ask for a new upload URL and try again`);
      say("Uploaded: registration checks the bundle...");
      const record = await registered(api, upload.environment_id, upload.version);
      outcome.replaceChildren(
        h("p", { role: "status" }, `${record.environment_id} ${record.version} is ${record.status}.`),
        environmentCard(record, session.identity()?.sub),
      );
    } catch (error) {
      outcome.replaceChildren(errorBox(error));
    } finally {
      publish.disabled = false;
    }
  };
  return h(
    "form",
    {
      class: "panel",
      "aria-labelledby": "publish-title",
      onsubmit: (event: Event) => {
        event.preventDefault();
        void submit();
      },
    },
    h("h2", { id: "publish-title" }, "Publish a version"),
    h("p", { class: "muted" }, "The first publisher of an environment owns it; a publisher group lets its members publish versions too."),
    h(
      "div",
      { class: "step" },
      h("label", { for: "publish-environment" }, "Environment id"),
      environmentId,
      h("label", { for: "publish-version" }, "Version"),
      version,
      h("label", { for: "publish-group" }, "Publisher group"),
      group,
      h("label", { for: "publish-bundle" }, "Bundle (zip)"),
      bundle,
    ),
    h("p", {}, publish),
    outcome,
  );
}

/** One version as the list holds it (the API has no route for one version), or none when it is not listed. */
export async function findVersion(api: Context["api"], environmentId: string, version: string): Promise<Environment | undefined> {
  let token: string | null | undefined = null;
  do {
    const page: Schemas["EnvironmentList"] = await api.get("/environments", { query: { limit: 100, next_token: token } });
    const found = page.items.find((e: Environment) => e.environment_id === environmentId && e.version === version);
    if (found) return found;
    token = page.next_token;
  } while (token);
  return undefined;
}

async function registered(api: Context["api"], environmentId: string, version: string): Promise<Environment> {
  const deadline = Date.now() + REGISTRATION_TIMEOUT_MS;
  while (Date.now() < deadline) {
    const found = await findVersion(api, environmentId, version);
    if (found) return found;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
  throw new Error(`${environmentId} ${version} was uploaded but not registered within two minutes: reload the page later`);
}
