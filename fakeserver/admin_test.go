package fakeserver_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/decrypt"
	"github.com/confpay/confpay-go/fakeserver"
)

// adminDo calls the admin interface and checks the status.
func adminDo(t *testing.T, srv *fakeserver.Server, method, path, body string, want int, out any) {
	t.Helper()
	a := rawCall(t, srv, method, path, "", body)
	if a.status != want {
		t.Fatalf("%s %s: %d %s, want %d", method, path, a.status, a.body, want)
	}
	if out != nil {
		a.decode(t, out)
	}
}

func TestAdminInterface(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	ctx := context.Background()

	var alice struct {
		AccountID     string `json:"account_id"`
		Handle        string `json:"handle"`
		PublicKey     string `json:"public_key"`
		EncryptionKey string `json:"encryption_key"`
		DecryptionKey string `json:"decryption_key"`
		TestKey       string `json:"test_key"`
		LiveKey       string `json:"live_key"`
		KYCStatus     string `json:"kyc_status"`
	}
	adminDo(t, srv, "POST", "/_fake/accounts", `{"handle":"@alice","generate_encryption_key":true}`, 201, &alice)
	if !strings.HasPrefix(alice.AccountID, "acct_") || !strings.HasPrefix(alice.TestKey, "hc_test_") || !strings.HasPrefix(alice.LiveKey, "hc_live_") ||
		alice.DecryptionKey == "" || alice.KYCStatus != "verified" || common.HexToAddress(alice.PublicKey).Hex() != alice.PublicKey {
		t.Fatalf("created %+v", alice)
	}
	dk, err := decrypt.ParsePrivateKeyHex(alice.DecryptionKey)
	if err != nil || dk.PublicKey().Hex() != alice.EncryptionKey {
		t.Fatalf("the decryption key does not match the encryption key: %v", err)
	}
	// An account with a key given by the client: no decryption key back.
	var bob map[string]any
	adminDo(t, srv, "POST", "/_fake/accounts", `{"handle":"@bob","type":"business","kyc_status":"pending","encryption_key":"`+alice.EncryptionKey+`"}`, 201, &bob)
	if _, ok := bob["decryption_key"]; ok || bob["type"] != "business" {
		t.Fatalf("bob %v", bob)
	}
	adminDo(t, srv, "PATCH", "/_fake/accounts/%40bob", `{"kyc_status":"enhanced"}`, 200, &bob)
	if bob["kyc_status"] != "enhanced" {
		t.Fatalf("patched %v", bob)
	}
	var accounts struct{ Accounts []fakeserver.AccountView }
	adminDo(t, srv, "GET", "/_fake/accounts", "", 200, &accounts)
	if len(accounts.Accounts) != 2 || accounts.Accounts[0].Handle != "@alice" {
		t.Fatalf("accounts %+v", accounts)
	}

	// Keys: issue, list, use, revoke.
	var k fakeserver.NewKey
	adminDo(t, srv, "POST", "/_fake/accounts/"+alice.AccountID+"/keys", `{"network":"live","name":"deploy"}`, 201, &k)
	if k.Network != confpay.NetworkLive || k.Name != "deploy" || !strings.HasPrefix(k.APIKey.Reveal(), "hc_live_") || len(k.APIKey.Reveal()) != 8+32 {
		t.Fatalf("key %+v", k)
	}
	adminDo(t, srv, "POST", "/_fake/fund", `{"account":"@alice","network":"live","asset":"USDG","amount":"40"}`, 200, nil)
	adminDo(t, srv, "POST", "/_fake/fund", `{"account":"`+alice.AccountID+`","amount":"5"}`, 200, nil) // test, USDG by default
	live := newClient(t, srv, k.APIKey.Reveal(), nil)
	tr := send(t, live, "@bob", "12.5")
	var keys struct{ Keys []fakeserver.KeyInfo }
	adminDo(t, srv, "GET", "/_fake/accounts/%40alice/keys", "", 200, &keys)
	if len(keys.Keys) != 3 {
		t.Fatalf("%d keys", len(keys.Keys))
	}

	a := rawCall(t, srv, "GET", "/_fake/accounts/%40alice/keys", "", "")
	if strings.Contains(string(a.body), k.APIKey.Reveal()) || strings.Contains(string(a.body), alice.TestKey) {
		t.Fatal("the key list shows a key")
	}
	adminDo(t, srv, "DELETE", "/_fake/keys/"+k.KeyID, "", 204, nil)
	_, err = live.Accounts.Me(ctx)
	wantAPIError(t, err, 401, confpay.CodeUnauthorized, "", "")
	adminDo(t, srv, "DELETE", "/_fake/keys/key_nope", "", 404, nil)

	// Books, clock, transfers, settle.
	var books struct {
		Network  string                 `json:"network"`
		Balances []fakeserver.BookEntry `json:"balances"`
	}
	adminDo(t, srv, "GET", "/_fake/books/%40alice?network=live", "", 200, &books)
	if books.Network != "live" || len(books.Balances) != 1 || books.Balances[0].Available.String() != "27.5" || books.Balances[0].Reserved.String() != "12.5" {
		t.Fatalf("books %+v", books)
	}
	var clock struct {
		Now     time.Time `json:"now"`
		Virtual bool      `json:"virtual"`
	}
	adminDo(t, srv, "GET", "/_fake/clock", "", 200, &clock)
	if !clock.Now.Equal(fakeserver.DefaultStart) || !clock.Virtual {
		t.Fatalf("clock %+v", clock)
	}
	var rec fakeserver.TransferRecord
	adminDo(t, srv, "GET", "/_fake/transfers/"+tr.TransferID, "", 200, &rec)
	if rec.Amount.String() != "12.5" || rec.Status != confpay.StatusPending || rec.Network != confpay.NetworkLive {
		t.Fatalf("record %+v", rec)
	}
	adminDo(t, srv, "POST", "/_fake/clock", `{"advance":"1500ms"}`, 200, &clock)
	if !clock.Now.Equal(fakeserver.DefaultStart.Add(1500 * time.Millisecond)) {
		t.Fatalf("clock %v", clock.Now)
	}
	adminDo(t, srv, "GET", "/_fake/transfers/"+tr.TransferID, "", 200, &rec)
	if rec.Status != confpay.StatusConfirmed {
		t.Fatalf("after advancing: %s", rec.Status)
	}
	adminDo(t, srv, "POST", "/_fake/clock", `{"set":"2026-03-01T12:00:00Z"}`, 200, &clock)
	if clock.Now.Format(time.RFC3339) != "2026-03-01T12:00:00Z" {
		t.Fatalf("clock %v", clock.Now)
	}
	tr2 := send(t, newClient(t, srv, alice.TestKey, nil), "@bob", "1")
	tr3 := send(t, newClient(t, srv, alice.TestKey, nil), "@bob", "1")
	adminDo(t, srv, "POST", "/_fake/transfers/"+tr2.TransferID+"/fail", "", 200, &rec)
	if rec.Status != confpay.StatusFailed {
		t.Fatalf("failed %+v", rec)
	}
	adminDo(t, srv, "POST", "/_fake/transfers/"+tr2.TransferID+"/fail", "", 409, nil)
	var settled struct{ Confirmed int }
	adminDo(t, srv, "POST", "/_fake/settle", "", 200, &settled)
	if settled.Confirmed != 1 {
		t.Fatalf("settled %d", settled.Confirmed)
	}
	var list struct{ Transfers []fakeserver.TransferRecord }
	adminDo(t, srv, "GET", "/_fake/transfers?account=%40bob&network=test", "", 200, &list)
	if len(list.Transfers) != 2 || list.Transfers[0].TransferID != tr3.TransferID || list.Transfers[0].Status != confpay.StatusConfirmed {
		t.Fatalf("bob's transfers %+v", list.Transfers)
	}

	// Domains.
	adminDo(t, srv, "POST", "/_fake/domains", `{"account":"@bob","domain":"pay.bob.example"}`, 201, nil)
	send(t, newClient(t, srv, alice.TestKey, nil), "pay.bob.example", "1")

	// Faults over HTTP.
	var fid struct {
		FaultID string `json:"fault_id"`
	}
	adminDo(t, srv, "POST", "/_fake/faults", `{"method":"GET","path":"/v1/accounts/me","times":1,"action":"error","status":503,"retry_after":2}`, 201, &fid)
	adminDo(t, srv, "POST", "/_fake/faults", `{"path":"/v1/transfers","action":"delay","delay":"3s","times":1}`, 201, nil)
	var faults struct {
		Faults []map[string]any `json:"faults"`
	}
	adminDo(t, srv, "GET", "/_fake/faults", "", 200, &faults)
	if len(faults.Faults) != 2 || faults.Faults[0]["fault_id"] != fid.FaultID || faults.Faults[1]["delay"] != "3s" {
		t.Fatalf("faults %v", faults)
	}
	a = rawCall(t, srv, "GET", "/v1/accounts/me", alice.TestKey, "")
	if a.status != 503 || a.header.Get("Retry-After") != "2" || a.err().Code != "service_unavailable" {
		t.Fatalf("%d %s", a.status, a.body)
	}
	adminDo(t, srv, "DELETE", "/_fake/faults", "", 204, nil)
	adminDo(t, srv, "GET", "/_fake/faults", "", 200, &faults)
	if len(faults.Faults) != 0 {
		t.Fatalf("faults after clearing %v", faults)
	}

	// 404s, 405s, and reset.
	adminDo(t, srv, "GET", "/_fake/books/%40nobody", "", 404, nil)
	adminDo(t, srv, "PUT", "/_fake/clock", "", 405, nil)
	adminDo(t, srv, "POST", "/_fake/reset", "", 204, nil)
	adminDo(t, srv, "GET", "/_fake/accounts", "", 200, &accounts)
	if len(accounts.Accounts) != 0 {
		t.Fatalf("after reset %d accounts", len(accounts.Accounts))
	}
	_, err = newClient(t, srv, alice.TestKey, nil).Accounts.Me(ctx)
	wantAPIError(t, err, 401, confpay.CodeUnauthorized, "", "")

}

// TestAgentsThroughCore checks the core's side of agents: agent handles
// as recipients, agent balances read with the owner's key, agent status
// and agent handles in admin paths.
func TestAgentsThroughCore(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	owner := newAccount(t, srv, "@owner")
	payer := newAccount(t, srv, "@payer")
	ctx := context.Background()
	oc := newClient(t, srv, owner.test(), nil)
	agent, err := oc.Agents.Create(ctx, &confpay.AgentCreateParams{Name: "bot", SpendPolicy: confpay.SpendPolicyParams{
		DailyLimitUSDG: confpay.Ptr(confpay.MustParseLimit("100")), PerTransactionLimitUSDG: confpay.Ptr(confpay.MustParseLimit("50"))}})
	if err != nil {
		t.Fatal(err)
	}
	// Pay the agent by handle (any case) and by address.
	srv.AddFunds(t, "@payer", "USDG", "30")
	pc := newClient(t, srv, payer.test(), nil)
	send(t, pc, "@OWNER/bot", "10")
	send(t, pc, agent.PublicKey, "5")
	srv.Advance(time.Second)
	if got := settled(t, srv, "@owner/bot", confpay.NetworkTest, "USDG"); got != "15" {
		t.Fatalf("agent holds %s", got)
	}

	// The admin interface takes the escaped agent handle.
	var v fakeserver.AccountView
	adminDo(t, srv, "PATCH", "/_fake/accounts/%40owner%2Fbot", `{"status":"paused"}`, 200, &v)
	if v.Status != confpay.AgentPaused || v.Handle != "@owner/bot" || v.OwnerID != owner.info.AccountID {
		t.Fatalf("agent view %+v", v)
	}
	var k fakeserver.NewKey
	adminDo(t, srv, "POST", "/_fake/accounts/%40owner%2Fbot/keys", `{"network":"test"}`, 201, &k)
	ac := newClient(t, srv, k.APIKey.Reveal(), nil)
	_, err = ac.Transfers.Create(ctx, &confpay.TransferCreateParams{To: "@payer", Amount: confpay.MustParseAmount("1")})
	wantAPIError(t, err, 403, confpay.CodeAgentNotActive, "", "")
	if err := srv.SetAgentStatus("@owner/bot", confpay.AgentActive); err != nil {
		t.Fatal(err)
	}
	send(t, ac, "@payer", "1")

	// The agent's balance ciphertext is under the owner's key, bound to
	// the agent's address; the owner's decryption key proves it.
	bs, err := ac.Accounts.Balances(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	acct := decrypt.Account{ChainID: confpay.ChainIDTest, Address: common.HexToAddress(agent.PublicKey), Key: owner.dk.PublicKey()}
	proof, amounts, err := decrypt.Prove(nil, owner.dk, acct, current(t, bs))
	if err != nil {
		t.Fatal(err)
	}
	if amounts[0].String() != "14000000" {
		t.Fatalf("agent balance opens to %s", amounts[0])
	}
	got, err := ac.Accounts.Balances(ctx, &confpay.BalancesParams{DecryptionProof: decrypt.EncodeBase64(proof)})
	if err != nil || got[0].Amount.String() != "14" {
		t.Fatalf("agent balances %v %v", got, err)
	}
	// The agent's payment note is sealed to the owner's key (once: the
	// agent has no key of its own) and the payer's.
	l, err := pc.Transfers.List(ctx, &confpay.TransferListParams{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if l.Transfers[0].From != "@owner/bot" || len(l.Transfers[0].NoteReaders) != 2 || l.Transfers[0].NoteReaders[0] != owner.info.EncryptionKey {
		t.Fatalf("agent transfer %+v", l.Transfers[0])
	}
	if n := openNote(t, owner.dk, l.Transfers[0]); n.Amount.String() != "1000000" {
		t.Fatal("the owner cannot read the agent's note")
	}
	// The owner can retrieve its agent's transfers.
	if _, err := oc.Transfers.Get(ctx, l.Transfers[0].TransferID); err != nil {
		t.Fatalf("owner reading the agent's transfer: %v", err)
	}
}

// TestAdminProveAndOpenNote: POST /_fake/prove builds, with a key sent to
// the sandbox, the proof the SDK builds, and the balances call with it
// answers the figure; POST /_fake/open-note opens a transfer's and a held
// payment's note. Neither echoes the key in an error.
func TestAdminProveAndOpenNote(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	srv := f.srv
	bob := newAccount(t, srv, "@bob")
	carol := newAccount(t, srv, "@carol")
	srv.AddFunds(t, "@alice", "USDG", "25.5")
	tr := send(t, f.alice, "@bob", "10", withMemo("lunch"))
	aliceKey := f.ownerKey.Hex()

	var proved struct {
		DecryptionProof string             `json:"decryption_proof"`
		Balances        []*confpay.Balance `json:"balances"`
	}
	a := rawCall(t, srv, "POST", "/_fake/prove", "", `{"account":"@alice","network":"test","decryption_key":"0x`+aliceKey+`"}`)
	if a.status != 200 || a.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("prove: %d %s (Cache-Control %q)", a.status, a.body, a.header.Get("Cache-Control"))
	}
	a.decode(t, &proved)
	if proved.DecryptionProof == "" || len(proved.Balances) != 1 || proved.Balances[0].Amount == nil || proved.Balances[0].Amount.String() != "15.5" {
		t.Fatalf("prove answered %s", a.body)
	}
	// The proof reads the figure through /v1, as production does: in the
	// body of the GET and in the query form.
	var list confpay.BalanceList
	a = rawCall(t, srv, "GET", "/v1/accounts/me/balances", f.owner.TestKey.Reveal(), `{"decryption_proof":"`+proved.DecryptionProof+`"}`)
	a.decode(t, &list)
	if a.status != 200 || len(list.Balances) != 1 || list.Balances[0].Amount == nil || list.Balances[0].Amount.String() != "15.5" {
		t.Fatalf("balances with the proof: %d %s", a.status, a.body)
	}
	a = rawCall(t, srv, "GET", "/v1/accounts/me/balances?decryption_proof="+proved.DecryptionProof, f.owner.TestKey.Reveal(), "")
	if a.status != 200 || !strings.Contains(string(a.body), `"amount":"15.5"`) {
		t.Fatalf("balances with the proof in the query: %d %s", a.status, a.body)
	}
	// The SDK's own path gives the same figure.
	bals, err := f.alice.Accounts.ReadBalances(f.ctx, f.ownerKey)
	if err != nil || len(bals) != 1 || bals[0].Amount.String() != "15.5" {
		t.Fatalf("ReadBalances = %v, %v", bals, err)
	}
	// Nothing to prove: no proof, the no-proof answer.
	a = rawCall(t, srv, "POST", "/_fake/prove", "", `{"account":"@carol","decryption_key":"`+carol.dk.Hex()+`"}`)
	if a.status != 200 || strings.Contains(string(a.body), "decryption_proof") {
		t.Fatalf("prove for an empty account: %d %s", a.status, a.body)
	}

	// Notes: the recipient opens the transfer's; the owner opens a held
	// payment's.
	var note struct{ Asset, Amount, Memo string }
	a = rawCall(t, srv, "POST", "/_fake/open-note", "", `{"transfer_id":"`+tr.TransferID+`","decryption_key":"`+bob.dk.Hex()+`"}`)
	a.decode(t, &note)
	if a.status != 200 || note.Asset != "USDG" || note.Amount != "10" || note.Memo != "lunch" || a.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("open-note transfer: %d %s", a.status, a.body)
	}
	_, agent := f.createAgent("bot", confpay.SpendPolicyParams{DailyLimitUSDG: limit("500"), PerTransactionLimitUSDG: limit("50"), HITLThresholdUSDG: limit("1")})
	h := hold(t, agent, "@bob", "2.25", withMemo("needs a yes"))
	a = rawCall(t, srv, "POST", "/_fake/open-note", "", `{"transaction_id":"`+h.TransactionID+`","decryption_key":"`+aliceKey+`"}`)
	a.decode(t, &note)
	if a.status != 200 || note.Amount != "2.25" || note.Memo != "needs a yes" {
		t.Fatalf("open-note held: %d %s", a.status, a.body)
	}

	// Refusals name the field and carry no key.
	before := srv.Snapshot()
	for _, c := range []struct {
		path, body string
		status     int
		param      string
	}{
		{"/_fake/prove", `{"account":"@alice","decryption_key":"` + bob.dk.Hex() + `"}`, 400, "decryption_key"},
		{"/_fake/prove", `{"account":"@alice","decryption_key":"` + aliceKey[:60] + `"}`, 400, "decryption_key"},
		{"/_fake/prove", `{"account":"@alice"}`, 400, "decryption_key"},
		{"/_fake/prove", `{"decryption_key":"` + aliceKey + `"}`, 400, "account"},
		{"/_fake/prove", `{"account":"@alice","network":"main","decryption_key":"` + aliceKey + `"}`, 400, "network"},
		{"/_fake/prove", `{"account":"@nobody","decryption_key":"` + aliceKey + `"}`, 404, ""},
		{"/_fake/open-note", `{"transfer_id":"` + tr.TransferID + `","decryption_key":"` + carol.dk.Hex() + `"}`, 400, "decryption_key"},
		{"/_fake/open-note", `{"transaction_id":"` + h.TransactionID + `","decryption_key":"` + bob.dk.Hex() + `"}`, 400, "decryption_key"},
		{"/_fake/open-note", `{"transfer_id":"` + h.TransactionID + `","decryption_key":"` + aliceKey + `"}`, 404, ""},
		{"/_fake/open-note", `{"transfer_id":"tr_x","transaction_id":"atx_x","decryption_key":"` + aliceKey + `"}`, 400, "transaction_id"},
		{"/_fake/open-note", `{"decryption_key":"` + aliceKey + `"}`, 400, "transfer_id"},
	} {
		a := rawCall(t, srv, "POST", c.path, "", c.body)
		e := a.err()
		if a.status != c.status || e.Param != c.param {
			t.Errorf("%s %s: %d %s, want %d on %q", c.path, c.body, a.status, a.body, c.status, c.param)
		}
		for _, k := range []string{aliceKey, bob.dk.Hex(), carol.dk.Hex(), aliceKey[:60], "15.5", "lunch"} {
			if strings.Contains(string(a.body), k) {
				t.Errorf("%s: the refusal carries a key or a figure: %s", c.path, a.body)
			}
		}
	}
	checkUnchanged(t, srv, before, "refused proofs and notes")
}
