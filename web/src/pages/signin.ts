import type { Session } from "../auth";
import { errorBox, h } from "../dom";

export async function signInPage(session: Session, main: HTMLElement, done: () => Promise<void>): Promise<void> {
  const email = h("input", { id: "username", name: "username", type: "text", autocomplete: "username", required: true });
  const password = h("input", {
    id: "password",
    name: "password",
    type: "password",
    autocomplete: "current-password",
    required: true,
  });
  const problem = h("div", { "aria-live": "polite" });
  const form = h(
    "form",
    { class: "signin", "aria-labelledby": "signin-title" },
    h("h1", { id: "signin-title" }, "Sign in"),
    h("label", { for: "username" }, "Email or user name"),
    email,
    h("label", { for: "password" }, "Password"),
    password,
    problem,
    h("button", { type: "submit" }, "Sign in"),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    problem.replaceChildren();
    try {
      await session.signIn(email.value.trim(), password.value);
      await done();
    } catch (error) {
      problem.replaceChildren(errorBox(error));
    }
  });
  main.replaceChildren(form);
  email.focus();
}
