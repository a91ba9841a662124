//go:build race

package recorder

// raceEnabled: the race detector slows the measuring tests 10-20x; they skip.
const raceEnabled = true
