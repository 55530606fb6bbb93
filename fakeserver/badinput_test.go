package fakeserver_test

import (
	"context"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver"
	"github.com/confpay/confpay-go/fakeserver/internal/hooks"
	"github.com/confpay/confpay-go/webhookverify"
)

// TestBadInputChangesNothing sends malformed requests: each must get the
// right 4xx naming the field at fault, and leave the server's state exactly
// as it was.
func TestBadInputChangesNothing(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	alice := newAccount(t, srv, "@alice")
	bob := newAccount(t, srv, "@bob")
	newAccountWith(t, srv, fakeserver.AccountParams{Handle: "@carol"})
	srv.AddFunds(t, "@alice", "USDG", "100")
	srv.AddFunds(t, "@alice", "ETH", "1")
	send(t, newClient(t, srv, alice.test(), nil), "@bob", "1") // one pending transfer in the state

	tr := func(fields string) string { return `{"to":"@bob",` + fields + `}` }
	amt := func(a string) string { return tr(`"amount":"` + a + `"`) }
	to := func(r string) string { return `{"amount":"1","to":"` + r + `"}` }
	bobAddr := bob.info.PublicKey
	outside := "0x00000000000000000000000000000000000000C0" // an external wallet
	badSum := badChecksum(common.HexToAddress("0xfb6916095ca1df60bb79ce92ce3ea74c37c5d359").Hex())

	type tc struct {
		name, method, path, body string
		headers                  []string
		status                   int
		code                     confpay.ErrorCode
		param                    string
	}
	post := func(name, body string, status int, code confpay.ErrorCode, param string) tc {
		return tc{name, "POST", "/v1/transfers", body, nil, status, code, param}
	}
	bad := func(name, body, param string) tc {
		return post(name, body, 400, confpay.CodeInvalidRequest, param)
	}
	list := func(name, q, param string) tc {
		return tc{name, "GET", "/v1/transfers?" + q, "", nil, 400, confpay.CodeInvalidRequest, param}
	}
	admin := func(name, method, path, body, param string) tc {
		return tc{name, method, path, body, nil, 400, confpay.CodeInvalidRequest, param}
	}
	cases := []tc{
		bad("broken json", `{"to":"@bob","amount":"1"`, "body"),
		bad("not json", `to=@bob&amount=1`, "body"),
		bad("array", `[{"to":"@bob","amount":"1"}]`, "body"),
		bad("string", `"pay bob"`, "body"),
		bad("null", `null`, "body"),
		bad("two objects", `{"to":"@bob","amount":"1"} {"to":"@bob","amount":"1"}`, "body"),
		bad("unknown field", tr(`"amount":"1","amout":"1"`), "amout"),
		bad("unknown nested field", tr(`"amount":"1","meta":{"a":1}`), "meta"),
		bad("amount number", tr(`"amount":1`), "amount"),
		bad("amount float", tr(`"amount":1.5`), "amount"),
		bad("to number", `{"to":5,"amount":"1"}`, "to"),
		bad("confidential string", tr(`"amount":"1","confidential":"yes"`), "confidential"),
		bad("memo number", tr(`"amount":"1","memo":5`), "memo"),
		bad("asset number", tr(`"amount":"1","asset":7`), "asset"),
		bad("missing to", `{"amount":"1"}`, "to"),
		bad("missing amount", `{"to":"@bob"}`, "amount"),
		bad("null to", `{"to":null,"amount":"1"}`, "to"),
		bad("empty body", ``, "to"),
		bad("negative", amt("-1"), "amount"),
		bad("zero", amt("0"), "amount"),
		bad("zero with decimals", amt("0.000000"), "amount"),
		bad("over-precise USDG", amt("0.0000001"), "amount"),
		bad("over-precise ETH", `{"to":"@bob","asset":"ETH","amount":"0.0000000000000000001"}`, "amount"),
		bad("exponent", amt("1e3"), "amount"),
		bad("capital exponent", amt("1E3"), "amount"),
		bad("leading space", amt(" 1"), "amount"),
		bad("plus sign", amt("+1"), "amount"),
		bad("trailing point", amt("1."), "amount"),
		bad("leading point", amt(".5"), "amount"),
		bad("leading zero", amt("01"), "amount"),
		bad("thousands separator", amt("1,000"), "amount"),
		bad("empty amount", amt(""), "amount"),
		bad("hex amount", amt("0x10"), "amount"),
		bad("NaN", amt("NaN"), "amount"),
		bad("Infinity", amt("Infinity"), "amount"),
		bad("too long", amt(strings.Repeat("9", 120)), "amount"),
		bad("2^256 units", amt(strings.Repeat("9", 80)), "amount"),
		bad("unknown asset", tr(`"amount":"1","asset":"BTC"`), "asset"),
		bad("lower-case asset", tr(`"amount":"1","asset":"usdg"`), "asset"),
		bad("empty asset", tr(`"amount":"1","asset":""`), "asset"),
		bad("short handle", to("@ab"), "to"),
		bad("long handle", to("@"+strings.Repeat("a", 21)), "to"),
		bad("bad handle character", to("@bo-b"), "to"),
		bad("bad agent name", to("@bob/b!t"), "to"),
		bad("bare name", to("bob"), "to"),
		bad("empty recipient", to(""), "to"),
		bad("short address", to("0x1234"), "to"),
		bad("non-hex address", to("0x"+strings.Repeat("z", 40)), "to"),
		bad("long address", to(bobAddr+"00"), "to"),
		bad("bad checksum", to(badSum), "to"),
		bad("self payment", to("@ALICE"), "to"),
		bad("memo too long", tr(`"amount":"1","memo":"`+strings.Repeat("m", 1025)+`"`), "memo"),
		post("unknown handle", to("@nobody"), 404, confpay.CodeRecipientNotFound, "to"),
		post("unknown domain", to("shop.example"), 404, confpay.CodeRecipientNotFound, "to"),
		post("not confidential-ready", to("@carol"), 422, confpay.CodeRecipientNotConfidentialReady, "to"),
		post("huge body", tr(`"amount":"1","memo":"`+strings.Repeat("x", fakeserver.MaxBodyBytes)+`"`), 413, confpay.CodeRequestTooLarge, ""),
		{"long idempotency key", "POST", "/v1/transfers", amt("1"), []string{"Idempotency-Key", strings.Repeat("k", 256)}, 400, confpay.CodeInvalidRequest, "Idempotency-Key"},
		list("limit 0", "limit=0", "limit"),
		list("limit 101", "limit=101", "limit"),
		list("limit word", "limit=ten", "limit"),
		list("negative offset", "offset=-5", "offset"),
		list("bad status", "status=done", "status"),
		list("bad from", "from=last+week", "from"),
		list("impossible date", "to=2026-02-30T00:00:00Z", "to"),
		list("date that does not exist", "from=2026-02-30", "from"),
		list("date with a two-digit year", "to=26-01-05", "to"),
		list("unknown parameter", "page=2", "page"),
		{"balances proof of wrong type", "GET", "/v1/accounts/me/balances", `{"decryption_proof":5}`, nil, 400, confpay.CodeInvalidRequest, "decryption_proof"},
		{"balances unknown field", "GET", "/v1/accounts/me/balances", `{"proof":"abc"}`, nil, 400, confpay.CodeInvalidRequest, "proof"},
		{"balances bad proof", "GET", "/v1/accounts/me/balances", `{"decryption_proof":"AAAA"}`, nil, 422, confpay.CodeDecryptionProofInvalid, "decryption_proof"},
		admin("fund exponent", "POST", "/_fake/fund", `{"account":"@alice","amount":"1e5"}`, "amount"),
		admin("fund bad network", "POST", "/_fake/fund", `{"account":"@alice","amount":"1","network":"main"}`, "network"),
		admin("fund bad asset", "POST", "/_fake/fund", `{"account":"@alice","amount":"1","asset":"DOGE"}`, "asset"),
		admin("inbound without from", "POST", "/_fake/inbound", `{"to":"@alice","amount":"1"}`, "from"),
		admin("inbound from a bad address", "POST", "/_fake/inbound", `{"from":"0x123","to":"@alice","amount":"1"}`, "from"),
		admin("inbound from a bad checksum", "POST", "/_fake/inbound", `{"from":"`+badSum+`","to":"@alice","amount":"1"}`, "from"),
		admin("inbound from neither", "POST", "/_fake/inbound", `{"from":"alice","to":"@alice","amount":"1"}`, "from"),
		admin("inbound from an agent handle", "POST", "/_fake/inbound", `{"from":"@alice/bot","to":"@bob","amount":"1"}`, "from"),
		admin("inbound from the recipient", "POST", "/_fake/inbound", `{"from":"@alice","to":"@alice","amount":"1"}`, "from"),
		admin("inbound from the recipient's address", "POST", "/_fake/inbound", `{"from":"`+bobAddr+`","to":"@bob","amount":"1"}`, "from"),
		admin("inbound without to", "POST", "/_fake/inbound", `{"from":"`+outside+`","amount":"1"}`, "to"),
		admin("inbound without amount", "POST", "/_fake/inbound", `{"from":"`+outside+`","to":"@alice"}`, "amount"),
		admin("inbound exponent", "POST", "/_fake/inbound", `{"from":"`+outside+`","to":"@alice","amount":"1e5"}`, "amount"),
		admin("inbound zero", "POST", "/_fake/inbound", `{"from":"`+outside+`","to":"@alice","amount":"0"}`, "amount"),
		admin("inbound bad network", "POST", "/_fake/inbound", `{"from":"`+outside+`","to":"@alice","amount":"1","network":"main"}`, "network"),
		admin("inbound bad asset", "POST", "/_fake/inbound", `{"from":"`+outside+`","to":"@alice","amount":"1","asset":"DOGE"}`, "asset"),
		admin("inbound long memo", "POST", "/_fake/inbound", `{"from":"`+outside+`","to":"@alice","amount":"1","memo":"`+strings.Repeat("m", 1025)+`"}`, "memo"),
		admin("inbound confidential as a string", "POST", "/_fake/inbound", `{"from":"`+outside+`","to":"@alice","amount":"1","confidential":"yes"}`, "confidential"),
		admin("inbound unknown field", "POST", "/_fake/inbound", `{"from":"`+outside+`","to":"@alice","amount":"1","fee":"1"}`, "fee"),
		{"inbound from an unknown handle", "POST", "/_fake/inbound", `{"from":"@zed","to":"@alice","amount":"1"}`, nil, 404, confpay.CodeNotFound, "from"},
		{"inbound to an unknown account", "POST", "/_fake/inbound", `{"from":"` + outside + `","to":"@zed","amount":"1"}`, nil, 404, confpay.CodeNotFound, ""},
		{"inbound confidential to a keyless account", "POST", "/_fake/inbound", `{"from":"` + outside + `","to":"@carol","amount":"1"}`, nil, 422, confpay.CodeRecipientNotConfidentialReady, "to"},
		{"inbound beyond the payer's books", "POST", "/_fake/inbound", `{"from":"@bob","to":"@alice","amount":"1"}`, nil, 402, confpay.CodeInsufficientBalance, ""},
		admin("delivery fault without action", "POST", "/_fake/delivery-faults", `{"times":1}`, "action"),
		admin("delivery fault bad action", "POST", "/_fake/delivery-faults", `{"action":"explode"}`, "action"),
		admin("delivery fault negative times", "POST", "/_fake/delivery-faults", `{"action":"duplicate","times":-1}`, "times"),
		admin("delivery fault bad event", "POST", "/_fake/delivery-faults", `{"action":"duplicate","event":"transfer.done"}`, "event"),
		admin("delivery delay without delay", "POST", "/_fake/delivery-faults", `{"action":"delay"}`, "delay"),
		admin("delivery delay not a duration", "POST", "/_fake/delivery-faults", `{"action":"delay","delay":"soon"}`, "delay"),
		admin("delivery delay as a number", "POST", "/_fake/delivery-faults", `{"action":"delay","delay":120}`, "delay"),
		admin("delivery delay negative", "POST", "/_fake/delivery-faults", `{"action":"delay","delay":"-1s"}`, "delay"),
		admin("delivery delay zero", "POST", "/_fake/delivery-faults", `{"action":"delay","delay":"0s"}`, "delay"),
		admin("delivery delay past the retry window", "POST", "/_fake/delivery-faults", `{"action":"delay","delay":"24h0m1s"}`, "delay"),
		admin("delivery reorder negative bound", "POST", "/_fake/delivery-faults", `{"action":"reorder","delay":"-1m"}`, "delay"),
		admin("delivery reorder bound past the retry window", "POST", "/_fake/delivery-faults", `{"action":"reorder","delay":"25h"}`, "delay"),
		admin("delivery reorder bad times", "POST", "/_fake/delivery-faults", `{"action":"reorder","times":-2}`, "times"),
		admin("delay on a duplicate fault", "POST", "/_fake/delivery-faults", `{"action":"duplicate","delay":"1s"}`, "delay"),
		admin("delay on a lose_answer fault", "POST", "/_fake/delivery-faults", `{"action":"lose_answer","delay":"1s"}`, "delay"),
		admin("account bad handle", "POST", "/_fake/accounts", `{"handle":"alice"}`, "handle"),
		admin("account bad key", "POST", "/_fake/accounts", `{"handle":"@dave","encryption_key":"02abcd"}`, "encryption_key"),
		admin("account bad type", "POST", "/_fake/accounts", `{"handle":"@dave","type":"agent"}`, "type"),
		{"account taken handle", "POST", "/_fake/accounts", `{"handle":"@ALICE"}`, nil, 409, confpay.CodeInvalidRequest, "handle"},
		admin("patch bad kyc", "PATCH", "/_fake/accounts/%40alice", `{"kyc_status":"great"}`, "kyc_status"),
		admin("patch status of a person", "PATCH", "/_fake/accounts/%40alice", `{"kyc_status":"pending","status":"paused"}`, "status"),
		admin("clock negative", "POST", "/_fake/clock", `{"advance":"-1h"}`, "advance"),
		admin("clock bad set", "POST", "/_fake/clock", `{"set":"tomorrow"}`, "set"),
		admin("fault bad action", "POST", "/_fake/faults", `{"action":"boom"}`, "action"),
		admin("fault bad account", "POST", "/_fake/faults", `{"action":"error","account":"alice"}`, "account"),
		admin("fault key secret as key_id", "POST", "/_fake/faults", `{"action":"error","key_id":"hc_test_abc"}`, "key_id"),
		admin("fault long idempotency key", "POST", "/_fake/faults", `{"action":"error","idempotency_key":"`+strings.Repeat("k", 256)+`"}`, "idempotency_key"),
		admin("fault probability over 1", "POST", "/_fake/faults", `{"action":"error","probability_bp":10001}`, "probability_bp"),
		admin("fault probability negative", "POST", "/_fake/faults", `{"action":"error","probability_bp":-1}`, "probability_bp"),
		admin("fault probability fractional", "POST", "/_fake/faults", `{"action":"error","probability_bp":0.5}`, "probability_bp"),
		admin("fault transfer_id with account", "POST", "/_fake/faults", `{"action":"fail_at_confirmation","transfer_id":"tr_x","account":"@alice"}`, "transfer_id"),
		admin("domain bad", "POST", "/_fake/domains", `{"account":"@alice","domain":"not a domain"}`, "domain"),
		admin("books bad network", "GET", "/_fake/books/%40alice?network=main", ``, "network"),
		admin("prove bad network", "POST", "/_fake/prove", `{"account":"@alice","network":"main","decryption_key":"`+alice.dk.Hex()+`"}`, "network"),
		admin("prove wrong key", "POST", "/_fake/prove", `{"account":"@alice","decryption_key":"`+bob.dk.Hex()+`"}`, "decryption_key"),
		admin("prove key not hex", "POST", "/_fake/prove", `{"account":"@alice","decryption_key":"zz"}`, "decryption_key"),
		admin("open-note two ids", "POST", "/_fake/open-note", `{"transfer_id":"tr_1","transaction_id":"atx_1","decryption_key":"`+alice.dk.Hex()+`"}`, "transaction_id"),
		admin("open-note no id", "POST", "/_fake/open-note", `{"decryption_key":"`+alice.dk.Hex()+`"}`, "transfer_id"),
	}
	// Strict JSON on every body-taking endpoint, /v1 and /_fake: a member
	// given twice, or in another letter case, is 400 naming the member (a
	// proxy reading the first "amount" and the server the last must never
	// disagree). Each entry is a body that is valid but for the addition.
	agent, err := newClient(t, srv, alice.test(), nil).Agents.Create(context.Background(), &confpay.AgentCreateParams{
		Name: "bot", SpendPolicy: confpay.SpendPolicyParams{DailyLimitUSDG: confpay.Ptr(confpay.MustParseLimit("10")), PerTransactionLimitUSDG: confpay.Ptr(confpay.MustParseLimit("5"))},
	})
	if err != nil {
		t.Fatal(err)
	}
	policyPath := "/v1/agents/" + agent.AccountID + "/spend-policy"
	for _, e := range []struct {
		method, path, body, dup, variant, param string
	}{
		{"POST", "/v1/transfers", `"to":"@bob","amount":"1","confidential":false`, `"amount":"90"`, `"Amount":"90"`, "amount"},
		{"POST", "/v1/transfers", `"amount":"1","confidential":false,"to":"@bob"`, `"to":"@carol"`, `"TO":"@carol"`, "to"},
		{"POST", "/v1/accounts/me/agents", `"name":"bot2","spend_policy":{"daily_limit_usdg":10,"per_transaction_limit_usdg":5}`, `"name":"bot3"`, `"Name":"bot3"`, "name"},
		{"POST", "/v1/accounts/me/agents", `"name":"bot2","spend_policy":{"daily_limit_usdg":10,"per_transaction_limit_usdg":5}`, `"spend_policy":{}`, `"Spend_Policy":{}`, "spend_policy"},
		{"PATCH", policyPath, `"daily_limit_usdg":10`, `"daily_limit_usdg":1000`, `"Daily_Limit_USDG":1000`, "daily_limit_usdg"},
		{"POST", "/v1/webhooks", `"url":"https://hooks.example.com/x","events":["transfer.confirmed"]`, `"url":"https://evil.example.com/"`, `"URL":"https://evil.example.com/"`, "url"},
		{"GET", "/v1/accounts/me/balances", `"decryption_proof":"AAAA"`, `"decryption_proof":"BBBB"`, `"Decryption_Proof":"BBBB"`, "decryption_proof"},
		{"POST", "/_fake/accounts", `"handle":"@dave"`, `"handle":"@erin"`, `"Handle":"@erin"`, "handle"},
		{"PATCH", "/_fake/accounts/%40alice", `"kyc_status":"verified"`, `"kyc_status":"pending"`, `"KYC_Status":"pending"`, "kyc_status"},
		{"POST", "/_fake/accounts/%40alice/keys", `"network":"test","name":"k"`, `"network":"live"`, `"Network":"live"`, "network"},
		{"POST", "/_fake/fund", `"account":"@alice","amount":"1"`, `"amount":"1000"`, `"AMOUNT":"1000"`, "amount"},
		{"POST", "/_fake/inbound", `"from":"0x00000000000000000000000000000000000000C0","to":"@alice","amount":"1"`, `"amount":"1000"`, `"Amount":"1000"`, "amount"},
		{"POST", "/_fake/inbound", `"to":"@alice","amount":"1","from":"0x00000000000000000000000000000000000000C0"`, `"from":"@bob"`, `"FROM":"@bob"`, "from"},
		{"POST", "/_fake/delivery-faults", `"action":"duplicate","times":1`, `"times":5`, `"Times":5`, "times"},
		{"POST", "/_fake/delivery-faults", `"action":"delay","delay":"1s"`, `"delay":"2s"`, `"Delay":"2s"`, "delay"},
		{"POST", "/_fake/domains", `"account":"@alice","domain":"alice.example"`, `"account":"@bob"`, `"Account":"@bob"`, "account"},
		{"POST", "/_fake/clock", `"advance":"1s"`, `"advance":"100h"`, `"Advance":"100h"`, "advance"},
		{"POST", "/_fake/faults", `"action":"error","status":503`, `"status":500`, `"Status":500`, "status"},
		{"POST", "/_fake/assets", `"code":"EURC","decimals":2,"usdg_rate":1`, `"decimals":6`, `"Decimals":6`, "decimals"},
	} {
		cases = append(cases,
			tc{"duplicate " + e.param + " on " + e.method + " " + e.path, e.method, e.path, "{" + e.body + "," + e.dup + "}", nil, 400, confpay.CodeInvalidRequest, e.param},
			tc{"case variant of " + e.param + " on " + e.method + " " + e.path, e.method, e.path, "{" + e.body + "," + e.variant + "}", nil, 400, confpay.CodeInvalidRequest, e.param},
		)
	}
	cases = append(cases,
		bad("duplicate deep inside memo's neighbour", `{"to":"@bob","amount":"1","memo":"x","memo":"y"}`, "memo"),
		tc{"duplicate inside spend_policy", "POST", "/v1/accounts/me/agents", `{"name":"bot4","spend_policy":{"daily_limit_usdg":10,"per_transaction_limit_usdg":5,"daily_limit_usdg":1000}}`, nil, 400, confpay.CodeInvalidRequest, "spend_policy.daily_limit_usdg"},
		tc{"case variant inside spend_policy", "POST", "/v1/accounts/me/agents", `{"name":"bot4","spend_policy":{"daily_limit_usdg":10,"per_transaction_limit_usdg":5,"Daily_Limit_USDG":1000}}`, nil, 400, confpay.CodeInvalidRequest, "spend_policy.daily_limit_usdg"},
		tc{"empty proof", "GET", "/v1/accounts/me/balances", `{"decryption_proof":""}`, nil, 422, confpay.CodeDecryptionProofInvalid, "decryption_proof"},
		tc{"null proof", "GET", "/v1/accounts/me/balances", `{"decryption_proof":null}`, nil, 422, confpay.CodeDecryptionProofInvalid, "decryption_proof"},
		tc{"empty proof in the query", "GET", "/v1/accounts/me/balances?decryption_proof=", "", nil, 422, confpay.CodeDecryptionProofInvalid, "decryption_proof"},
		tc{"query with a semicolon", "GET", "/v1/transfers?limit=5;offset=2", "", nil, 400, confpay.CodeInvalidRequest, "query"},
		tc{"query with a bad escape", "GET", "/v1/transfers?limit=%zz", "", nil, 400, confpay.CodeInvalidRequest, "query"},
		tc{"proof query with a bad escape", "GET", "/v1/accounts/me/balances?decryption_proof=%zz", "", nil, 400, confpay.CodeInvalidRequest, "query"},
		tc{"admin query with a semicolon", "GET", "/_fake/books/%40alice?network=test;x=1", "", nil, 400, confpay.CodeInvalidRequest, "query"},
		// One query rule on every endpoint (checkQuery): unknown and
		// repeated parameters are refused, on endpoints that take no
		// query too, /v1 and /_fake alike.
		tc{"limit on the pending list", "GET", "/v1/agents/transactions/pending?limit=10", "", nil, 400, confpay.CodeInvalidRequest, "limit"},
		tc{"query on accounts/me", "GET", "/v1/accounts/me?expand=1", "", nil, 400, confpay.CodeInvalidRequest, "expand"},
		tc{"query on the agents list", "GET", "/v1/accounts/me/agents?limit=5", "", nil, 400, confpay.CodeInvalidRequest, "limit"},
		tc{"query on a transfer creation", "POST", "/v1/transfers?bogus=1", amt("1"), nil, 400, confpay.CodeInvalidRequest, "bogus"},
		tc{"query on an agent creation", "POST", "/v1/accounts/me/agents?dry_run=1", `{"name":"bot9","spend_policy":{"daily_limit_usdg":10,"per_transaction_limit_usdg":5}}`, nil, 400, confpay.CodeInvalidRequest, "dry_run"},
		tc{"query on a policy update", "PATCH", policyPath + "?force=1", `{"daily_limit_usdg":1000}`, nil, 400, confpay.CodeInvalidRequest, "force"},
		tc{"query on a webhook creation", "POST", "/v1/webhooks?x=1", `{"url":"https://hooks.example.com/x","events":["transfer.confirmed"]}`, nil, 400, confpay.CodeInvalidRequest, "x"},
		tc{"query on the webhooks list", "GET", "/v1/webhooks?limit=1", "", nil, 400, confpay.CodeInvalidRequest, "limit"},
		tc{"unknown deliveries parameter", "GET", "/v1/webhooks/wh_x/deliveries?status=failed", "", nil, 400, confpay.CodeInvalidRequest, "status"},
		tc{"repeated limit", "GET", "/v1/transfers?limit=1&limit=2", "", nil, 400, confpay.CodeInvalidRequest, "limit"},
		tc{"repeated proof", "GET", "/v1/accounts/me/balances?decryption_proof=a&decryption_proof=b", "", nil, 400, confpay.CodeInvalidRequest, "decryption_proof"},
		tc{"parameter without a name", "GET", "/v1/transfers?=1", "", nil, 400, confpay.CodeInvalidRequest, "query"},
		tc{"two unknown parameters, the first by name", "GET", "/v1/transfers?zeta=1&alpha=1", "", nil, 400, confpay.CodeInvalidRequest, "alpha"},
		admin("query on a reset", "POST", "/_fake/reset?bogus=1", ``, "bogus"),
		admin("repeated reset target", "POST", "/_fake/reset?to=empty&to=empty", ``, "to"),
		admin("query on a fund", "POST", "/_fake/fund?dry_run=1", `{"account":"@alice","amount":"1"}`, "dry_run"),
		admin("query on the clock", "POST", "/_fake/clock?advance=1h", `{"advance":"1h"}`, "advance"),
		admin("query on the accounts list", "GET", "/_fake/accounts?limit=1", ``, "limit"),
		admin("repeated books network", "GET", "/_fake/books/%40alice?network=test&network=live", ``, "network"),
		admin("unknown transfers listing parameter", "GET", "/_fake/transfers?account=%40alice&status=pending", ``, "status"),
		admin("chaos by network", "GET", "/_fake/chaos?network=test", ``, "network"),
		admin("repeated chaos account", "GET", "/_fake/chaos?account=%40alice&account=%40bob", ``, "account"),
		tc{"chaos of an unknown account", "GET", "/_fake/chaos?account=%40zed", ``, nil, 404, confpay.CodeNotFound, ""},
		// Unclean paths are refused, never redirected (checkPath).
		admin("leading double slash", "POST", "//_fake/reset", ``, "path"),
		admin("dot-dot out of /v1", "POST", "/v1/../_fake/reset", ``, "path"),
		admin("dot segment", "POST", "/_fake/./reset", ``, "path"),
		admin("encoded dot-dot", "POST", "/_fake/%2e%2e/_fake/reset", ``, "path"),
		admin("encoded slash", "POST", "/_fake/%2Freset", ``, "path"),
		tc{"unclean /v1 path", "POST", "/v1//transfers", amt("1"), nil, 400, confpay.CodeInvalidRequest, "path"},
		// No webhook delivery acts on /_fake (refuseDelivery).
		tc{"signed request to reset", "POST", "/_fake/reset", "", []string{webhookverify.SignatureHeader, "00"}, 403, "forbidden", ""},
		tc{"delivery client to fund", "POST", "/_fake/fund", `{"account":"@alice","amount":"1"}`, []string{"User-Agent", hooks.UserAgent}, 403, "forbidden", ""},
		// No web page in a browser acts on /_fake (crossOrigin): a
		// cross-site form POST needs no body and no header of its own.
		tc{"cross-site form post to reset", "POST", "/_fake/reset", "", []string{"Sec-Fetch-Site", "cross-site", "Content-Type", "application/x-www-form-urlencoded"}, 403, "forbidden", ""},
		tc{"same-site page to reset", "POST", "/_fake/reset", "", []string{"Sec-Fetch-Site", "same-site"}, 403, "forbidden", ""},
		tc{"another origin to fund, older browser", "POST", "/_fake/fund", `{"account":"@alice","amount":"1"}`, []string{"Origin", "http://evil.example"}, 403, "forbidden", ""},
		tc{"an opaque origin to reset", "POST", "/_fake/reset", "", []string{"Origin", "null"}, 403, "forbidden", ""},
		// The agent was made with a test key: on live its policy allows
		// nothing until a live PATCH sets both limits (the merged result).
		tc{"live: one limit of a policy never set on live", "PATCH", policyPath, `{"daily_limit_usdg":10}`, nil, 400, confpay.CodeInvalidPolicy, "per_transaction_limit_usdg"},
		tc{"live: the other limit of a policy never set on live", "PATCH", policyPath, `{"per_transaction_limit_usdg":5}`, nil, 400, confpay.CodeInvalidPolicy, "daily_limit_usdg"},
		tc{"live: no limit for a policy never set on live", "PATCH", policyPath, `{"assets":["USDG","ETH"],"hitl_threshold_usdg":1}`, nil, 400, confpay.CodeInvalidPolicy, "daily_limit_usdg"},
	)
	// A memo that decoding would alter (encoding/json reads invalid UTF-8
	// and escaped lone surrogates as U+FFFD) is refused on every path that
	// takes one: an owner's payment, an agent's, and an agent's payment
	// that would be held for approval. Without the refusal each would
	// make a transfer or a held payment, changing the state.
	sent := map[string]string{} // case name -> the API key it is sent with (alice's test key otherwise)
	agentKey := func(name string, p confpay.SpendPolicyParams) string {
		a, err := newClient(t, srv, alice.test(), nil).Agents.Create(context.Background(), &confpay.AgentCreateParams{Name: name, SpendPolicy: p})
		if err != nil {
			t.Fatal(err)
		}
		srv.AddFunds(t, a.AccountID, "USDG", "10")
		return newKey(t, srv, a.AccountID)
	}
	five := confpay.Ptr(confpay.MustParseLimit("5"))
	for _, payer := range []struct{ name, key string }{
		{"owner", alice.test()},
		{"agent", agentKey("payer", confpay.SpendPolicyParams{DailyLimitUSDG: five, PerTransactionLimitUSDG: five})},
		{"held agent", agentKey("asker", confpay.SpendPolicyParams{DailyLimitUSDG: five, PerTransactionLimitUSDG: five, HITLThresholdUSDG: confpay.Ptr(confpay.MustParseLimit("0.5"))})},
	} {
		for _, m := range []struct{ name, memo string }{
			{"lone high surrogate", `\ud800`},
			{"lone low surrogate", `rent \udfff`},
			{"high surrogate then a letter", `\ud83d\u0041`},
			{"high surrogate at the end", `flat 3 \uD83D`},
			{"invalid UTF-8 byte", "rent \xff"},
			{"truncated UTF-8", "\xe2\x82"},
			{"UTF-8 of a surrogate", "\xed\xa0\x80"},
			{"1025 bytes of UTF-8", strings.Repeat("é", 512) + "m"},
		} {
			c := bad(m.name+" in memo, "+payer.name, tr(`"amount":"1","memo":"`+m.memo+`"`), "memo")
			sent[c.name] = payer.key
			cases = append(cases, c)
		}
	}
	if len(cases) < 40 {
		t.Fatalf("only %d cases", len(cases))
	}

	before := srv.Snapshot()
	for _, c := range cases {
		key := alice.test()
		if k, ok := sent[c.name]; ok {
			key = k
		}
		if strings.HasPrefix(c.path, "/_fake") {
			key = ""
		}
		if strings.HasPrefix(c.name, "live: ") {
			key = alice.live()
		}
		a := rawCall(t, srv, c.method, c.path, key, c.body, c.headers...)
		e := a.err()
		if a.status != c.status || e.Code != c.code || e.Param != c.param {
			t.Errorf("%s: got %d %s (param %q) %q; want %d %s (param %q)", c.name, a.status, e.Code, e.Param, e.Message, c.status, c.code, c.param)
		}
		if e.RequestID == "" || e.RequestID != a.header.Get("X-Request-Id") {
			t.Errorf("%s: request id %q in body, %q in header", c.name, e.RequestID, a.header.Get("X-Request-Id"))
		}
		checkUnchanged(t, srv, before, c.name)
		if fs := srv.DeliveryFaults(); len(fs) != 0 {
			t.Fatalf("%s scripted a delivery fault: %+v", c.name, fs)
		}
	}
}
