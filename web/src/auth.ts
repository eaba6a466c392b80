// Sign-in against the Cognito user pool (InitiateAuth, USER_PASSWORD_AUTH). The ID token is what the
// API's authorizer checks; it is kept for this tab only (sessionStorage) and dropped when it expires.
import type { ConsoleConfig } from "./config";

const STORAGE_KEY = "benchgen.idToken";

export interface Identity {
  sub: string;
  email: string | null;
  groups: string[];
}

export class Session {
  constructor(private readonly config: ConsoleConfig) {}

  token(): string | null {
    const token = sessionStorage.getItem(STORAGE_KEY);
    if (!token) return null;
    const claims = decode(token);
    if (!claims || typeof claims.exp !== "number" || claims.exp * 1000 <= Date.now()) {
      this.signOut();
      return null;
    }
    return token;
  }

  identity(): Identity | null {
    const token = this.token();
    const claims = token ? decode(token) : null;
    if (!claims) return null;
    return {
      sub: String(claims.sub),
      email: typeof claims.email === "string" ? claims.email : null,
      groups: Array.isArray(claims["cognito:groups"]) ? (claims["cognito:groups"] as string[]) : [],
    };
  }

  signOut(): void {
    sessionStorage.removeItem(STORAGE_KEY);
  }

  async signIn(username: string, password: string): Promise<void> {
    const endpoint = this.config.cognitoEndpoint ?? `https://cognito-idp.${this.config.region}.amazonaws.com/`;
    const response = await fetch(endpoint, {
      method: "POST",
      headers: {
        "Content-Type": "application/x-amz-json-1.1",
        "X-Amz-Target": "AWSCognitoIdentityProviderService.InitiateAuth",
      },
      body: JSON.stringify({
        AuthFlow: "USER_PASSWORD_AUTH",
        ClientId: this.config.userPoolClientId,
        AuthParameters: { USERNAME: username, PASSWORD: password },
      }),
    });
    const answer = await response.json().catch(() => ({}));
    if (!response.ok) {
      throw new Error(answer.message || answer.__type || `sign-in failed (${response.status})`);
    }
    if (answer.ChallengeName) {
      throw new Error(`the user pool asks for ${answer.ChallengeName}: finish it with the AWS CLI, then sign in`);
    }
    const token = answer.AuthenticationResult?.IdToken;
    if (typeof token !== "string") throw new Error("the user pool answered without an ID token");
    sessionStorage.setItem(STORAGE_KEY, token);
  }
}

function decode(token: string): Record<string, unknown> | null {
  const payload = token.split(".")[1];
  if (!payload) return null;
  try {
    const json = atob(payload.replace(/-/g, "+").replace(/_/g, "/"));
    return JSON.parse(new TextDecoder().decode(Uint8Array.from(json, (c) => c.charCodeAt(0))));
  } catch {
    return null;
  }
}
