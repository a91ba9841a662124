//go:build !race

package cassette

const raceEnabled = false
