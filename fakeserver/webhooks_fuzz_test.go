package fakeserver

import (
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"testing"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/webhookverify"
)

// FuzzParseWebhookCreate feeds arbitrary bodies to the POST /v1/webhooks
// parser: it must never panic, must refuse with 400 invalid_request naming
// a field, and whatever it accepts must meet every rule.
func FuzzParseWebhookCreate(f *testing.F) {
	for _, seed := range []string{
		`{"url":"https://example.com/h","events":["transfer.confirmed"]}`,
		`{"url":"http://127.0.0.1:8080/h","events":["transfer.initiated","agent.policy.updated"]}`,
		`{"url":"http://[::1]/","events":["agent.transaction.approved"]}`,
		`{"url":"http://localhost/","events":["transfer.failed"]}`,
		`{"url":"http://example.com/","events":["transfer.failed"]}`,
		`{"url":"https://u:p@example.com/","events":["transfer.failed"]}`,
		`{"url":"https://example.com/","events":["transfer.failed","transfer.failed"]}`,
		`{"url":"https://example.com/","events":[]}`,
		`{"url":"ftp://x/","events":["transfer.failed"]}`,
		`{"url":"https:opaque","events":["transfer.failed"]}`,
		`{"url":"http://[::ffff:127.0.0.1]/","events":["transfer.failed"]}`,
		`{"url":"http://127.0.0.1%2f@evil.example/","events":["transfer.failed"]}`,
		`{"url":1}`,
		`{"events":"transfer.failed"}`,
		`{"url":"https://example.com/","events":["transfer.failed"],"x":1}`,
		`{"":[]}`, `[]`, `null`, ``, `{`, `{"url":"https://example.com/"}{}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, apiErr := parseWebhookCreate(body)
		if apiErr != nil {
			if apiErr.status != 400 || apiErr.body.Code != confpay.CodeInvalidRequest || apiErr.body.Param == "" || apiErr.body.Message == "" {
				t.Fatalf("refusal %d %s param %q", apiErr.status, apiErr.body.Code, apiErr.body.Param)
			}
			return
		}
		checkURLOnce(t, req.url)
		if len(req.events) == 0 {
			t.Fatal("accepted an empty event list")
		}
		for i, e := range req.events {
			if !slices.Contains(webhookverify.Kinds(), e) || slices.Contains(req.events[:i], e) {
				t.Fatalf("accepted event list %q", req.events)
			}
		}
	})
}

// FuzzCheckWebhookURL checks the URL rule alone on arbitrary strings.
func FuzzCheckWebhookURL(f *testing.F) {
	for _, seed := range []string{
		"https://example.com", "http://127.0.0.1/", "http://127.1/", "http://0x7f.0.0.1/",
		"http://[::1]:80/", "http://[::1%25lo]/", "http://localhost./", "http://LOCALHOST/",
		"http://localhost@example.com/", "https://", "//example.com/", "https://exa\x00mple.com/",
		"http://[fe80::1]/", "http://2130706433/",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if apiErr := checkWebhookURL(raw); apiErr != nil {
			if apiErr.body.Param != "url" {
				t.Fatalf("refusal names %q", apiErr.body.Param)
			}
			return
		}
		checkURLOnce(t, raw)
	})
}

// checkURLOnce asserts the rules on an accepted URL independently of
// checkWebhookURL's own code.
func checkURLOnce(t *testing.T, raw string) {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("accepted an unparsable URL: %v", err)
	}
	if u.User != nil || u.Hostname() == "" || len(raw) > maxURLBytes {
		t.Fatal("accepted a URL with credentials, without a host or too long")
	}
	switch u.Scheme {
	case "https":
	case "http":
		h := u.Hostname()
		if strings.ToLower(h) == "localhost" {
			return
		}
		a, err := netip.ParseAddr(h)
		if err != nil {
			t.Fatalf("accepted http to a non-IP, non-localhost host")
		}
		a = a.Unmap().WithZone("")
		if !(a.Is4() && a.As4()[0] == 127) && a != netip.IPv6Loopback() {
			t.Fatalf("accepted http to a host that is not loopback")
		}
	default:
		t.Fatalf("accepted scheme %q", u.Scheme)
	}
}
