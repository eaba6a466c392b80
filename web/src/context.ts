import type { Api } from "./api/client";
import type { Session } from "./auth";

/** What every page is given: the API client and who is signed in. */
export interface Context {
  api: Api;
  session: Session;
  /** Set by a page that polls: called when the reader leaves it. */
  onLeave(stop: () => void): void;
}

export type Page = (context: Context, main: HTMLElement, params: string[]) => Promise<void>;
