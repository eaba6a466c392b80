/** What /config.json says: the deployment writes it beside the app (the stack's values on AWS). */
export interface ConsoleConfig {
  apiUrl: string;
  region: string;
  userPoolId: string;
  userPoolClientId: string;
  /** Only where Cognito is not at its regional address (the local cloud). */
  cognitoEndpoint?: string;
}

export async function loadConfig(): Promise<ConsoleConfig> {
  const response = await fetch("/config.json", { cache: "no-store" });
  if (!response.ok) throw new Error(`/config.json answered ${response.status}: the console is not configured`);
  const config = (await response.json()) as Partial<ConsoleConfig>;
  for (const field of ["apiUrl", "region", "userPoolId", "userPoolClientId"] as const) {
    if (!config[field]) throw new Error(`/config.json has no ${field}`);
  }
  return config as ConsoleConfig;
}
