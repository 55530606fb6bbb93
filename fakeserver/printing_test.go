package fakeserver_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver"
)

// TestSecretsNeverPrinted: an AccountInfo, a NewKey, an AgentInfo, what a
// seed created and the SDK's TransferCreateParams, alone or inside a
// slice or a struct, printed with fmt, logged with slog's text and JSON
// handlers or encoded with encoding/json, never show a key, an amount or a
// memo.
func TestSecretsNeverPrinted(t *testing.T) {
	srv := fakeserver.New(t)
	info, err := srv.CreateAccount(fakeserver.AccountParams{Handle: "@alice", GenerateEncryptionKey: true})
	if err != nil {
		t.Fatal(err)
	}
	key, err := srv.IssueKey("@alice", confpay.NetworkTest, "ci")
	if err != nil {
		t.Fatal(err)
	}
	params := confpay.TransferCreateParams{To: "@bob", Amount: confpay.MustParseAmount("987.654321"), Memo: "invoice QX-4711 for Bob", Confidential: confpay.Ptr(true)}
	// Each secret is a string no printed id, address, key or pointer can
	// hold by chance: "4711" alone turned up inside a random hex string.
	secrets := []string{info.TestKey.Reveal(), info.LiveKey.Reveal(), info.DecryptionKey.Reveal(), key.APIKey.Reveal(), "987.654321", "QX-4711"}

	var out bytes.Buffer
	for _, v := range []any{info, &info, *info, key, &key, params, &params} {
		fmt.Fprintf(&out, "%v %+v %#v %s\n", v, v, v, v)
	}
	for _, h := range []slog.Handler{slog.NewJSONHandler(&out, nil), slog.NewTextHandler(&out, nil)} {
		slog.New(h).Info("made", "info", *info, "info_ptr", info, "key", key, "params", params, "params_ptr", &params)
	}
	// What holds them: a seed's result, a slice, a struct, an agent, the
	// answer the binary prints; with slog's JSON handler and encoding/json.
	seeded := srv.Seed(t, &fakeserver.Seed{
		Accounts: []fakeserver.SeedAccount{{Handle: "@carol", GenerateEncryptionKey: true}},
		Agents:   []fakeserver.SeedAgent{{Owner: "@carol", Name: "buyer", SpendPolicy: confpay.SpendPolicyParams{DailyLimitUSDG: confpay.Ptr(confpay.MustParseLimit("50")), PerTransactionLimitUSDG: confpay.Ptr(confpay.MustParseLimit("10"))}}},
	})
	agent := seeded.Agent("@carol/buyer")
	carol := seeded.Account("@carol")
	secrets = append(secrets, carol.TestKey.Reveal(), carol.LiveKey.Reveal(), carol.DecryptionKey.Reveal(), agent.TestKey.Reveal(), agent.LiveKey.Reveal())
	holder := struct {
		Info  fakeserver.AccountInfo
		Agent *fakeserver.AgentInfo
	}{*info, agent}
	answer := fakeserver.SeededAnswer{URL: srv.URL(), Seeded: seeded}
	for _, v := range []any{seeded, []fakeserver.AccountInfo{*info}, []*fakeserver.AccountInfo{info}, holder, agent, *agent, []fakeserver.NewKey{*key}, answer} {
		slog.New(slog.NewJSONHandler(&out, nil)).Info("made", "v", v)
		fmt.Fprintf(&out, "%v %+v %#v\n", v, v, v)
		if _, ok := v.(fakeserver.SeededAnswer); ok {
			continue // its JSON encoding is the one that hands the keys over
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("json.Marshal(%T): %v", v, err)
		}
		out.Write(b)
	}
	for _, s := range secrets {
		if strings.Contains(out.String(), s) {
			t.Errorf("%q printed:\n%s", s, out.String())
		}
	}
	if !strings.Contains(out.String(), "@alice") || !strings.Contains(out.String(), key.KeyID) {
		t.Errorf("the public fields are missing:\n%s", out.String())
	}
}
