package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver"
)

func TestQuickstartLocal(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out bytes.Buffer
	if err := run(ctx, &out, func(string) string { return "" }); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		"funded @alice with 100 USDG",
		"confirmed at",
		"@alice reads its own balance with a decryption proof: 87.5 USDG",
		"@bob reads its own balance with a decryption proof: 12.5 USDG",
		`@alice opens the note of tr_`,
		`@bob opens the note of tr_`,
		`12.5 USDG, memo "lunch on Friday"`,
		"the fakeserver's audit found nothing to fix",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestQuickstartReadOnly(t *testing.T) {
	srv := fakeserver.New(t)
	info, err := srv.CreateAccount(fakeserver.AccountParams{Handle: "@carol", GenerateEncryptionKey: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Fund("@carol", confpay.NetworkTest, confpay.AssetUSDG, "42.25"); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"CONFPAY_API_KEY":  info.TestKey.Reveal(),
		"CONFPAY_BASE_URL": srv.URL(),
	}
	var out bytes.Buffer
	if err := run(context.Background(), &out, func(k string) string { return env[k] }); err != nil {
		t.Fatalf("run: %v", err)
	}
	if !strings.Contains(out.String(), "@carol (personal account, test network") ||
		!strings.Contains(out.String(), "balance USDG: nonzero=true") {
		t.Errorf("unexpected output:\n%s", out.String())
	}
	if strings.Contains(out.String(), "42.25") {
		t.Errorf("read-only output without a decryption key shows a figure:\n%s", out.String())
	}

	env["CONFPAY_DECRYPTION_KEY"] = info.DecryptionKey.Reveal()
	out.Reset()
	if err := run(context.Background(), &out, func(k string) string { return env[k] }); err != nil {
		t.Fatalf("run with key: %v", err)
	}
	if !strings.Contains(out.String(), "balance 42.25 USDG (proved)") {
		t.Errorf("unexpected output:\n%s", out.String())
	}
	srv.CheckAudit(t)
}
