import type { Schemas } from "../api/client";
import type { Context } from "../context";
import { errorBox, fill, formatTime, h, pageQuery, pageState, pager } from "../dom";

type Provider = Schemas["ProviderKind"];
type Connection = Schemas["ConnectionRecord"];

/** The fields each provider kind takes; a key is never one of them (a Secrets Manager ARN names it). */
const FIELDS: Record<Provider, (keyof Schemas["CreateConnectionRequest"])[]> = {
  bedrock: ["region", "role_arn"],
  sagemaker: ["region", "role_arn", "endpoint_name"],
  "openai-compatible": ["base_url", "secret_arn"],
};
const LABELS: Record<string, [string, string]> = {
  region: ["Region", "us-east-1"],
  role_arn: ["Role ARN (the provider assumes it to train)", "arn:aws:iam::123456789012:role/benchgen-training"],
  endpoint_name: ["Endpoint name (live runs call it)", "my-endpoint"],
  base_url: ["Base URL (https)", "https://api.together.xyz/v1"],
  secret_arn: ["Secrets Manager secret ARN holding the key (never the key)", "arn:aws:secretsmanager:us-east-1:123456789012:secret:together-key"],
};
/** What each field's value looks like, said when the API finds it in another form. */
const FORMATS: Record<string, string> = {
  region: `this is not an AWS region, such as ${LABELS.region[1]}`,
  role_arn: `this is not an IAM role's ARN, such as ${LABELS.role_arn[1]}`,
  endpoint_name: "this is not a SageMaker endpoint's name: letters, digits and hyphens",
  secret_arn:
    `this is not a Secrets Manager secret's ARN, such as ${LABELS.secret_arn[1]}. ` +
    "Put the key itself in Secrets Manager and give the secret's ARN here",
};

/** Your provider connections, a page at a time, and the form that connects a new one. */
export async function connectionsPage(context: Context, main: HTMLElement): Promise<void> {
  const query = new URLSearchParams(location.hash.split("?")[1] ?? "");
  const page = pageState(query);
  const found = await context.api.get("/connections", { query: { limit: page.size, next_token: page.token || null } });
  fill(
    main,
    h("h1", {}, "Connections"),
    h("p", {}, "A connection is how BenchGen reaches a training and inference provider. Its key stays in Secrets Manager: you give the secret's ARN."),
    found.items.length
      ? h(
          "div",
          { class: "table-scroll" },
          h(
            "table",
            { class: "list", "aria-label": "Connections" },
            h("thead", {}, h("tr", {}, ["Connection", "Provider", "Methods", "Model families", "Export profiles", "Created"].map((t) => h("th", { scope: "col" }, t)))),
            h(
              "tbody",
              {},
              found.items.map((c) =>
                h(
                  "tr",
                  {},
                  h("td", {}, h("a", { href: `#/connections/${encodeURIComponent(c.connection_id)}` }, c.name)),
                  h("td", {}, c.provider),
                  h("td", {}, c.profile.methods.join(", ")),
                  h("td", { class: "wrap" }, c.profile.model_families.join(", ")),
                  h("td", { class: "wrap" }, c.profile.export_profiles.join(", ")),
                  h("td", {}, formatTime(c.created_at)),
                ),
              ),
            ),
          ),
        )
      : page.token
        ? null
        : h("p", {}, "No connections yet."),
    pager("connections", found.items.length, page, found.next_token, (token, number) => {
      location.hash = `#/connections?${pageQuery(query, token, number)}`;
    }),
    createForm(context),
  );
}

function createForm({ api }: Context): HTMLElement {
  const name = h("input", { id: "connection-name", type: "text", autocomplete: "off", required: true });
  const provider = h(
    "select",
    { id: "connection-provider" },
    (Object.keys(FIELDS) as Provider[]).map((kind) => h("option", { value: kind }, kind)),
  );
  const inputs = new Map(
    Object.entries(LABELS).map(([field, [, example]]) => [
      field,
      h("input", { id: `connection-${field}`, type: "text", autocomplete: "off", placeholder: example, spellcheck: "false" }),
    ]),
  );
  const fields = h("div", { class: "step" });
  const outcome = h("div", { "aria-live": "polite", id: "connection-outcome" });
  const showFields = () => {
    fields.replaceChildren(
      ...FIELDS[provider.value as Provider].flatMap((field) => [
        h("label", { for: `connection-${field}` }, LABELS[field][0]),
        inputs.get(field)!,
      ]),
    );
  };
  provider.addEventListener("change", showFields);
  showFields();
  const numbers = new Map(
    [...PRICE_FIELDS, ...QUOTA_FIELDS].map(([id, , step]) => [
      id,
      h("input", { id: `connection-${id}`, type: "number", min: "0", step, inputmode: "decimal", autocomplete: "off" }),
    ]),
  );
  // An empty field is left out; a typed one is sent as typed, so the API names what it refuses.
  const read = (id: string) => {
    const text = numbers.get(id)!.value.trim();
    return text === "" ? undefined : Number(text);
  };
  const create = h("button", { type: "submit" }, "Create connection");
  const wording = {
    labels: Object.fromEntries([
      ["name", "Name"],
      ["provider", "Provider"],
      ...Object.entries(LABELS).map(([field, [label]]) => [field, label]),
      ...PRICE_FIELDS.map(([id, label]) => [`prices.${id.replace("-", ".")}_per_million`, `${label} price`]),
      ...QUOTA_FIELDS.map(([id, label]) => [`limits.${id}`, label]),
    ]),
    formats: FORMATS,
  };
  const submit = async () => {
    create.disabled = true;
    const body: Schemas["CreateConnectionRequest"] = { name: name.value.trim(), provider: provider.value as Provider };
    for (const field of FIELDS[provider.value as Provider]) {
      const value = inputs.get(field)!.value.trim();
      if (value) Object.assign(body, { [field]: value });
    }
    const prices = pricesOf(read);
    if (prices) body.prices = prices;
    const quotas = Object.fromEntries(QUOTA_FIELDS.map(([id]) => [id, read(id)]).filter(([, value]) => value !== undefined));
    if (Object.keys(quotas).length) body.limits = quotas;
    try {
      const created = await api.post("/connections", { body });
      location.hash = `#/connections/${encodeURIComponent(created.connection_id)}`;
    } catch (error) {
      create.disabled = false;
      outcome.replaceChildren(errorBox(error, wording));
    }
  };
  return h(
    "form",
    {
      class: "panel",
      "aria-labelledby": "new-connection-title",
      onsubmit: (event: Event) => {
        event.preventDefault();
        void submit();
      },
    },
    h("h2", { id: "new-connection-title" }, "Connect a provider"),
    h("div", { class: "step" }, h("label", { for: "connection-name" }, "Name"), name, h("label", { for: "connection-provider" }, "Provider"), provider),
    fields,
    numberGroup("Prices, USD per million tokens (optional: a live run then records its cost)", PRICE_FIELDS, numbers),
    numberGroup("Quotas for live runs (optional: a run's limits default to them and may not exceed them)", QUOTA_FIELDS, numbers),
    h("p", {}, create),
    outcome,
  );
}

// [field id, label, step] of the number inputs; prices are "<mode>-<input|output>".
const PRICE_FIELDS: [string, string, string][] = [
  ["on_demand-input", "On demand, input", "any"],
  ["on_demand-output", "On demand, output", "any"],
  ["batch-input", "Batch, input", "any"],
  ["batch-output", "Batch, output", "any"],
];
const QUOTA_FIELDS: [keyof Schemas["ConnectionQuotas"], string, string][] = [
  ["max_in_flight", "Requests at once", "1"],
  ["requests_per_minute", "Requests per minute", "1"],
  ["tokens_per_minute", "Tokens per minute", "1"],
];

function numberGroup(legend: string, fields: [string, string, string][], inputs: Map<string, HTMLInputElement>): HTMLElement {
  return h(
    "fieldset",
    { class: "step" },
    h("legend", {}, legend),
    fields.flatMap(([id, label]) => [h("label", { for: `connection-${id}` }, label), inputs.get(id)!]),
  );
}

/** The prices typed, by mode; a mode with neither price typed is left out, one with a single price is
 * sent as it is, for the API to say which is missing. */
function pricesOf(read: (id: string) => number | undefined): Schemas["ModelPrices"] | undefined {
  const mode = (name: string) => {
    const [input, output] = [read(`${name}-input`), read(`${name}-output`)];
    return input === undefined && output === undefined ? undefined : { input_per_million: input, output_per_million: output };
  };
  const [onDemand, batch] = [mode("on_demand"), mode("batch")];
  if (!onDemand && !batch) return undefined;
  return { on_demand: onDemand, ...(batch ? { batch } : {}) } as Schemas["ModelPrices"];
}

/** One connection: what it reaches and what its profile accepts, with Delete. */
export async function connectionPage({ api }: Context, main: HTMLElement, [connectionId]: string[]): Promise<void> {
  const connection = await api.get("/connections/{connection_id}", { path: { connection_id: connectionId } });
  const outcome = h("div", { "aria-live": "polite" });
  const confirm = h("button", { type: "button", class: "danger" }, "Confirm delete");
  const remove = h("button", { type: "button" }, "Delete connection");
  remove.addEventListener("click", () => {
    remove.disabled = true;
    outcome.replaceChildren(
      h("p", { role: "status" }, `Delete ${connection.name}? Its secret in Secrets Manager stays as it is. `, confirm),
    );
    confirm.focus();
  });
  confirm.addEventListener("click", async () => {
    confirm.disabled = true;
    try {
      await api.delete("/connections/{connection_id}", { path: { connection_id: connection.connection_id } });
      location.hash = "#/connections";
    } catch (error) {
      remove.disabled = false;
      outcome.replaceChildren(errorBox(error));
    }
  });
  fill(
    main,
    h("p", {}, h("a", { href: "#/connections" }, "All connections")),
    h("h1", {}, `Connection ${connection.name}`),
    details(connection),
    h("p", {}, remove),
    outcome,
  );
}

function details(connection: Connection): HTMLElement {
  const field = (label: string, value: Node | string) => [h("dt", {}, label), h("dd", {}, value)];
  const limits = connection.profile.limits;
  return h(
    "dl",
    { class: "facts" },
    field("Provider", connection.provider),
    field("Connection ID", h("code", {}, connection.connection_id)),
    connection.region ? field("Region", connection.region) : [],
    connection.role_arn ? field("Role ARN", h("code", {}, connection.role_arn)) : [],
    connection.endpoint_name ? field("Endpoint", connection.endpoint_name) : [],
    connection.base_url ? field("Base URL", h("code", {}, connection.base_url)) : [],
    field("Key", connection.secret_arn ? h("code", {}, connection.secret_arn) : "none (the provider needs no key, or uses the role)"),
    field("Training methods", connection.profile.methods.join(", ")),
    field("Model families", connection.profile.model_families.join(", ")),
    field("Export profiles", connection.profile.export_profiles.join(", ")),
    field(
      "Limits",
      [limits?.max_rows ? `${limits.max_rows} training rows` : null, limits?.max_row_tokens ? `${limits.max_row_tokens} tokens a row` : null]
        .filter(Boolean)
        .join(", ") || "none",
    ),
    field("Prices", pricesText(connection.prices)),
    field(
      "Live-run quotas",
      QUOTA_FIELDS.map(([id, label]) => (connection.limits?.[id] ? `${label.toLowerCase()}: ${connection.limits[id]}` : null))
        .filter(Boolean)
        .join(", ") || "none",
    ),
    field("Created", formatTime(connection.created_at)),
  );
}

function pricesText(prices: Schemas["ModelPrices"] | null | undefined): string {
  if (!prices) return "none (its live runs record tokens, not cost)";
  const pair = (unit: Schemas["TokenPrices"]) => `$${unit.input_per_million} in, $${unit.output_per_million} out`;
  const batch = prices.batch ? `; batch ${pair(prices.batch)}` : "";
  return `per million tokens: on demand ${pair(prices.on_demand)}${batch}`;
}
