// Command openapilint lints the project's OpenAPI documents (CI runs it):
//
//	go run ./internal/openapicheck/openapilint openapi.yaml fakeserver/openapi-fake.yaml
package main

import (
	"fmt"
	"os"

	"github.com/confpay/confpay-go/internal/openapicheck"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: openapilint FILE...")
		os.Exit(2)
	}
	failed := false
	for _, name := range os.Args[1:] {
		b, err := os.ReadFile(name)
		if err == nil {
			err = openapicheck.Lint(b)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s:\n%v\n", name, err)
			failed = true
			continue
		}
		fmt.Printf("%s: ok\n", name)
	}
	if failed {
		os.Exit(1)
	}
}
