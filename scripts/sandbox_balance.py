"""The balance read of docs/sandbox.md in Python 3 (standard library only):
two accounts made through /_fake, a payment through /v1, the balance read
with a decryption proof from /_fake/prove, and the recipient's note opened
through /_fake/open-note. A Go test runs it against the binary when python3
is on PATH.

    CONFPAY_BASE_URL=http://127.0.0.1:12180 python3 scripts/sandbox_balance.py

CONFPAY_FAKESERVER_ADMIN_TOKEN is sent on /_fake when set.
"""
import json
import os
import secrets
import urllib.error
import urllib.request

BASE = os.environ.get("CONFPAY_BASE_URL", "http://127.0.0.1:12180").rstrip("/")
TOKEN = os.environ.get("CONFPAY_FAKESERVER_ADMIN_TOKEN")


def call(method, path, key=None, body=None):
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = "Bearer " + key
    elif TOKEN and path.startswith("/_fake/"):
        headers["Authorization"] = "Bearer " + TOKEN
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(BASE + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req) as res:
            text = res.read()
    except urllib.error.HTTPError as e:
        err = json.loads(e.read() or b"{}")
        raise SystemExit(f"{method} {path}: {e.code} {err.get('code')}: {err.get('message')}")
    return json.loads(text) if text else None


suffix = secrets.token_hex(4)
alice = call("POST", "/_fake/accounts", body={"handle": "@alice_" + suffix, "generate_encryption_key": True})
bob = call("POST", "/_fake/accounts", body={"handle": "@bob_" + suffix, "generate_encryption_key": True})
call("POST", "/_fake/fund", body={"account": alice["handle"], "network": "test", "asset": "USDG", "amount": "100"})

transfer = call("POST", "/v1/transfers", key=alice["test_key"], body={"to": bob["handle"], "amount": "12.5", "memo": "lunch"})

# The production path: a proof (built by the sandbox, test-only), then the
# balances call with it in the JSON body of the GET.
proof = call("POST", "/_fake/prove", body={"account": alice["handle"], "network": "test", "decryption_key": alice["decryption_key"]})
proved = call("GET", "/v1/accounts/me/balances", key=alice["test_key"], body={"decryption_proof": proof["decryption_proof"]})
usdg = next(b for b in proved["balances"] if b["asset"] == "USDG")
assert usdg["amount"] == "87.5", usdg

note = call("POST", "/_fake/open-note", body={"transfer_id": transfer["transfer_id"], "decryption_key": bob["decryption_key"]})
assert note["amount"] == "12.5" and note["memo"] == "lunch", note

print(f"sandbox_balance: ok (alice holds {usdg['amount']} USDG; bob's note: {note['amount']} {note['asset']}, \"{note['memo']}\")")
