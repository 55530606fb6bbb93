// Package testbudget holds the one switch between the quick test budgets
// that go test ./... uses by default and the full budgets CI runs.
//
// A few tests draw random work (linearizability histories, concurrent
// payments): more work finds rarer bugs, less keeps the README's go test
// ./... near half a minute on two cores. Such a test asks Pick for its
// budget, and CI sets CONFPAY_TEST_FULL=1:
//
//	CONFPAY_TEST_FULL=1 go test ./...
//
// Every guarantee is checked in both modes; the full mode checks it on
// more random input.
package testbudget

import "os"

// EnvVar is the environment variable that selects the full budgets when it
// is "1".
const EnvVar = "CONFPAY_TEST_FULL"

// Full reports whether the full budgets are selected.
func Full() bool { return os.Getenv(EnvVar) == "1" }

// Pick returns full when the full budgets are selected, else quick.
func Pick(quick, full int) int {
	if Full() {
		return full
	}
	return quick
}
