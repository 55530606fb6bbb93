package fakeserver_test

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/decrypt"
	"github.com/confpay/confpay-go/fakeserver"
)

// curlCall is one curl line of docs/http.md, as a request.
type curlCall struct {
	line                int
	method, path, body  string
	headers             []string // name, value pairs
	wantStatus          int      // from the "# 201 {...}" comment; 0: any 2xx
	wantKeys            []string // the top-level members the comment shows
	discard, fromJQ     bool
	rawText, rawComment string
}

var (
	curlHeader  = regexp.MustCompile(`-H "([^"]+)"`)
	curlMethod  = regexp.MustCompile(`-X (\w+)`)
	curlBody    = regexp.MustCompile(`-d '([^']*)'`)
	curlURL     = regexp.MustCompile(`"?\$URL(/[^\s"]*)"?`)
	commentHead = regexp.MustCompile(`#\s*(\d{3})\b(.*)$`)
)

// parseHTTPDoc reads the curl lines of the doc's shell blocks, with the
// status and members their comments promise.
func parseHTTPDoc(t *testing.T, text string) []*curlCall {
	t.Helper()
	var calls []*curlCall
	lines := strings.Split(text, "\n")
	inShell := false
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		switch {
		case strings.HasPrefix(l, "```sh"):
			inShell = true
			continue
		case strings.HasPrefix(l, "```"):
			inShell = false
			continue
		}
		if !inShell {
			continue
		}
		if strings.HasPrefix(strings.TrimSpace(l), "#") && len(calls) > 0 && calls[len(calls)-1].rawComment == "" {
			calls[len(calls)-1].rawComment = l
			continue
		}
		if !strings.Contains(l, "curl ") || !strings.Contains(l, "$URL") {
			continue
		}
		start := i + 1
		for strings.HasSuffix(l, "\\") && i+1 < len(lines) {
			i++
			l = strings.TrimSuffix(l, "\\") + " " + strings.TrimSpace(lines[i])
		}
		c := &curlCall{line: start, rawText: l}
		cmd, comment, _ := strings.Cut(l, " # ")
		if comment != "" {
			c.rawComment = "# " + comment
		}
		if m := curlURL.FindStringSubmatch(cmd); m != nil {
			c.path = m[1]
		}
		if m := curlBody.FindStringSubmatch(cmd); m != nil {
			c.body = m[1]
		}
		c.method = "GET"
		if c.body != "" {
			c.method = "POST"
		}
		if m := curlMethod.FindStringSubmatch(cmd); m != nil {
			c.method = m[1]
		}
		for _, m := range curlHeader.FindAllStringSubmatch(cmd, -1) {
			name, value, _ := strings.Cut(m[1], ": ")
			c.headers = append(c.headers, name, value)
		}
		c.discard = strings.Contains(cmd, ">/dev/null")
		c.fromJQ = strings.Contains(cmd, "jq ")
		calls = append(calls, c)
	}
	for _, c := range calls {
		if m := commentHead.FindStringSubmatch(c.rawComment); m != nil {
			c.wantStatus = atoi(m[1])
			c.wantKeys = shownKeys(strings.TrimSpace(m[2]))
		}
	}
	return calls
}

// shownKeys returns the top-level member names of a JSON-like object as
// the doc writes it (with … for elided values): each string that follows
// "{" or "," at depth 1.
func shownKeys(text string) []string {
	if !strings.HasPrefix(text, "{") {
		return nil
	}
	var keys []string
	depth, prev := 0, rune(0)
	for i := 0; i < len(text); i++ {
		switch ch := rune(text[i]); ch {
		case '{', '[':
			depth++
			prev = ch
		case '}', ']':
			depth--
			prev = ch
			if depth == 0 {
				return keys
			}
		case ',', ':':
			prev = ch
		case '"':
			end := strings.IndexByte(text[i+1:], '"')
			if end < 0 {
				return keys
			}
			if depth == 1 && (prev == '{' || prev == ',') {
				keys = append(keys, text[i+1:i+1+end])
			}
			i += end + 1
			prev = '"'
		}
	}
	return keys
}

func atoi(s string) int {
	n := 0
	for _, r := range s {
		n = n*10 + int(r-'0')
	}
	return n
}

// TestHTTPDocRuns runs every curl line of docs/http.md, in order, against
// a fakeserver, with the placeholders (tr_…, acct_…, atx_…, wh_…, evt_…,
// the proof) replaced by real values, and checks each answer's status and
// the members its comment shows.
func TestHTTPDocRuns(t *testing.T) {
	text, err := os.ReadFile("../docs/http.md")
	if err != nil {
		t.Fatal(err)
	}
	calls := parseHTTPDoc(t, string(text))
	if len(calls) < 20 {
		t.Fatalf("found %d curl lines in docs/http.md; the parser lost some", len(calls))
	}
	srv := fakeserver.New(t)
	var alice struct {
		TestKey       string `json:"test_key"`
		LiveKey       string `json:"live_key"`
		DecryptionKey string `json:"decryption_key"`
		PublicKey     string `json:"public_key"`
	}
	ids := map[string]string{}
	// Placeholders filled on first use, from the state the doc's own
	// calls made.
	fill := map[string]func() string{
		"AQE…": func() string {
			c := srv.Client(confpay.Secret(alice.TestKey), confpay.WithMaxRetries(0))
			bs, err := c.Accounts.Balances(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			dk, err := decrypt.ParsePrivateKeyHex(alice.DecryptionKey)
			if err != nil {
				t.Fatal(err)
			}
			acct := decrypt.Account{ChainID: confpay.ChainIDTest, Address: common.HexToAddress(alice.PublicKey), Key: dk.PublicKey()}
			proof, _, err := decrypt.Prove(nil, dk, acct, current(t, bs))
			if err != nil {
				t.Fatal(err)
			}
			return decrypt.EncodeBase64(proof)
		},
		"atx_…": func() string {
			k, err := srv.IssueKey(ids["acct_…"], confpay.NetworkTest, "agent")
			if err != nil {
				t.Fatal(err)
			}
			srv.AddFunds(t, ids["acct_…"], "USDG", "100")
			// The doc's PATCH lifted the threshold; a held payment needs one.
			rawCall(t, srv, "PATCH", "/v1/agents/"+ids["acct_…"]+"/spend-policy", alice.TestKey, `{"hitl_threshold_usdg":20}`)
			a := rawCall(t, srv, "POST", "/v1/transfers", k.APIKey.Reveal(), `{"to":"@bob","amount":"30"}`)
			var h struct {
				TransactionID string `json:"transaction_id"`
			}
			a.decode(t, &h)
			if a.status != 202 {
				t.Fatalf("holding a payment for the doc: %d %s", a.status, a.body)
			}
			return h.TransactionID
		},
		"evt_…": func() string {
			srv.Advance(time.Second) // transfers confirm: transfer.confirmed to the subscription
			a := rawCall(t, srv, "GET", "/v1/webhooks/"+ids["wh_…"]+"/deliveries", alice.TestKey, "")
			var l struct {
				Deliveries []struct {
					EventID string `json:"event_id"`
				} `json:"deliveries"`
			}
			a.decode(t, &l)
			if len(l.Deliveries) == 0 {
				rawCall(t, srv, "POST", "/v1/transfers", alice.TestKey, `{"to":"@bob","amount":"1"}`)
				srv.Advance(time.Second)
				rawCall(t, srv, "GET", "/v1/webhooks/"+ids["wh_…"]+"/deliveries", alice.TestKey, "").decode(t, &l)
			}
			if len(l.Deliveries) == 0 {
				t.Fatal("no delivery to take an event id from")
			}
			return l.Deliveries[0].EventID
		},
	}
	placeholder := regexp.MustCompile(`(tr|acct|atx|wh|evt)_…|AQE…`)
	for _, c := range calls {
		subst := func(s string) string {
			return placeholder.ReplaceAllStringFunc(s, func(p string) string {
				if p == "atx_…" { // approve and reject each need their own
					return fill[p]()
				}
				if v, ok := ids[p]; ok {
					return v
				}
				f, ok := fill[p]
				if !ok {
					t.Fatalf("docs/http.md:%d: %s is used before an answer gave it", c.line, p)
				}
				ids[p] = f()
				return ids[p]
			})
		}
		path, body := subst(c.path), subst(c.body)
		var headers []string
		key := ""
		for i := 0; i+1 < len(c.headers); i += 2 {
			if c.headers[i] == "$AUTH" || c.headers[i] == "Authorization" {
				key = alice.TestKey
				continue
			}
			if c.headers[i] == "$LIVE_AUTH" {
				key = alice.LiveKey
				continue
			}
			headers = append(headers, c.headers[i], c.headers[i+1])
		}
		a := rawCall(t, srv, c.method, path, key, body, headers...)
		switch {
		case c.wantStatus != 0 && a.status != c.wantStatus:
			t.Errorf("docs/http.md:%d: %s %s answered %d, the doc says %d: %s", c.line, c.method, path, a.status, c.wantStatus, a.body)
			continue
		case c.wantStatus == 0 && (a.status < 200 || a.status > 299):
			t.Errorf("docs/http.md:%d: %s %s answered %d: %s", c.line, c.method, path, a.status, a.body)
			continue
		}
		var got map[string]json.RawMessage
		if len(a.body) > 0 {
			a.decode(t, &got)
		}
		for _, k := range c.wantKeys {
			if _, ok := got[k]; !ok {
				t.Errorf("docs/http.md:%d: the answer lacks %q, which the doc shows: %s", c.line, k, a.body)
			}
		}
		if c.fromJQ {
			a.decode(t, &alice)
		}
		if c.method == "POST" && path == "/v1/transfers" {
			srv.Advance(time.Second) // a block later, as a reader running the lines one by one sees it
		}
		// Remember the ids an answer gives, for the lines that follow.
		for field, p := range map[string]string{"transfer_id": "tr_…", "account_id": "acct_…", "webhook_id": "wh_…"} {
			if raw, ok := got[field]; ok && strings.Contains(c.path, "/v1/") && c.method != "GET" {
				var id string
				_ = json.Unmarshal(raw, &id)
				if _, seen := ids[p]; !seen && id != "" {
					ids[p] = id
				}
			}
		}
	}
}
