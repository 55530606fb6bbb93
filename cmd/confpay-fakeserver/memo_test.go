package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunRefusesAnAlteredMemo: through the binary, a memo that JSON
// decoding would alter (a lone surrogate escape, invalid UTF-8) is 400
// naming memo, and nothing is paid; the same payment with the memo intact
// goes through.
func TestRunRefusesAnAlteredMemo(t *testing.T) {
	seed := filepath.Join(t.TempDir(), "seed.json")
	if err := os.WriteFile(seed, []byte(`{"accounts":[
		{"handle":"@alice","generate_encryption_key":true,"balances":{"test":{"USDG":"100"}}},
		{"handle":"@bob","generate_encryption_key":true}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var start struct {
		URL      string `json:"url"`
		Accounts []struct {
			TestKey string `json:"test_key"`
		} `json:"accounts"`
	}
	if line := startRunLine(t, "-addr", "127.0.0.1:0", "-seed", seed, "-virtual-clock"); json.Unmarshal(line, &start) != nil || len(start.Accounts) != 2 {
		t.Fatalf("start line %s", line)
	}
	pay := func(memo string) (int, string) {
		t.Helper()
		req, err := http.NewRequest("POST", start.URL+"/v1/transfers", strings.NewReader(`{"to":"@bob","amount":"1","memo":"`+memo+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+start.Accounts[0].TestKey)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, memo := range []string{`rent \ud800`, `\udc00`, "rent \xff", "\xed\xa0\x80"} {
		if status, body := pay(memo); status != 400 || !strings.Contains(body, `"param":"memo"`) || !strings.Contains(body, `"code":"invalid_request"`) {
			t.Errorf("memo %q: %d %s", memo, status, body)
		}
	}
	if status, body := pay(`rent \ud83c\udfe0 flat 3`); status != 201 {
		t.Errorf("a valid memo with an escaped pair: %d %s", status, body)
	}
	resp, err := http.Get(start.URL + "/_fake/transfers?account=%40alice&network=test")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if n := strings.Count(string(b), `"transfer_id"`); n != 1 || !strings.Contains(string(b), `"memo":"rent 🏠 flat 3"`) {
		t.Errorf("%d transfers made, want the one with the valid memo: %s", n, b)
	}
}
