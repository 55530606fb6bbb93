// The smallest valid requests of the two OpenAPI documents, typed with the
// client openapi-typescript generates from them (gen/, made by
// scripts/check-openapi.sh). If a member the server does not require
// becomes required in the generated types (a `default` on a request
// member does that), this file stops compiling.
import type { paths as V1 } from "./gen/v1";
import type { paths as Fake } from "./gen/fake";

type Body<P, Path extends keyof P, M extends string> =
  P[Path] extends Record<M, { requestBody?: { content: { "application/json": infer B } } }> ? B : never;

// POST /v1/transfers: only the recipient and the amount.
export const transfer: Body<V1, "/v1/transfers", "post"> = { to: "@bob", amount: "12.5" };

// POST /v1/accounts/me/agents: a name and the two required limits.
export const agent: Body<V1, "/v1/accounts/me/agents", "post"> = {
  name: "buyer",
  spend_policy: { daily_limit_usdg: 100, per_transaction_limit_usdg: 25 },
};

// PATCH /v1/agents/{account_id}/spend-policy: any one member.
export const patch: Body<V1, "/v1/agents/{account_id}/spend-policy", "patch"> = { daily_limit_usdg: 200 };

// POST /v1/webhooks: a URL and the events.
export const webhook: Body<V1, "/v1/webhooks", "post"> = {
  url: "https://example.com/hooks",
  events: ["transfer.confirmed"],
};

// POST /_fake/accounts: a handle alone.
export const account: Body<Fake, "/_fake/accounts", "post"> = { handle: "@alice" };

// POST /_fake/fund.
export const fund: Body<Fake, "/_fake/fund", "post"> = {
  account: "@alice",
  network: "test",
  asset: "USDG",
  amount: "100",
};
