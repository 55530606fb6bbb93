package fakeserver_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver"
)

// FuzzAgentsPolicyPatch sends arbitrary PATCH bodies to a spend policy
// through the server's handler: the answer is 200 with the whole policy
// (which GET then returns) or a 400 naming a field, and a refused body
// changes nothing.
func FuzzAgentsPolicyPatch(f *testing.F) {
	for _, s := range []string{
		`{"daily_limit_usdg": 300}`,
		`{"per_transaction_limit_usdg": 501}`,
		`{"allowed_recipients": null, "hitl_threshold_usdg": null}`,
		`{"allowed_recipients": ["*.shop.io", "@bob", "0x52908400098527886E0F7030069857D2E4169EE7"]}`,
		`{"active_hours": "23:00-01:00", "assets": ["ETH", "USDG"]}`,
		`{"daily_limit_usdg": 1e3}`, `{"assets": []}`, `{}`, ``, `[]`, `null`, `{"x": 1}`,
		`{"daily_limit_usdg": 10, "per_transaction_limit_usdg": 11}`,
	} {
		f.Add([]byte(s))
	}
	srv := fakeserver.NewUnstartedServer()
	defer srv.Close()
	owner, err := srv.CreateAccount(fakeserver.AccountParams{Handle: "@owner"})
	if err != nil {
		f.Fatal(err)
	}
	h := srv.Handler()
	do := func(method, path string, body []byte) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, path, bytes.NewReader(body))
		r.Header.Set("Authorization", "Bearer "+owner.TestKey.Reveal())
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	w := do("POST", "/v1/accounts/me/agents", []byte(`{"name": "bot", "spend_policy": {"daily_limit_usdg": 500, "per_transaction_limit_usdg": 50}}`))
	var agent confpay.Agent
	if w.Code != http.StatusCreated || json.Unmarshal(w.Body.Bytes(), &agent) != nil {
		f.Fatalf("create agent: %d %s", w.Code, w.Body)
	}
	path := "/v1/agents/" + agent.AccountID + "/spend-policy"

	f.Fuzz(func(t *testing.T, body []byte) {
		before := do("GET", path, nil).Body.String()
		w := do("PATCH", path, body)
		after := do("GET", path, nil).Body.String()
		switch w.Code {
		case http.StatusOK:
			if w.Body.String() != after {
				t.Fatalf("PATCH answered %s, GET says %s", w.Body, after)
			}
			var p confpay.SpendPolicy
			if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil || p.PerTransactionLimitUSDG.Cmp(p.DailyLimitUSDG) > 0 ||
				p.DailyLimitUSDG.IsZero() || len(p.Assets) == 0 {
				t.Fatalf("PATCH accepted an invalid result: %s (%v)", w.Body, err)
			}
		case http.StatusBadRequest:
			var e confpay.ErrorBody
			if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || e.Param == "" ||
				(e.Code != confpay.CodeInvalidPolicy && e.Code != confpay.CodeInvalidRequest) {
				t.Fatalf("400 without code or param: %s", w.Body)
			}
			if after != before {
				t.Fatalf("a refused PATCH changed the policy: %s -> %s", before, after)
			}
		default:
			t.Fatalf("PATCH answered %d %s", w.Code, w.Body)
		}
	})
}
