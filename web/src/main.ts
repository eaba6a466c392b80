import "./style.css";
import { Api, ApiError } from "./api/client";
import { Session } from "./auth";
import { loadConfig } from "./config";
import type { Context, Page } from "./context";
import { errorBox, h } from "./dom";
import { connectionPage, connectionsPage } from "./pages/connections";
import { datasetPage, datasetsPage } from "./pages/datasets";
import { environmentsPage } from "./pages/environments";
import { runPage } from "./pages/run";
import { runsPage } from "./pages/runs";
import { startRunPage } from "./pages/startrun";
import { signInPage } from "./pages/signin";
import { trainPage } from "./pages/train";
import { trainingRunPage, trainingRunsPage } from "./pages/training";
import { workspacePage, workspacesPage } from "./pages/workspace";

const ROUTES: [RegExp, Page][] = [
  [/^\/runs$/, runsPage],
  [/^\/runs\/([^/]+)$/, runPage],
  [/^\/datasets$/, datasetsPage],
  [/^\/datasets\/([^/]+)$/, datasetPage],
  [/^\/train$/, trainPage],
  [/^\/training-runs$/, trainingRunsPage],
  [/^\/training-runs\/([^/]+)$/, trainingRunPage],
  [/^\/workspace$/, workspacesPage],
  [/^\/environments$/, environmentsPage],
  [/^\/environments\/([^/]+)\/([^/]+)\/run$/, startRunPage],
  [/^\/connections$/, connectionsPage],
  [/^\/connections\/([^/]+)$/, connectionPage],
  [/^\/workspace\/([^/]+)(?:\/(\w+))?$/, workspacePage],
];

const NAV: [string, string][] = [
  ["#/runs", "Runs"],
  ["#/datasets", "Datasets"],
  ["#/train", "Train"],
  ["#/training-runs", "Training runs"],
  ["#/workspace", "Workspace"],
  ["#/connections", "Connections"],
  ["#/environments", "Environments"],
];

async function start(): Promise<void> {
  const main = document.getElementById("main") as HTMLElement;
  let config;
  try {
    config = await loadConfig();
  } catch (error) {
    main.replaceChildren(errorBox(error));
    return;
  }
  const session = new Session(config);
  const api = new Api(config.apiUrl, () => session.token(), () => {
    session.signOut();
    void render();
  });
  let leave: (() => void)[] = [];
  const context: Context = { api, session, onLeave: (stop) => leave.push(stop) };

  async function render(): Promise<void> {
    leave.forEach((stop) => stop());
    leave = [];
    renderChrome(session, render);
    if (!session.token()) {
      await signInPage(session, main, render);
      return;
    }
    const path = location.hash.replace(/^#/, "").split("?")[0] || "/runs";
    const found = ROUTES.map(([pattern, page]) => [pattern.exec(path), page] as const).find(([match]) => match);
    if (!found) {
      main.replaceChildren(h("h1", {}, "Not found"), h("p", {}, `Nothing lives at ${path}. `, h("a", { href: "#/runs" }, "See the runs")));
      return;
    }
    const [match, page] = found;
    // Each render draws into its own container: one still loading when the reader moves on writes into a
    // detached node instead of adding a second copy of a page to the one shown.
    const view = h("div", { class: "view" });
    main.replaceChildren(view);
    try {
      await page(context, view, match!.slice(1).filter((part) => part !== undefined));
    } catch (error) {
      // A page that cannot be shown (an unknown id, a refusal) still leads somewhere: its section's list.
      const section = NAV.find(([href]) => href === `#/${path.split("/")[1]}`) ?? NAV[0];
      const missing = error instanceof ApiError && error.status === 404;
      if (!view.querySelector("h1")) view.append(h("h1", {}, missing ? "Not found" : "This page cannot be shown"));
      view.append(errorBox(error), h("p", {}, h("a", { href: section[0] }, `Back to ${section[1]}`)));
    }
  }

  // The address's hash is the router's: followed as a link, "#main" would be read as a page that does not
  // exist. The skip link moves the focus to the content and leaves the address as it is.
  document.querySelector(".skip")?.addEventListener("click", (event) => {
    event.preventDefault();
    main.focus();
  });
  window.addEventListener("hashchange", () => void render());
  await render();
}

function renderChrome(session: Session, render: () => Promise<void>): void {
  const nav = document.getElementById("nav") as HTMLElement;
  const who = document.getElementById("who") as HTMLElement;
  const identity = session.identity();
  const current = location.hash.split("/")[1] ?? "runs";
  nav.replaceChildren(
    ...(identity
      ? NAV.map(([href, label]) =>
          h("a", { href, "aria-current": href.split("/")[1] === current ? "page" : undefined }, label),
        )
      : []),
  );
  who.replaceChildren(
    ...(identity
      ? [
          h("span", {}, identity.name),
          h(
            "button",
            {
              type: "button",
              onclick: () => {
                session.signOut();
                void render();
              },
            },
            "Sign out",
          ),
        ]
      : []),
  );
}

void start();
