package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver"
	"github.com/confpay/confpay-go/webhookverify"
)

// TestTrigger: each of the seven kinds, triggered against a fakeserver,
// reaches a recorder subscribed to that kind alone, about the account.
func TestTrigger(t *testing.T) {
	t.Parallel()
	for _, kind := range webhookverify.Kinds() {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			rec := f.srv.Record(t, "@alice", confpay.EventKind(kind))
			out := f.ok(f.as(f.alice, false), "trigger", kind)
			if !strings.Contains(out, "Triggered "+kind) || !strings.Contains(out, "("+kind+")") {
				t.Errorf("trigger %s printed:\n%s", kind, out)
			}
			ev := rec.Wait(t, confpay.EventKind(kind))
			if ev.Kind() != kind {
				t.Fatalf("got %s, want %s", ev.Kind(), kind)
			}
			switch e := ev.(type) {
			case *webhookverify.TransferEvent:
				if e.Account != "@alice" || e.Direction != webhookverify.DirectionReceived {
					t.Errorf("%s: %+v", kind, e)
				}
			case *webhookverify.AgentTransactionEvent:
				if e.Agent != "@alice/"+triggerAgentName {
					t.Errorf("%s: %+v", kind, e)
				}
			}
			// Twice in a row works too: the agent is reused.
			f.ok(f.as(f.alice, false), "trigger", kind)
			agents, err := f.srv.Client(f.alice.TestKey).Agents.List(t.Context())
			if err != nil || len(agents) > 1 {
				t.Errorf("agents after two triggers: %d, %v", len(agents), err)
			}
		})
	}
}

// TestTriggerRefusals: an unknown kind is a usage error; a fakeserver with
// an admin token needs it; a server that is not a fakeserver gets only
// what /v1 allows, and is told.
func TestTriggerRefusals(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	if r := f.run(f.as(f.alice, false), "trigger", "transfer.done"); r.code != exitUsage || !strings.Contains(r.stderr, "unknown event") {
		t.Errorf("unknown kind: exit %d, %s", r.code, r.stderr)
	}

	token := strings.Repeat("t", 24)
	locked := newFixture(t, fakeserver.WithAdminToken(token))
	rec := locked.srv.Record(t, "@alice", confpay.EventKind(webhookverify.KindTransferInitiated))
	if r := locked.run(locked.as(locked.alice, false), "trigger", webhookverify.KindTransferInitiated); r.code != exitAuth || !strings.Contains(r.stderr, envAdminToken) {
		t.Errorf("no admin token: exit %d, %s", r.code, r.stderr)
	}
	env := locked.as(locked.alice, false)
	env[envAdminToken] = token
	locked.ok(env, "trigger", webhookverify.KindTransferInitiated)
	rec.Wait(t, confpay.EventKind(webhookverify.KindTransferInitiated))

	// Not a fakeserver: /_fake is 404 there. Only /v1 is used.
	h := f.srv.Handler()
	notFake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/_fake") {
			http.NotFound(w, r)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(notFake.Close)
	env = f.as(f.alice, false)
	env[envBaseURL] = notFake.URL
	rec = f.srv.Record(t, "@alice", confpay.EventKind(webhookverify.KindTransferInitiated))
	for _, kind := range webhookverify.Kinds() {
		if r := f.run(env, "trigger", kind); r.code != exitUsage || !strings.Contains(r.stderr, "not a fakeserver") {
			t.Errorf("%s against another server: exit %d, %s", kind, r.code, r.stderr)
		}
	}
	out := f.ok(env, "trigger", webhookverify.KindTransferInitiated, "--to", "@bob")
	if !strings.Contains(out, "only /v1 was used") {
		t.Errorf("trigger --to against another server:\n%s", out)
	}
	ev := rec.Wait(t, confpay.EventKind(webhookverify.KindTransferInitiated)).(*webhookverify.TransferEvent)
	if ev.Direction != webhookverify.DirectionSent || ev.Counterparty != "@bob" {
		t.Errorf("event %+v", ev)
	}
}

// TestProof: confpay proof prints a proof built locally that reads the
// figures through the balances call; it needs the account's key.
func TestProof(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	proof := strings.TrimSpace(f.ok(f.as(f.alice, true), "proof"))
	c := f.srv.Client(f.alice.TestKey)
	bals, err := c.Accounts.Balances(t.Context(), &confpay.BalancesParams{DecryptionProof: proof})
	if err != nil || len(bals) != 1 || bals[0].Amount == nil || bals[0].Amount.String() != "100" {
		t.Fatalf("balances with the printed proof: %v, %v", bals, err)
	}
	var j struct {
		DecryptionProof string `json:"decryption_proof"`
	}
	decodeStrict(t, f.ok(f.as(f.alice, true), "proof", "--json"), &j)
	if j.DecryptionProof == "" {
		t.Error("proof --json has no decryption_proof")
	}
	if r := f.run(f.as(f.alice, false), "proof"); r.code != exitUsage || !strings.Contains(r.stderr, envDecryptionKey) {
		t.Errorf("no key: exit %d, %s", r.code, r.stderr)
	}
	wrong := f.as(f.alice, false)
	wrong[envDecryptionKey] = f.bob.DecryptionKey.Reveal()
	if r := f.run(wrong, "proof"); r.code != exitUsage || !strings.Contains(r.stderr, "not this account's key") || strings.Contains(r.stderr, f.bob.DecryptionKey.Reveal()) {
		t.Errorf("another key: exit %d, %s", r.code, r.stderr)
	}
	if r := f.run(f.as(f.bob, true), "proof"); r.code != exitError || !strings.Contains(r.stderr, "nothing to prove") {
		t.Errorf("nothing held: exit %d, %s", r.code, r.stderr)
	}
}
