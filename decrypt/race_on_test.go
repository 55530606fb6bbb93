//go:build race

package decrypt

const raceEnabled = true
