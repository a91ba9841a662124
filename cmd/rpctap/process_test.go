package main

import (
	"os"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/rpctap/rpctap/tap"
)

// TestProcessSettings: the commands' process-wide settings take effect, and
// the environment's GOMAXPROCS, GOGC and GOMEMLIMIT win over them. (Not
// parallel: it changes the test process's own settings and restores them.)
func TestProcessSettings(t *testing.T) {
	procs := runtime.GOMAXPROCS(0)
	gc := debug.SetGCPercent(100)
	limit := debug.SetMemoryLimit(-1)
	defer func() {
		runtime.GOMAXPROCS(procs)
		debug.SetGCPercent(gc)
		debug.SetMemoryLimit(limit)
	}()
	for _, k := range []string{"GOMAXPROCS", "GOGC", "GOMEMLIMIT"} {
		if v, ok := os.LookupEnv(k); ok {
			t.Setenv(k, v)
			os.Unsetenv(k)
		}
	}

	runtime.GOMAXPROCS(2)
	tuneForwarding()
	if n := runtime.GOMAXPROCS(0); n < tap.MinProcs {
		t.Errorf("record's GOMAXPROCS is %d, want at least %d", n, tap.MinProcs)
	}
	debug.SetMemoryLimit(1 << 40)
	tuneSink()
	if l := debug.SetMemoryLimit(-1); l != sinkMemLimit {
		t.Errorf("sink memory limit %d, want %d", l, sinkMemLimit)
	}
	tuneReplay()
	if g := debug.SetGCPercent(-1); g != 400 {
		t.Errorf("replay GOGC %d, want 400", g)
	}
	debug.SetGCPercent(100)

	t.Setenv("GOMAXPROCS", "3")
	runtime.GOMAXPROCS(3)
	tuneForwarding()
	if n := runtime.GOMAXPROCS(0); n != 3 {
		t.Errorf("GOMAXPROCS=3 in the environment, but record set %d", n)
	}
	t.Setenv("GOGC", "50")
	tuneReplay()
	if g := debug.SetGCPercent(-1); g != 100 {
		t.Errorf("GOGC in the environment, but replay set GOGC %d", g)
	}
}
