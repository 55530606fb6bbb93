// The balance read of docs/sandbox.md, in plain Node (20 or later: global
// fetch; no packages): two accounts made through /_fake, a payment through
// /v1, the balance read with a decryption proof from /_fake/prove, and the
// recipient's note opened through /_fake/open-note. CI runs it against the
// binary (and a Go test does when node is on PATH):
//
//   CONFPAY_BASE_URL=http://127.0.0.1:12180 node scripts/sandbox-balance.mjs
//
// CONFPAY_FAKESERVER_ADMIN_TOKEN is sent on /_fake when set.
const base = (process.env.CONFPAY_BASE_URL || "http://127.0.0.1:12180").replace(/\/$/, "");
const token = process.env.CONFPAY_FAKESERVER_ADMIN_TOKEN;

async function call(method, path, { key, body } = {}) {
  const headers = { "Content-Type": "application/json" };
  if (key) headers.Authorization = `Bearer ${key}`;
  else if (token && path.startsWith("/_fake/")) headers.Authorization = `Bearer ${token}`;
  const res = await fetch(base + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  const json = text ? JSON.parse(text) : null;
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${json?.code}: ${json?.message}`);
  return json;
}

function check(cond, what) {
  if (!cond) throw new Error(`check failed: ${what}`);
}

const suffix = Math.random().toString(36).slice(2, 10);
// Accounts, with key pairs the sandbox generates (it keeps no copy of the
// private half: decryption_key is shown once).
const alice = await call("POST", "/_fake/accounts", { body: { handle: `@alice_${suffix}`, generate_encryption_key: true } });
const bob = await call("POST", "/_fake/accounts", { body: { handle: `@bob_${suffix}`, generate_encryption_key: true } });
await call("POST", "/_fake/fund", { body: { account: alice.handle, network: "test", asset: "USDG", amount: "100" } });

// A payment through /v1, as production takes it.
const transfer = await call("POST", "/v1/transfers", { key: alice.test_key, body: { to: bob.handle, amount: "12.5", memo: "lunch" } });
check(transfer.status === "pending", `transfer status ${transfer.status}`);

// Without a proof the service says only whether a balance is non-zero.
const sealed = await call("GET", "/v1/accounts/me/balances", { key: alice.test_key });
check(sealed.balances[0].nonzero === true && sealed.balances[0].amount === undefined, "no figure without a proof");

// The production path: a decryption proof (built here by the sandbox with
// the key, test-only), then the balances call with it. Node's fetch cannot
// send a GET body, so the proof goes in the query.
const { decryption_proof } = await call("POST", "/_fake/prove", { body: { account: alice.handle, network: "test", decryption_key: alice.decryption_key } });
const proved = await call("GET", `/v1/accounts/me/balances?decryption_proof=${encodeURIComponent(decryption_proof)}`, { key: alice.test_key });
const usdg = proved.balances.find((b) => b.asset === "USDG");
check(usdg && usdg.amount === "87.5", `alice's USDG ${JSON.stringify(usdg)}, want 87.5`);

// The recipient opens the transfer's note with its own key.
const note = await call("POST", "/_fake/open-note", { body: { transfer_id: transfer.transfer_id, decryption_key: bob.decryption_key } });
check(note.amount === "12.5" && note.memo === "lunch", `note ${JSON.stringify(note)}`);

console.log(`sandbox-balance: ok (alice holds ${usdg.amount} USDG; bob's note: ${note.amount} ${note.asset}, "${note.memo}")`);
