package confpay

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/confpay/confpay-go/internal/openapicheck"
)

// TestOpenAPIGoldenFiles checks the SDK's golden request and answer files
// (testdata/) against the schemas of openapi.yaml, with every object
// closed: the SDK's wire tests and the document describe the same bytes.
func TestOpenAPIGoldenFiles(t *testing.T) {
	doc, err := openapicheck.Load(OpenAPI())
	if err != nil {
		t.Fatal(err)
	}
	schemaOf := map[string]string{
		"requests/agent_create.json":            "AgentCreate",
		"requests/balances_proof.json":          "BalancesRequest",
		"requests/policy_patch.json":            "SpendPolicyPatch",
		"requests/transfer_create.json":         "TransferCreate",
		"requests/transfer_create_public.json":  "TransferCreate",
		"requests/webhook_create.json":          "WebhookCreate",
		"responses/account.json":                "Account",
		"responses/agent.json":                  "Agent",
		"responses/agents.json":                 "AgentList",
		"responses/approved.json":               "Decision",
		"responses/balances_noproof.json":       "Balances",
		"responses/balances_proof.json":         "Balances",
		"responses/deliveries.json":             "DeliveryList",
		"responses/error_policy_violation.json": "Error",
		"responses/error_proof_stale.json":      "Error",
		"responses/pending.json":                "PendingList",
		"responses/rejected.json":               "Decision",
		"responses/replay.json":                 "Replay",
		"responses/spend_policy.json":           "SpendPolicy",
		"responses/spend_policy_updated.json":   "SpendPolicy",
		"responses/transfer.json":               "Transfer",
		"responses/transfer_created.json":       "TransferCreated",
		"responses/transfer_held.json":          "TransferHeld",
		"responses/transfers.json":              "TransferList",
		"responses/webhook_created.json":        "WebhookCreated",
		"responses/webhooks.json":               "WebhookList",
	}
	files, _ := filepath.Glob("testdata/re*/*.json")
	if len(files) != len(schemaOf) {
		t.Errorf("%d golden files, %d mapped to a schema: map every file", len(files), len(schemaOf))
	}
	for _, f := range files {
		name := strings.TrimPrefix(filepath.ToSlash(f), "testdata/")
		schema, ok := schemaOf[name]
		if !ok {
			t.Errorf("%s: no schema", name)
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		err = doc.CheckSchema(schema, b)
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestOpenAPILint runs the CI lint on the embedded document.
func TestOpenAPILint(t *testing.T) {
	if err := openapicheck.Lint(OpenAPI()); err != nil {
		t.Fatal(err)
	}
}
