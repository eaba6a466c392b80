// A typed client of the REST API. Paths, parameters and answers come from the types generated from
// docs/openapi.json (`npm run types`), so a call to a path or method the API does not have fails `tsc`.
import type { components, paths } from "./schema";

export type Schemas = components["schemas"];

type Method = "get" | "post" | "delete";
type Operation<P extends keyof paths, M extends Method> = NonNullable<paths[P][M]>;
type PathsWith<M extends Method> = {
  [P in keyof paths]: paths[P][M] extends undefined | never ? never : P;
}[keyof paths];
type Success<O> = O extends { responses: infer R }
  ? 200 extends keyof R
    ? R[200]
    : 201 extends keyof R
      ? R[201]
      : 202 extends keyof R
        ? R[202]
        : never
  : never;
type Json<R> = R extends { content: { "application/json": infer J } } ? J : never;
type Params<O> = O extends { parameters: infer P } ? P : never;
type Body<O> = O extends { requestBody: { content: { "application/json": infer B } } } ? B : never;

export type Answer<P extends keyof paths, M extends Method> = Json<Success<Operation<P, M>>>;

export interface Request<O> {
  path?: Params<O> extends { path: infer A } ? A : never;
  query?: Params<O> extends { query?: infer Q } ? Q : never;
  body?: Body<O>;
  /** Extra request headers, e.g. an Idempotency-Key so that a retried launch is the same launch. */
  headers?: Record<string, string>;
}

/** An answer other than 2xx: the API's message (and field problems) say what to fix. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly problems: Schemas["FieldProblem"][] = [],
  ) {
    super(message);
  }
}

export class Api {
  constructor(
    private readonly baseUrl: string,
    private readonly token: () => string | null,
    private readonly onUnauthorized: () => void,
  ) {}

  get<P extends PathsWith<"get">>(path: P, request: Request<Operation<P, "get">> = {}): Promise<Answer<P, "get">> {
    return this.call("GET", path, request);
  }

  post<P extends PathsWith<"post">>(path: P, request: Request<Operation<P, "post">> = {}): Promise<Answer<P, "post">> {
    return this.call("POST", path, request);
  }

  delete<P extends PathsWith<"delete">>(path: P, request: Request<Operation<P, "delete">> = {}): Promise<void> {
    return this.call("DELETE", path, request);
  }

  private async call<T>(
    method: string,
    template: string,
    request: { path?: unknown; query?: unknown; body?: unknown; headers?: Record<string, string> },
  ): Promise<T> {
    const url = this.baseUrl.replace(/\/$/, "") + fillPath(template, request.path) + queryString(request.query);
    const headers: Record<string, string> = { ...request.headers, Authorization: this.token() ?? "" };
    if (request.body !== undefined) headers["Content-Type"] = "application/json";
    const response = await fetch(url, {
      method,
      headers,
      body: request.body === undefined ? undefined : JSON.stringify(request.body),
    });
    const text = await response.text();
    const answer = text ? JSON.parse(text) : null;
    if (response.status === 401) this.onUnauthorized();
    if (!response.ok) {
      throw new ApiError(
        response.status,
        (answer && answer.message) || `${method} ${template}: ${response.status}`,
        Array.isArray(answer?.errors) ? answer.errors : [],
      );
    }
    return answer as T;
  }
}

function fillPath(template: string, values: unknown): string {
  const given = (values ?? {}) as Record<string, string>;
  return template.replace(/\{(\w+)\}/g, (_, name: string) => {
    if (!(name in given)) throw new Error(`${template} needs ${name}`);
    return encodeURIComponent(given[name]);
  });
}

function queryString(values: unknown): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries((values ?? {}) as Record<string, unknown>)) {
    if (value !== undefined && value !== null && value !== "") search.set(name, String(value));
  }
  const text = search.toString();
  return text ? `?${text}` : "";
}
