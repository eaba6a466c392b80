// What a judge model did and how far it can be trusted, as the run, environment and evaluation pages show it.
import type { Schemas } from "./api/client";
import { type Child, formatNumber, h } from "./dom";

type Calibration = Schemas["JudgeCalibration"];
type Agreement = Schemas["JudgeAgreement"];

const count = (value: number | null | undefined) => (value ?? 0).toLocaleString("en-US");
const percent = (value: number | null | undefined) => (value === null || value === undefined ? "—" : `${(100 * value).toFixed(0)}%`);
const field = (label: string, ...value: (Node | string)[]) => [h("dt", {}, label), h("dd", {}, ...value)];

/** Dollars to the cent, and to four significant digits below a cent, where small runs cost. */
export function usd(amount: number): string {
  return amount >= 0.01 || amount === 0 ? `$${amount.toFixed(2)}` : `$${amount.toPrecision(4)}`;
}

/** Cohen's kappa with its 95% interval, or why it is undefined. */
function kappa(c: Schemas["CriterionAgreement"]): string {
  if (c.kappa === null || c.kappa === undefined) return c.note ?? "undefined: no answer was judged";
  return `${c.kappa.toFixed(2)} [${formatNumber(c.kappa_low, 2)}, ${formatNumber(c.kappa_high, 2)}]`;
}

/** A judge's measured agreement with people, a row per criterion; or, plainly, that it was not measured. */
export function agreementFigures(calibration: Calibration | Agreement | null | undefined, heading: string): HTMLElement {
  const title = h("h3", {}, heading);
  if (!calibration || calibration.status !== "measured") {
    const why = !calibration
      ? "its agreement with people was never measured"
      : calibration.status === "failed"
        ? `calibration failed: ${calibration.reason ?? "no reason was recorded"}`
        : (calibration.reason ?? "no human-labelled answers");
    return h("div", { class: "agreement" }, title, h("p", { class: "headline uncalibrated", role: "note" }, `UNCALIBRATED judge: ${why}.`));
  }
  const warnings = "warnings" in calibration ? (calibration.warnings ?? []) : [];
  return h(
    "div",
    { class: "agreement" },
    title,
    h("p", {}, `Measured on ${count(calibration.answers)} human-labelled answers, judged by ${calibration.model_id ?? "the judge"}.`),
    warnings.length ? h("ul", { class: "warnings", "aria-label": "Agreement warnings" }, warnings.map((w) => h("li", {}, w))) : null,
    h(
      "div",
      { class: "table-scroll" },
      h(
        "table",
        { class: "list agreement-figures" },
        h("caption", {}, "Agreement with people per criterion (Cohen's kappa with its 95% interval)"),
        h("thead", {}, h("tr", {}, ["Criterion", "Answers", "Accuracy", "Kappa [95% CI]", "Unjudged"].map((t) => h("th", { scope: "col" }, t)))),
        h(
          "tbody",
          {},
          calibration.criteria?.map((c) =>
            h(
              "tr",
              { "data-criterion": c.criterion },
              h("th", { scope: "row" }, c.criterion),
              h("td", { class: "number" }, count(c.n)),
              h("td", { class: "number" }, percent(c.accuracy)),
              h("td", {}, kappa(c)),
              h("td", { class: "number" }, count(c.unjudged)),
            ),
          ),
        ),
      ),
    ),
  );
}

/** A judged run's judge: who it is, how far it agrees with people, and what judging the run took. */
export function judgePanel(run: Schemas["RunDetail"]): HTMLElement {
  const judging = run.judging;
  const counts = run.counts ?? {};
  return h(
    "section",
    { class: "panel judge", "aria-labelledby": "judge-title" },
    h("h2", { id: "judge-title" }, "Judge"),
    judging?.same_family
      ? h(
          "p",
          { class: "headline same-family", role: "note" },
          `Same family: the judge ${judging.model_id} is of the ${judging.family ?? "same"} family as the judged model ${run.model}; it may favour answers of its own kind.`,
        )
      : null,
    judging
      ? h(
          "dl",
          {},
          field("Model", judging.model_id),
          field("Connection", judging.connection_name ? `${judging.connection_name} (${judging.connection_id})` : judging.connection_id),
          field("Family", judging.family ?? "not known"),
          field(
            "Same family as the judged model",
            judging.same_family === null || judging.same_family === undefined ? "not known" : judging.same_family ? "yes" : "no",
          ),
        )
      : null,
    agreementFigures(run.judge, "Agreement with people"),
    h("h3", {}, "Cases"),
    h(
      "dl",
      { class: "judged-counts" },
      field("Passed", count(counts.passed)),
      field("Failed", count((counts.total ?? 0) - (counts.passed ?? 0) - (counts.unjudged ?? 0))),
      field("Unjudged (neither passed nor failed)", count(counts.unjudged)),
    ),
    judging ? judgingSummary(judging) : null,
  );
}

/** The judge's calls, tokens and cost, apart from the judged model's. */
function judgingSummary(judging: Schemas["JudgingSummary"]): Child[] {
  const reasons = judging.unjudged_reasons ?? [];
  return [
    h("h3", {}, "Judging"),
    h(
      "dl",
      { class: "judging" },
      field("Judged", `${count(judging.judged)} of ${count(judging.cases)} cases`),
      field("Unreadable answers", count(judging.unreadable)),
      field("Errors (no answer)", count(judging.errors)),
      field("Judge calls", count(judging.calls)),
      field("Judge input tokens", count(judging.input_tokens)),
      field("Judge output tokens", count(judging.output_tokens)),
      field("Judge cost", judging.cost ? `${usd(judging.cost.total)} (${judging.cost.currency})` : (judging.cost_note ?? "no prices on the connection")),
    ),
    h("p", { class: "muted" }, "The judge's tokens and cost are its own, apart from the judged model's."),
    reasons.length ? h("ul", { class: "warnings", "aria-label": "Unjudged cases" }, reasons.map((reason) => h("li", {}, reason))) : null,
  ];
}

/** A comparison's pairwise section: which answer the judge preferred, asked in both orders, and its position bias. */
export function pairwisePanel(p: Schemas["Pairwise"]): HTMLElement {
  const bias = p.position_bias;
  return h(
    "section",
    { class: "pairwise", "aria-label": "Pairwise judging" },
    h("h4", {}, "Pairwise judging"),
    p.warnings?.length ? h("ul", { class: "warnings", "aria-label": "Pairwise warnings" }, p.warnings.map((w) => h("li", {}, w))) : null,
    h(
      "p",
      { class: "method" },
      `Method: the judge ${p.judge_model ?? "(model id not given)"} (family ${p.judge_family ?? "not known"}) compared both models' answers to ${count(p.asked_pairs)} held-out cases, ` +
        "each pair asked in both orders; a pair the two orders disagree on is inconsistent and counted as a tie.",
    ),
    h(
      "dl",
      {},
      field("Trained model won", count(p.wins)),
      field("Base model won", count(p.losses)),
      field("Ties (inconsistent included)", count(p.ties)),
      field("Inconsistent pairs", count(p.inconsistent)),
      field("Unjudged pairs", count(p.unjudged)),
      field("Win rate", p.win_rate === null || p.win_rate === undefined ? "n/a (no pair judged)" : percent(p.win_rate)),
      field("Sign test p", formatNumber(p.sign_p)),
      field("Position bias", bias.finding),
      field("Judge", `${count(p.judge_use.answers)} answers, ${count(p.judge_use.input_tokens)} input and ${count(p.judge_use.output_tokens)} output tokens, apart from both models'`),
    ),
    h("p", { class: "muted" }, `Win rate: ${p.win_rate_rule}. Sign test: ${p.sign_test_rule}. Position bias: ${bias.rule}.`),
  );
}
