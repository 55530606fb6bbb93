package audit

import (
	"github.com/confpay/confpay-go/fakeserver/internal/idempotency"
	"slices"
	"testing"
	"time"
)

// req builds a request at ms milliseconds (wall and server time alike).
func req(id, route, key string, ms int, status int, code string) Request {
	at := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC).Add(time.Duration(ms) * time.Millisecond)
	d := [32]byte{byte(len(route))}
	return Request{ID: id, Route: route, Key: key, Digest: d, Arrived: time.Duration(ms) * time.Millisecond, Answered: time.Duration(ms) * time.Millisecond, At: at, Status: status, Code: code, RetryAfter: -1}
}

const post = "POST /v1/transfers"

func rulesOf(fs []Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Rule+":"+f.RequestIDs[0])
	}
	return out
}

func TestRules(t *testing.T) {
	slow := req("r2", post, "k", 10, 201, "")
	fast := req("r2", post, "k", 0, 201, "")
	retryAfter := req("r1", post, "k", 0, 503, "service_unavailable")
	retryAfter.RetryAfter = time.Second
	cut := req("r1", post, "k", 0, 201, "")
	cut.Cut = true
	other := req("r2", post, "k", 0, 422, "idempotency_key_reused")
	other.Digest[1] = 1
	for _, tc := range []struct {
		name string
		rule func([]Request) []Finding
		reqs []Request
		want []string
	}{
		{"no key on a payment", MissingKey, []Request{req("r1", post, "", 0, 201, "")}, []string{RuleMissingKey + ":r1"}},
		{"no key on an approval", MissingKey, []Request{req("r1", "POST /v1/agents/transactions/{transaction_id}/approve", "", 0, 200, "")}, []string{RuleMissingKey + ":r1"}},
		{"no key on a read", MissingKey, []Request{req("r1", "GET /v1/transfers", "", 0, 200, "")}, nil},
		{"a key", MissingKey, []Request{req("r1", post, "k", 0, 201, "")}, nil},
		{"reused", KeyReused, []Request{req("r1", post, "k", 0, 201, ""), other}, []string{RuleKeyReused + ":r1"}},
		{"retry at once after a 500", rules3, []Request{req("r1", post, "k", 0, 500, ""), fast}, []string{RuleRetryTooFast + ":r1"}},
		{"retry after 10 ms", rules3, []Request{req("r1", post, "k", 0, 500, ""), slow}, nil},
		{"retry before Retry-After", rules3, []Request{retryAfter, slow}, []string{RuleRetryTooFast + ":r1"}},
		{"resend after a cut answer", rules3, []Request{cut, fast}, nil},
		{"the job again after a 201", rules3, []Request{req("r1", post, "k", 0, 201, ""), fast}, nil},
		{"too often", rules3, []Request{req("r1", post, "k", 0, 500, ""), req("r2", post, "k", 10, 500, ""), req("r3", post, "k", 20, 500, ""), req("r4", post, "k", 30, 201, "")}, []string{RuleRetryTooOften + ":r1"}},
		{"400", Malformed, []Request{req("r1", post, "k", 0, 400, "invalid_request")}, []string{RuleMalformed + ":r1"}},
		{"422 reused is KeyReused's", Malformed, []Request{other}, nil},
		{"422 not ready is the state's", Malformed, []Request{req("r1", post, "k", 0, 422, "recipient_not_confidential_ready")}, nil},
		{"402 is no malformed request", Malformed, []Request{req("r1", post, "k", 0, 402, "insufficient_balance")}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := rulesOf(tc.rule(tc.reqs)); !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// rules3 is Retries with a 1 ms floor and at most 3 sends.
func rules3(reqs []Request) []Finding { return Retries(reqs, time.Millisecond, 3) }

func TestDoublePayment(t *testing.T) {
	a, b := req("r1", post, "k1", 0, 201, ""), req("r2", post, "k2", 60_000, 201, "")
	a.TransferID, b.TransferID = "tr_1", "tr_2"
	same := [32]byte{1}
	pays := map[string]Payment{"tr_1": {"tr_1", same, a.At}, "tr_2": {"tr_2", same, b.At}}
	if got := DoublePayment([]Request{a, b}, pays, time.Minute); len(got) != 1 || !slices.Equal(got[0].TransferIDs, []string{"tr_1", "tr_2"}) {
		t.Errorf("within the window: %v", got)
	}
	if got := DoublePayment([]Request{a, b}, pays, time.Minute-time.Millisecond); len(got) != 0 {
		t.Errorf("outside the window: %v", got)
	}
	pays["tr_2"] = Payment{"tr_2", [32]byte{2}, b.At}
	if got := DoublePayment([]Request{a, b}, pays, time.Hour); len(got) != 0 {
		t.Errorf("different payments: %v", got)
	}
}

func TestOneTransferPerKey(t *testing.T) {
	a, b := req("r1", post, "k", 0, 201, ""), req("r2", post, "k", 1, 201, "")
	a.TransferID, b.TransferID = "tr_1", "tr_1"
	if got := OneTransferPerKey([]Request{a, b}); len(got) != 0 {
		t.Errorf("one transfer: %v", got)
	}
	b.TransferID = "tr_2"
	if got := OneTransferPerKey([]Request{a, b}); len(got) != 1 {
		t.Errorf("two transfers under one key: %v", got)
	}
	// Past the key's 24 hours, the server forgot it: a new transfer
	// under it is no bug of the fake.
	b.At = a.At.Add(idempotency.TTL)
	if got := OneTransferPerKey([]Request{a, b}); len(got) != 0 {
		t.Errorf("a key used again after its TTL: %v", got)
	}
}

func TestUnacknowledged(t *testing.T) {
	for _, tc := range []struct {
		d    Delivery
		want int
	}{
		{Delivery{Status: "succeeded", Attempts: 1, ResponseStatus: 200}, 0},
		{Delivery{Status: "pending", Attempts: 0}, 0},
		{Delivery{Status: "pending", Attempts: 1, ResponseStatus: 500}, 1},
		{Delivery{Status: "pending", Attempts: 2, ResponseStatus: 0}, 1},
		{Delivery{Status: "failed", Attempts: 0}, 1},
	} {
		if got := Unacknowledged([]Delivery{tc.d}); len(got) != tc.want {
			t.Errorf("%+v: %d findings, want %d", tc.d, len(got), tc.want)
		}
	}
}

func TestLogBound(t *testing.T) {
	l := NewLog(2)
	for _, id := range []string{"r1", "r2", "r3"} {
		l.Add("a", Request{ID: id})
	}
	l.Add("b", Request{ID: "r4"})
	var got []string
	for _, r := range l.Requests("a") {
		got = append(got, r.ID)
	}
	if !slices.Equal(got, []string{"r2", "r3"}) || len(l.Requests("b")) != 1 {
		t.Errorf("kept %v", got)
	}
}

// TestLogBoundAcrossChunks keeps the newest max requests in order when the
// bound is not a multiple of the storage's chunk and the record wraps.
func TestLogBoundAcrossChunks(t *testing.T) {
	for _, max := range []int{1, chunkLen - 1, chunkLen, chunkLen + 1, 3*chunkLen + 7} {
		l := NewLog(max)
		for n := 1; n <= 3*max+5; n++ {
			l.Add("a", Request{Status: n})
			if n%61 != 0 && n < 3*max { // check every order now and then, and at the end
				continue
			}
			got := l.Requests("a")
			if len(got) != min(n, max) {
				t.Fatalf("max %d, %d added: %d kept", max, n, len(got))
			}
			for i, r := range got {
				if want := n - len(got) + 1 + i; r.Status != want {
					t.Fatalf("max %d, %d added: request %d is %d, want %d", max, n, i, r.Status, want)
				}
			}
		}
	}
}
