package fakeserver

import (
	"encoding/json"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/decrypt"
	"github.com/confpay/confpay-go/fakeserver/internal/ledger"
	"github.com/confpay/confpay-go/fakeserver/internal/names"
)

func FuzzParseCreateTransfer(f *testing.F) {
	for _, s := range []string{
		`{"to":"@bob","amount":"1"}`,
		`{"to":"@bob","amount":"0.000001","asset":"USDG","confidential":false,"memo":"hi"}`,
		`{"to":"0x00000000000000000000000000000000000000aa","amount":"1.5","asset":"ETH"}`,
		`{"to":"api.market","amount":"12"}`,
		`{"to":"@bob","amount":"1e3"}`,
		`{"to":"@bob","amount":1}`,
		`{"to":"@bob","amount":"1","x":1}`,
		`{"to":"@bob"`, ``, `null`, `[]`, `{"to":"@bob","amount":"1"} {}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		p, apiErr := parseCreateTransfer(body, newAssetBook(confpay.MustParseLimit("3000"), nil))
		if apiErr != nil {
			if apiErr.status != 400 || apiErr.body.Param == "" {
				t.Fatalf("refusal %d without param: %v", apiErr.status, apiErr)
			}
			return
		}
		dec, ok := confpay.AssetDecimals(p.asset)
		if !ok || p.units.Sign() <= 0 || p.units.Cmp(ledger.MaxUnits) >= 0 || len(p.memo) > decrypt.MaxMemoBytes {
			t.Fatalf("accepted a bad payment: asset %q", p.asset)
		}
		_ = dec
		if _, _, _, e := parseRecipient(p.toText); e != nil {
			t.Fatal("accepted a bad recipient")
		}
	})
}

func FuzzParseListQuery(f *testing.F) {
	for _, s := range []string{"", "limit=1", "limit=100&offset=5", "limit=0", "limit=101", "status=pending",
		"from=2026-01-05T09:00:00Z&to=2026-01-06T09:00:00.5Z", "offset=-1", "limit=1&limit=2", "x=1", "limit=%zz"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		lq, apiErr := parseListQuery(q)
		if apiErr != nil {
			if apiErr.body.Param == "" {
				t.Fatal("refusal without param")
			}
			return
		}
		if lq.limit < 1 || lq.limit > 100 || lq.offset < 0 {
			t.Fatalf("accepted limit %d offset %d", lq.limit, lq.offset)
		}
	})
}

func FuzzParseRecipient(f *testing.F) {
	for _, s := range []string{"@bob", "@Bob_2/my-bot", "0x00000000000000000000000000000000000000aa",
		"0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359", "0xfb6916095ca1df60bb79ce92ce3ea74c37c5d359", "api.market",
		"@ab", "0x12", "", "bob", "*.example.com", "@bob/", strings.Repeat("a.", 200) + "com"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		kind, key, addr, apiErr := parseRecipient(text)
		if apiErr != nil {
			if apiErr.body.Param != "to" {
				t.Fatal("refusal without param to")
			}
			return
		}
		if key != strings.ToLower(key) {
			t.Fatal("lookup key not lower case")
		}
		switch kind {
		case toHandle:
			if !strings.HasPrefix(key, "@") {
				t.Fatal("handle without @")
			}
		case toAddress:
			if key != strings.ToLower(addr.Hex()) {
				t.Fatal("address key mismatch")
			}
		case toDomain:
			if !names.IsDomain(text) {
				t.Fatal("bad domain accepted")
			}
		default:
			t.Fatalf("kind %d", kind)
		}
	})
}

// fuzzServer is a server with @alice (funded, key) and @bob.
func fuzzServer(f *testing.F) (*Server, string) {
	s := NewUnstartedServer()
	f.Cleanup(s.Close)
	alice, err := s.CreateAccount(AccountParams{Handle: "@alice", GenerateEncryptionKey: true})
	if err != nil {
		f.Fatal(err)
	}
	if _, err := s.CreateAccount(AccountParams{Handle: "@bob", GenerateEncryptionKey: true}); err != nil {
		f.Fatal(err)
	}
	if err := s.Fund("@alice", confpay.NetworkTest, "USDG", "1000000"); err != nil {
		f.Fatal(err)
	}
	return s, alice.TestKey.Reveal()
}

// checkAnswer fails on a 5xx, a missing request id or a non-JSON error.
func checkAnswer(t *testing.T, w *httptest.ResponseRecorder) {
	t.Helper()
	if w.Code >= 500 {
		t.Fatalf("status %d: %s", w.Code, w.Body.Bytes())
	}
	if w.Header().Get("X-Request-Id") == "" {
		t.Fatal("no X-Request-Id")
	}
	if w.Code >= 400 {
		var e confpay.ErrorBody
		if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || e.Code == "" || e.RequestID == "" {
			t.Fatalf("error body %q", w.Body.Bytes())
		}
	}
}

func FuzzCreateTransferHandler(f *testing.F) {
	s, key := fuzzServer(f)
	for _, b := range []string{`{"to":"@bob","amount":"1"}`, `{"to":"@alice","amount":"1"}`, `{"to":"@bob","amount":"99999999"}`,
		`{"to":"0x00000000000000000000000000000000000000aa","amount":"1","confidential":false}`, `{"to":"@nobody","amount":"1"}`, `{`} {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req := httptest.NewRequest("POST", "/v1/transfers", strings.NewReader(string(body)))
		req.Header.Set("Authorization", "Bearer "+key)
		w := httptest.NewRecorder()
		s.Handler().ServeHTTP(w, req)
		checkAnswer(t, w)
	})
}

func FuzzBalancesProof(f *testing.F) {
	s, key := fuzzServer(f)
	for _, p := range []string{"", "AAAA", "AQ", "!!", strings.Repeat("A", 200), "AQEABFVTREcAAAAAAAAAAQ"} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, proof string) {
		body, _ := json.Marshal(map[string]string{"decryption_proof": proof})
		req := httptest.NewRequest("GET", "/v1/accounts/me/balances", strings.NewReader(string(body)))
		req.Header.Set("Authorization", "Bearer "+key)
		w := httptest.NewRecorder()
		s.Handler().ServeHTTP(w, req)
		checkAnswer(t, w)
		if proof != "" && w.Code == 200 {
			t.Fatal("a made-up proof was accepted")
		}
	})
}

func FuzzAdminBodies(f *testing.F) {
	s, _ := fuzzServer(f)
	paths := []string{"/_fake/faults", "/_fake/fund", "/_fake/accounts", "/_fake/domains"}
	for i, b := range []string{`{"action":"error","times":1,"path":"/v1/nothing"}`, `{"account":"@bob","amount":"1"}`,
		`{"handle":"@carol"}`, `{"account":"@bob","domain":"bob.example"}`, `{"action":"delay"}`, `{"account":"@bob","amount":"1e1"}`} {
		f.Add(uint8(i), []byte(b))
	}
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		req := httptest.NewRequest("POST", paths[int(which)%len(paths)], strings.NewReader(string(body)))
		w := httptest.NewRecorder()
		s.Handler().ServeHTTP(w, req)
		checkAnswer(t, w)
	})
}
