package fakeserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver"
	"github.com/confpay/confpay-go/webhookverify"
)

var whSecretRE = regexp.MustCompile(`^whsec_[A-Za-z0-9]{32}$`)

func TestWebhooksCreateListDelete(t *testing.T) {
	srv := fakeserver.New(t)
	alice := newAccountWith(t, srv, fakeserver.AccountParams{Handle: "@alice"})
	aliceTest := newClient(t, srv, alice.test(), nil, noRetry)
	aliceLive := newClient(t, srv, alice.live(), nil, noRetry)
	ctx := context.Background()

	w, err := aliceTest.Webhooks.Create(ctx, &confpay.WebhookCreateParams{
		URL:    "https://hooks.example.com/confpay",
		Events: []confpay.EventKind{webhookverify.KindTransferConfirmed, webhookverify.KindAgentPolicyUpdated},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(w.WebhookID, "wh_") || w.URL != "https://hooks.example.com/confpay" ||
		len(w.Events) != 2 || w.Events[0] != webhookverify.KindTransferConfirmed || !w.CreatedAt.Equal(srv.Now()) {
		t.Fatalf("created %+v", w)
	}
	if !whSecretRE.MatchString(w.Secret.Reveal()) {
		t.Fatal("the secret is not whsec_ and 32 base62 characters")
	}
	w2, err := aliceTest.Webhooks.Create(ctx, &confpay.WebhookCreateParams{URL: "http://127.0.0.1:9/h", Events: []confpay.EventKind{webhookverify.KindTransferFailed}})
	if err != nil {
		t.Fatal(err)
	}
	if w2.Secret == w.Secret {
		t.Fatal("two subscriptions share a secret")
	}

	// The list has no secrets, in creation order.
	r := rawCall(t, srv, "GET", "/v1/webhooks", alice.info.TestKey.Reveal(), "")
	status, body := r.status, r.body
	if status != 200 {
		t.Fatalf("list: %d %s", status, body)
	}
	if strings.Contains(string(body), "secret") || strings.Contains(string(body), w.Secret.Reveal()) {
		t.Fatalf("the list shows a secret: %s", body)
	}
	list, err := aliceTest.Webhooks.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].WebhookID != w.WebhookID || list[1].WebhookID != w2.WebhookID || list[0].Secret != "" {
		t.Fatalf("list %+v", list)
	}
	// The other network has its own (empty) list.
	if l, err := aliceLive.Webhooks.List(ctx); err != nil || len(l) != 0 {
		t.Fatalf("live list: %v, %v", l, err)
	}
	r = rawCall(t, srv, "GET", "/v1/webhooks", alice.info.LiveKey.Reveal(), "")
	status, body = r.status, r.body
	if status != 200 || strings.TrimSpace(string(body)) != `{"webhooks":[]}` {
		t.Fatalf("empty list: %d %s", status, body)
	}

	// Delete: 204 at once; deleting again is 204 too (a retried DELETE
	// must not look like a failure), but only for the account that
	// deleted it: anyone else, or the other network, hears 404.
	r = rawCall(t, srv, "DELETE", "/v1/webhooks/"+w.WebhookID, alice.info.TestKey.Reveal(), "")
	status, body = r.status, r.body
	if status != http.StatusNoContent || len(body) != 0 {
		t.Fatalf("delete: %d %q", status, body)
	}
	r = rawCall(t, srv, "DELETE", "/v1/webhooks/"+w.WebhookID, alice.info.TestKey.Reveal(), "")
	status, body = r.status, r.body
	if status != http.StatusNoContent || len(body) != 0 {
		t.Fatalf("delete again: %d %q, want 204", status, body)
	}
	if err := aliceTest.Webhooks.Delete(ctx, w.WebhookID); err != nil {
		t.Fatalf("delete again through the SDK: %v", err)
	}
	mallory := newAccountWith(t, srv, fakeserver.AccountParams{Handle: "@mallory"})
	malloryTest := newClient(t, srv, mallory.test(), nil, noRetry)
	wantAPIError(t, malloryTest.Webhooks.Delete(ctx, w.WebhookID), 404, confpay.CodeNotFound, "", "")
	wantAPIError(t, aliceLive.Webhooks.Delete(ctx, w.WebhookID), 404, confpay.CodeNotFound, "", "")
	wantAPIError(t, aliceTest.Webhooks.Delete(ctx, "wh_aaaaaaaaaaaaaaaaaaaa"), 404, confpay.CodeNotFound, "", "")
	if list, _ := aliceTest.Webhooks.List(ctx); len(list) != 1 || list[0].WebhookID != w2.WebhookID {
		t.Fatalf("list after delete %+v", list)
	}
	_, err = allDeliveries(ctx, aliceTest, w.WebhookID)
	wantAPIError(t, err, 404, confpay.CodeNotFound, "", "")
}

func TestWebhooksAreScopedToAccountAndNetwork(t *testing.T) {
	srv := fakeserver.New(t)
	alice := newAccountWith(t, srv, fakeserver.AccountParams{Handle: "@alice"})
	aliceTest := newClient(t, srv, alice.test(), nil, noRetry)
	aliceLive := newClient(t, srv, alice.live(), nil, noRetry)
	mallory := newAccountWith(t, srv, fakeserver.AccountParams{Handle: "@mallory"})
	malloryTest := newClient(t, srv, mallory.test(), nil, noRetry)
	ctx := context.Background()
	w, err := aliceTest.Webhooks.Create(ctx, &confpay.WebhookCreateParams{URL: "https://a.example.com/", Events: []confpay.EventKind{webhookverify.KindTransferConfirmed}})
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]*confpay.Client{"another account": malloryTest, "the other network": aliceLive} {
		_, err := allDeliveries(ctx, c, w.WebhookID)
		wantAPIError(t, err, 404, confpay.CodeNotFound, "", "")
		_, err = c.Webhooks.Replay(ctx, w.WebhookID, "evt_aaaaaaaaaaaaaaaaaaaa")
		wantAPIError(t, err, 404, confpay.CodeNotFound, "", "")
		wantAPIError(t, c.Webhooks.Delete(ctx, w.WebhookID), 404, confpay.CodeNotFound, "", "")
		if l, _ := c.Webhooks.List(ctx); len(l) != 0 {
			t.Fatalf("%s lists alice's subscription", name)
		}
	}
	// Still there for alice.
	if ds, err := allDeliveries(ctx, aliceTest, w.WebhookID); err != nil || len(ds) != 0 {
		t.Fatalf("alice's deliveries: %v, %v", ds, err)
	}
	_, err = aliceTest.Webhooks.Replay(ctx, w.WebhookID, "evt_aaaaaaaaaaaaaaaaaaaa")
	wantAPIError(t, err, 404, confpay.CodeNotFound, "", "")
}

func TestWebhooksCreateValidation(t *testing.T) {
	srv := fakeserver.New(t)
	alice := newAccountWith(t, srv, fakeserver.AccountParams{Handle: "@alice"})
	aliceTest := newClient(t, srv, alice.test(), nil, noRetry)
	ok := `["transfer.confirmed"]`
	before := srv.Snapshot()
	cases := []struct {
		name, body, param string
	}{
		{"no url", `{"events":` + ok + `}`, "url"},
		{"empty url", `{"url":"","events":` + ok + `}`, "url"},
		{"url not a string", `{"url":5,"events":` + ok + `}`, "url"},
		{"http to a public host", `{"url":"http://example.com/h","events":` + ok + `}`, "url"},
		{"http to 0.0.0.0", `{"url":"http://0.0.0.0:80/h","events":` + ok + `}`, "url"},
		{"http to 128.0.0.1", `{"url":"http://128.0.0.1/h","events":` + ok + `}`, "url"},
		{"http to ::2", `{"url":"http://[::2]/h","events":` + ok + `}`, "url"},
		{"http to a localhost subdomain", `{"url":"http://localhost.example.com/h","events":` + ok + `}`, "url"},
		{"ftp", `{"url":"ftp://example.com/h","events":` + ok + `}`, "url"},
		{"relative", `{"url":"/hooks","events":` + ok + `}`, "url"},
		{"no host", `{"url":"https:///hooks","events":` + ok + `}`, "url"},
		{"opaque", `{"url":"https:example.com","events":` + ok + `}`, "url"},
		{"credentials", `{"url":"https://user:pw@example.com/h","events":` + ok + `}`, "url"},
		{"spaces", `{"url":"https://exa mple.com/","events":` + ok + `}`, "url"},
		{"too long", `{"url":"https://example.com/` + strings.Repeat("a", 2048) + `","events":` + ok + `}`, "url"},
		{"no events", `{"url":"https://example.com/h"}`, "events"},
		{"null events", `{"url":"https://example.com/h","events":null}`, "events"},
		{"empty events", `{"url":"https://example.com/h","events":[]}`, "events"},
		{"unknown kind", `{"url":"https://example.com/h","events":["transfer.created"]}`, "events"},
		{"kind with other case", `{"url":"https://example.com/h","events":["Transfer.Confirmed"]}`, "events"},
		{"duplicate kind", `{"url":"https://example.com/h","events":["transfer.confirmed","transfer.failed","transfer.confirmed"]}`, "events"},
		{"kind not a string", `{"url":"https://example.com/h","events":[1]}`, "events"},
		{"unknown field", `{"url":"https://example.com/h","events":` + ok + `,"secret":"mine"}`, "secret"},
		{"not an object", `[]`, "body"},
		{"not JSON", `{"url":`, "body"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := rawCall(t, srv, "POST", "/v1/webhooks", alice.info.TestKey.Reveal(), tc.body)
			status, body := r.status, r.body
			var e confpay.ErrorBody
			if err := json.Unmarshal(body, &e); err != nil {
				t.Fatalf("%d %s", status, body)
			}
			if status != 400 || e.Code != confpay.CodeInvalidRequest || e.Param != tc.param || e.Message == "" {
				t.Fatalf("got %d %s param %q; want 400 invalid_request param %q", status, e.Code, e.Param, tc.param)
			}
			checkUnchanged(t, srv, before, tc.name)
		})
	}
	if l, _ := aliceTest.Webhooks.List(context.Background()); len(l) != 0 {
		t.Fatalf("invalid requests created %d subscriptions", len(l))
	}

	good := []string{
		"https://example.com",
		"https://hooks.example.com:8443/a/b?c=d",
		"HTTPS://EXAMPLE.COM/h",
		"http://localhost/h",
		"http://LocalHost:8080/h",
		"http://127.0.0.1:9/h",
		"http://127.255.0.9/h",
		"http://[::1]:9/h",
	}
	for _, u := range good {
		_, err := aliceTest.Webhooks.Create(context.Background(), &confpay.WebhookCreateParams{URL: u, Events: confpay.EventKinds()})
		if err != nil {
			t.Errorf("%s: %v", u, err)
		}
	}
}

func TestWebhooksAtMost16PerAccountAndNetwork(t *testing.T) {
	srv := fakeserver.New(t)
	alice := newAccountWith(t, srv, fakeserver.AccountParams{Handle: "@alice"})
	aliceTest := newClient(t, srv, alice.test(), nil, noRetry)
	aliceLive := newClient(t, srv, alice.live(), nil, noRetry)
	bob := newAccountWith(t, srv, fakeserver.AccountParams{Handle: "@bob"})
	bobTest := newClient(t, srv, bob.test(), nil, noRetry)
	ctx := context.Background()
	p := &confpay.WebhookCreateParams{URL: "https://example.com/h", Events: []confpay.EventKind{webhookverify.KindTransferConfirmed}}
	var first *confpay.Webhook
	for i := range 16 {
		w, err := aliceTest.Webhooks.Create(ctx, p)
		if err != nil {
			t.Fatalf("subscription %d: %v", i+1, err)
		}
		if i == 0 {
			first = w
		}
	}
	_, err := aliceTest.Webhooks.Create(ctx, p)
	wantAPIError(t, err, 400, confpay.CodeInvalidRequest, "", "")
	// Other networks and other accounts have their own allowance.
	if _, err := aliceLive.Webhooks.Create(ctx, p); err != nil {
		t.Fatalf("live: %v", err)
	}
	if _, err := bobTest.Webhooks.Create(ctx, p); err != nil {
		t.Fatalf("bob: %v", err)
	}
	// Deleting one makes room.
	if err := aliceTest.Webhooks.Delete(ctx, first.WebhookID); err != nil {
		t.Fatal(err)
	}
	if _, err := aliceTest.Webhooks.Create(ctx, p); err != nil {
		t.Fatalf("after a delete: %v", err)
	}
}

func TestWebhooksNeedAKey(t *testing.T) {
	srv := fakeserver.New(t)
	for _, path := range []string{"/v1/webhooks", "/v1/webhooks/wh_x/deliveries"} {
		resp, err := http.Get(srv.URL() + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 401 {
			t.Fatalf("%s without a key: %d", path, resp.StatusCode)
		}
	}
}
