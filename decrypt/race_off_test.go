//go:build !race

package decrypt

const raceEnabled = false
