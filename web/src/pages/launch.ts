// The parts of a training launch that Train and a workspace's Results share: the base model with its
// override note, the connections whose profile takes the material, hyperparameters beside the benchmark
// author's suggestions, and the deliberate Launch that leads to the training run's page.
import type { Schemas } from "../api/client";
import type { Context } from "../context";
import { errorBox, fill, h } from "../dom";
import { LAUNCH_MESSAGES_KEY, type LaunchMessages } from "./training";

const NUMBER = /^-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?$/;

type Connection = Schemas["ConnectionRecord"];

export interface BaseModelField {
  input: HTMLInputElement;
  note: HTMLElement;
  /** The typed base model, trimmed. */
  value(): string;
  /** Say whether the typed model is the recorded one (`whose`: "the dataset's") or overrides it. */
  describe(recorded: string | undefined, whose: string): void;
}

export function baseModelField(prefix: string): BaseModelField {
  const noteId = `${prefix}-base-model-note`;
  const input = h("input", { id: `${prefix}-base-model`, type: "text", autocomplete: "off", "aria-describedby": noteId });
  const note = h("p", { id: noteId, class: "muted base-model-note" });
  const value = () => input.value.trim();
  return {
    input,
    note,
    value,
    describe(recorded, whose) {
      const typed = value();
      note.textContent =
        recorded && typed && typed !== recorded
          ? `Overrides ${whose} base model ${recorded}: the API trains ${typed} and warns at launch.`
          : recorded
            ? `${whose[0].toUpperCase()}${whose.slice(1)} recorded base model. Type another to override it.`
            : "";
    },
  };
}

export interface ConnectionFilter {
  method: Schemas["Method"];
  baseModel: string;
  /** Only connections that read this export profile (a chosen package's). */
  exportProfile?: string;
}

/**
 * Your connections whose profile accepts the filter, as radios in `step` after its legend; the first is
 * chosen. `picked` hears a change of choice. Answers the chosen one (none when none accepts it).
 */
export async function connectionChoices(
  { api }: Context,
  step: HTMLElement,
  prefix: string,
  legend: string,
  filter: ConnectionFilter,
  picked: (connection: Connection) => void,
): Promise<Connection | undefined> {
  const found = await api.get("/connections", {
    query: { method: filter.method, base_model: filter.baseModel, export_profile: filter.exportProfile, limit: 100 },
  });
  step.replaceChildren(h("legend", {}, legend));
  if (!found.items.length) {
    step.append(
      h(
        "p",
        {},
        `None of your connections trains ${filter.method} on ${filter.baseModel}${filter.exportProfile ? ` from ${filter.exportProfile} files` : ""}. `,
        h("a", { href: "#/connections" }, "Connect a provider"),
        " whose profile does, or name another base model.",
      ),
    );
  }
  step.append(
    ...found.items.map((item, index) => {
      const id = `${prefix}-connection-${index}`;
      const radio = h("input", { type: "radio", name: `${prefix}-connection`, id, value: item.connection_id, checked: index === 0 });
      radio.addEventListener("change", () => picked(item));
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
  return found.items[0];
}

export interface HyperparameterEditor {
  /** The fieldset: name and value rows beside the suggestions. */
  element: HTMLElement;
  /** The rows as the API takes them: named rows only, numbers as numbers. */
  values(): Record<string, string | number>;
  /** Show the benchmark author's suggestions (none chosen yet when `undefined`); they are never applied. */
  suggest(suggested: Record<string, unknown> | undefined): void;
}

export function hyperparameterEditor(prefix: string, legend: string, edited: () => void): HyperparameterEditor {
  const rows = h("div", { class: "hyper-rows" });
  const suggestions = h("div", { class: "suggestions" });
  const titleId = `${prefix}-suggested-title`;
  const addRow = () => {
    const index = rows.children.length;
    const nameId = `${prefix}-hyper-name-${index}`;
    const valueId = `${prefix}-hyper-value-${index}`;
    const nameInput = h("input", { type: "text", id: nameId, autocomplete: "off", class: "hyper-name" });
    const valueInput = h("input", { type: "text", id: valueId, autocomplete: "off", class: "hyper-value" });
    const row = h("div", { class: "hyper-row" }, h("label", { for: nameId }, "Name"), nameInput, h("label", { for: valueId }, "Value"), valueInput);
    row.append(
      h(
        "button",
        {
          type: "button",
          "aria-label": `Remove hyperparameter ${index + 1}`,
          onclick: () => {
            row.remove();
            edited();
          },
        },
        "Remove",
      ),
    );
    for (const input of [nameInput, valueInput]) input.addEventListener("input", edited);
    rows.append(row);
    nameInput.focus();
  };
  const element = h("fieldset", { id: `${prefix}-hyperparameters`, class: "step-part" });
  fill(
    element,
    h("legend", {}, legend),
    h("p", { class: "muted" }, "In the provider's own names (Bedrock's epochCount, for one); none leaves the provider's defaults."),
    h("div", { class: "hyper-layout" }, h("div", {}, rows, h("button", { type: "button", onclick: addRow }, "Add hyperparameter")), suggestions),
  );
  const suggest = (suggested: Record<string, unknown> | undefined) => {
    const entries = Object.entries(suggested ?? {});
    suggestions.replaceChildren(
      h("h3", { id: titleId }, "The benchmark author's suggestions"),
      entries.length
        ? h("dl", { class: "facts", "aria-labelledby": titleId }, entries.flatMap(([name, value]) => [h("dt", {}, name), h("dd", {}, String(value))]))
        : h("p", {}, suggested ? "The benchmark suggests none." : "Choose a package to see them."),
      h("p", { class: "muted" }, "Shown for reference: nothing is sent that you did not enter, in the provider's own names."),
    );
  };
  suggest(undefined);
  return {
    element,
    suggest,
    values() {
      const found: Record<string, string | number> = {};
      for (const row of rows.querySelectorAll(".hyper-row")) {
        const name = (row.querySelector(".hyper-name") as HTMLInputElement).value.trim();
        const value = (row.querySelector(".hyper-value") as HTMLInputElement).value.trim();
        if (name) found[name] = NUMBER.test(value) ? Number(value) : value;
      }
      return found;
    },
  };
}

export interface LaunchRequest {
  package: Schemas["PackageRecord"];
  /** The base model the package's preparation recorded: sent as none, so the API's notice says it was reused. */
  recorded: string;
  connection: Connection;
  baseModel: string;
  hyperparameters: Record<string, string | number>;
}

export interface LaunchControl {
  /** The Launch button and the cost note. */
  element: HTMLElement;
  button: HTMLButtonElement;
  /** Where a refusal is shown, in the API's words. */
  outcome: HTMLElement;
  /** Anything changed: the next Launch is a new launch, not a retry of the last one. */
  changed(): void;
  /** POST /training-runs (a retried click keeps its Idempotency-Key), then open the training run's page. */
  launch(request: LaunchRequest): Promise<void>;
}

export function launchControl({ api }: Context, prefix: string): LaunchControl {
  const button = h("button", { type: "submit", id: `${prefix}-launch`, disabled: true }, "Launch training run");
  const outcome = h("div", { "aria-live": "polite", id: `${prefix}-outcome` });
  let key: string | null = null;
  return {
    element: h("p", {}, button, h("span", { class: "muted" }, "Launching starts a provider job that may cost money.")),
    button,
    outcome,
    changed() {
      key = null;
    },
    async launch(request) {
      key ??= crypto.randomUUID();
      button.disabled = true;
      outcome.replaceChildren(h("p", { role: "status" }, "Launching..."));
      try {
        const launched = await api.post("/training-runs", {
          body: {
            package_id: request.package.package_id,
            connection_id: request.connection.connection_id,
            base_model: request.baseModel === request.recorded ? null : request.baseModel,
            hyperparameters: request.hyperparameters,
          },
          headers: { "Idempotency-Key": key },
        });
        const messages: LaunchMessages = {
          training_run_id: launched.training_run.training_run_id,
          notices: launched.notices ?? [],
          warnings: launched.warnings ?? [],
        };
        sessionStorage.setItem(LAUNCH_MESSAGES_KEY, JSON.stringify(messages));
        location.hash = `#/training-runs/${encodeURIComponent(launched.training_run.training_run_id)}`;
      } catch (error) {
        button.disabled = false;
        outcome.replaceChildren(errorBox(error));
      }
    },
  };
}
