//go:build race

package export

// raceEnabled: the race detector makes the 200k-exchange report test 10-20x slower.
const raceEnabled = true
