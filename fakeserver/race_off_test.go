//go:build !race

package fakeserver_test

// raceEnabled reports whether the race detector is on.
const raceEnabled = false
