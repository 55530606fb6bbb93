//go:build !race

package webhookverify

// raceEnabled: see race_test.go.
const raceEnabled = false
