package fakeserver_test

import (
	"bufio"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver"
	"github.com/confpay/confpay-go/fakeserver/internal/hooks"
	"github.com/confpay/confpay-go/webhookverify"
)

// routePath turns a route ("METHOD pattern") into its method and a path
// with every wildcard filled in.
func routePath(route string) (method, path string) {
	method, pattern, _ := strings.Cut(route, " ")
	r := strings.NewReplacer("{account}", "%40alice", "{account_id}", "acct_x", "{key_id}", "key_x",
		"{transfer_id}", "tr_x", "{transaction_id}", "atx_x", "{webhook_id}", "wh_x", "{event_id}", "evt_x")
	return method, r.Replace(pattern)
}

// adminState is what a refused /_fake request must leave as it was: the
// snapshot, the clock, the faults and the assets.
type adminState struct {
	snap   fakeserver.Snapshot
	now    time.Time
	faults int
	assets int
}

func stateOf(srv *fakeserver.Server) adminState {
	return adminState{srv.Snapshot(), srv.Now(), len(srv.Faults()), len(srv.Assets())}
}

func checkAdminUnchanged(t *testing.T, srv *fakeserver.Server, before adminState, what string) {
	t.Helper()
	checkUnchanged(t, srv, before.snap, what)
	if after := stateOf(srv); !after.now.Equal(before.now) || after.faults != before.faults || after.assets != before.assets {
		t.Fatalf("%s: clock, faults or assets changed: %v %d %d, before %v %d %d", what, after.now, after.faults, after.assets, before.now, before.faults, before.assets)
	}
}

// TestAdminRefusesDeliveries: every /_fake route answers 403 forbidden,
// nothing done, to a request carrying a webhook delivery's signature
// header or the delivery client's User-Agent, in process (Handler()) and
// over the network.
func TestAdminRefusesDeliveries(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	alice := newAccount(t, srv, "@alice")
	newAccount(t, srv, "@bob")
	srv.AddFunds(t, "@alice", "USDG", "100")
	send(t, newClient(t, srv, alice.test(), nil), "@bob", "1")
	before := stateOf(srv)

	marks := []struct {
		name    string
		headers []string
	}{
		{"signature", []string{webhookverify.SignatureHeader, "0123abcd"}},
		{"empty signature", []string{webhookverify.SignatureHeader, ""}},
		{"lower-case signature header", []string{"x-service-signature", "0123abcd"}},
		{"delivery User-Agent", []string{"User-Agent", hooks.UserAgent}},
		{"delivery User-Agent, other case and words around", []string{"User-Agent", "proxy/1 " + strings.ToUpper(hooks.UserAgent) + "/2"}},
	}
	routes := 0
	for _, route := range fakeserver.Routes(srv) {
		method, path := routePath(route)
		if !strings.HasPrefix(path, "/_fake") {
			continue
		}
		routes++
		for _, m := range marks {
			what := route + " with " + m.name
			for via, a := range map[string]answer{
				"Handler()": serve(srv.Handler(), method, path, "", `{}`, m.headers...),
				"network":   rawCall(t, srv, method, path, "", `{}`, m.headers...),
			} {
				e := a.err()
				if a.status != http.StatusForbidden || e.Code != "forbidden" || e.RequestID == "" || e.RequestID != a.header.Get("X-Request-Id") {
					t.Errorf("%s via %s: %d %s (request id %q), want 403 forbidden with the request id", what, via, a.status, e.Code, e.RequestID)
				}
			}
			checkAdminUnchanged(t, srv, before, what)
		}
	}
	if routes < 20 {
		t.Fatalf("only %d /_fake routes", routes)
	}
	// Without the marks the same server answers as before.
	if a := serve(srv.Handler(), "GET", "/_fake/accounts", "", ""); a.status != http.StatusOK {
		t.Errorf("GET /_fake/accounts without delivery marks: %d, want 200", a.status)
	}
	// /v1 is not the admin interface: a signature header there is no mark.
	if a := serve(srv.Handler(), "GET", "/v1/accounts/me", alice.test(), "", webhookverify.SignatureHeader, "x"); a.status != http.StatusOK {
		t.Errorf("GET /v1/accounts/me with a signature header: %d, want 200", a.status)
	}
}

// uncleanPaths are request targets that ServeMux would redirect to a clean
// /_fake or /v1 path.
var uncleanPaths = []string{
	"//_fake/reset",
	"/v1/../_fake/reset",
	"/_fake/./reset",
	"/_fake//reset",
	"/_fake/reset/.",
	"/_fake/accounts/../reset",
	"/_fake/%2e%2e/_fake/reset",
	"/_fake/%2E/reset",
	"/v1/%2e%2e/_fake/reset",
	"/_fake/%2Freset",
	"/v1//transfers",
	"/v1/./accounts/me",
}

// TestUncleanPathsRefused: a path that is not its own clean form is 400
// invalid_request (param path), never a redirect, nothing done, with or
// without the admin token set, in process and over the network (the
// bytes of the request line sent as written).
func TestUncleanPathsRefused(t *testing.T) {
	t.Parallel()
	for _, tokened := range []bool{false, true} {
		var opts []fakeserver.Option
		if tokened {
			opts = append(opts, fakeserver.WithAdminToken("adm-0123456789abcdef"))
		}
		srv := fakeserver.New(t, opts...)
		alice := newAccount(t, srv, "@alice")
		srv.AddFunds(t, "@alice", "USDG", "100")
		before := stateOf(srv)
		for _, p := range uncleanPaths {
			for _, method := range []string{"GET", "POST"} {
				what := method + " " + p
				a := serve(srv.Handler(), method, p, alice.test(), "")
				wantUnclean(t, what+" via Handler()", a)
				wantUnclean(t, what+" over the network", rawLine(t, srv.URL(), method+" "+p+" HTTP/1.1"))
				checkAdminUnchanged(t, srv, before, what)
			}
		}
	}
}

func wantUnclean(t *testing.T, what string, a answer) {
	t.Helper()
	e := a.err()
	if a.status != http.StatusBadRequest || e.Code != confpay.CodeInvalidRequest || e.Param != "path" || a.header.Get("Location") != "" {
		t.Errorf("%s: %d %s (param %q, Location %q), want 400 invalid_request (param path) and no redirect", what, a.status, e.Code, e.Param, a.header.Get("Location"))
	}
}

// rawLine sends one request with exactly the request line given (no
// client rewrites it) to base and reads the answer.
func rawLine(t *testing.T, base, line string) answer {
	t.Helper()
	host := strings.TrimPrefix(base, "http://")
	conn, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(line + "\r\nHost: " + host + "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	if _, err := bufio.NewReader(resp.Body).WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: []byte(b.String())}
}

// TestUnknownQueryEverywhere: every route, /v1 and /_fake, those that take
// no query at all included, answers 400 invalid_request naming an unknown
// query parameter, and naming a parameter it takes when given twice,
// nothing done.
func TestUnknownQueryEverywhere(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	alice := newAccount(t, srv, "@alice")
	newAccount(t, srv, "@bob")
	srv.AddFunds(t, "@alice", "USDG", "100")
	send(t, newClient(t, srv, alice.test(), nil), "@bob", "1")
	before := stateOf(srv)
	for _, route := range fakeserver.Routes(srv) {
		method, path := routePath(route)
		key := alice.test()
		if strings.HasPrefix(path, "/_fake") {
			key = ""
		}
		// Two unknown parameters: the first in name order is named.
		queries := map[string]string{"zz_unknown=1": "zz_unknown", "b_unknown=1&a_unknown=1": "a_unknown"}
		if takes := fakeserver.QueryParams(route); len(takes) > 0 {
			queries[takes[0]+"=a&zz=1"] = "zz"
			queries[takes[0]+"=a&"+takes[0]+"=b"] = takes[0]
		} else {
			queries["limit=10"] = "limit"
		}
		for q, param := range queries {
			what := route + "?" + q
			a := rawCall(t, srv, method, path+"?"+q, key, "")
			if e := a.err(); a.status != http.StatusBadRequest || e.Code != confpay.CodeInvalidRequest || e.Param != param {
				t.Errorf("%s: %d %s (param %q) %q, want 400 invalid_request (param %q)", what, a.status, e.Code, e.Param, e.Message, param)
			}
			checkAdminUnchanged(t, srv, before, what)
		}
	}
	// A parameter a route takes is still read.
	if a := rawCall(t, srv, "GET", "/v1/transfers?limit=1", alice.test(), ""); a.status != http.StatusOK {
		t.Errorf("GET /v1/transfers?limit=1: %d, want 200", a.status)
	}
}
