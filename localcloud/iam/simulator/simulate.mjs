// Decides AWS calls against IAM identity policies with @cloud-copilot/iam-simulate, IAM's evaluation logic
// (wildcards, NotAction/NotResource, explicit denies, condition operators). One process serves a local
// cloud: it reads one JSON request a line on stdin and writes one JSON answer a line on stdout, in order.
//
//   {"role": "<name>", "policies": [{"name": ..., "policy": {...}}]}       remember a role's policies
//   {"role": "<name>", "principal": "<arn>", "action": "s3:GetObject",
//    "resource": "<arn>", "context": {"s3:prefix": "runs/"}}                 decide one request
//
// An answer is {"decision": "Allowed" | "ImplicitlyDenied" | "ExplicitlyDenied"} or {"error": "..."}.
import { createInterface } from "node:readline";
import { runSimulation } from "@cloud-copilot/iam-simulate";

const roles = new Map();

async function answer(request) {
  if (request.policies) {
    roles.set(request.role, request.policies);
    return { registered: request.role };
  }
  const policies = roles.get(request.role);
  if (!policies) {
    return { error: `no policies were registered for role ${request.role}` };
  }
  const result = await runSimulation(
    {
      identityPolicies: policies,
      serviceControlPolicies: [],
      resourceControlPolicies: [],
      request: {
        principal: request.principal,
        action: request.action,
        resource: { resource: request.resource, accountId: request.account },
        contextVariables: request.context ?? {},
      },
    },
    {},
  );
  if (result.resultType === "error") {
    return { error: JSON.stringify(result.errors) };
  }
  return { decision: result.overallResult };
}

const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  let reply;
  try {
    reply = await answer(JSON.parse(line));
  } catch (error) {
    reply = { error: String(error?.stack ?? error) };
  }
  process.stdout.write(JSON.stringify(reply) + "\n");
}
