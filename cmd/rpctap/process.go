package main

import (
	"os"
	"runtime"
	"runtime/debug"

	"github.com/rpctap/rpctap/tap"
)

// Process-wide settings, in one place. Each command that wants one calls it
// before it starts its work; library packages never change them (they say
// in their docs what they run best with). The figures behind each value are
// in docs/performance.md. GOMAXPROCS, GOGC and GOMEMLIMIT in the environment
// always win.

// tuneForwarding is for a process that runs a tap (record, demo): each pump
// sleeps in a system call on its own locked thread, and a thread in a system
// call keeps its P until the runtime's monitor takes it back, which can take
// milliseconds; with at least tap.MinProcs Ps a pump waking up always finds
// an idle one, so three pumps asleep never hold up the fourth or Wait.
func tuneForwarding() {
	if os.Getenv("GOMAXPROCS") != "" {
		return
	}
	if n := runtime.GOMAXPROCS(0); n < tap.MinProcs {
		runtime.GOMAXPROCS(tap.MinProcs)
	}
}

// sinkNice is the recorder process's niceness: it yields the CPU to the
// child, the parent and rpctap's forwarding (it only has to keep up on
// average; its pipes absorb bursts).
const sinkNice = 10

// tuneSink is for the recorder process (__sink): a soft memory limit makes
// the collector work harder rather than let the heap grow past ~16 MiB (a
// 16 MiB line still fits, at some GC cost); the limit, not the live heap
// (~7 MB at its high on the agent mix, 12 MB before issue 23), sets the
// sink's peak: bench/wire, agent mix, 19 MiB -> 16 MiB took the sink's
// VmHWM from 23.9 to 21.1 MiB for CPU within the noise; 12 MiB reached
// 18.5 MiB but cost 85 % more CPU (the live heap's high is above it).
func tuneSink() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(sinkMemLimit)
	}
}

// sinkMemLimit is the sink's soft memory limit (see tuneSink).
const sinkMemLimit = 16 << 20

// tuneReplay is for a streaming replay: it keeps a few MiB live and
// allocates as it decodes the cassette, so with the default GOGC the
// collector runs every few MiB and its pauses and assists land on replies.
// A higher GOGC under a soft memory limit collects less often while keeping
// the heap in the RSS budget.
func tuneReplay() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(20 << 20)
	}
}

// replayPrefetchNice is the niceness of replay's cassette reader thread
// (replay.WithPrefetchNice): decoding a data frame takes a millisecond or
// two of CPU at a time, and at a low priority it runs when the replay and
// its parent leave a core idle instead of taking turns with them.
const replayPrefetchNice = 19
