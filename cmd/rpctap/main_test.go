package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain lets testscript run rpctap in-process as a real command: scripts
// call `rpctap ...` and get this binary re-executed with Main.
//
// The end-to-end tests spend their time waiting on real peers (the ACP SDK
// example agent pauses about a second between updates), not on the CPU, so
// the parallel ones run 8 at a time by default even on 2 cores; an explicit
// -parallel still wins (it is parsed after this default is set).
func TestMain(m *testing.M) {
	if f := flag.Lookup("test.parallel"); f != nil {
		f.Value.Set("8")
	}
	testscript.Main(m, map[string]func(){
		"rpctap": func() {
			os.Exit(Main(os.Args[1:], Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}))
		},
		"rpctap-wrap": func() { os.Exit(wrapMain(os.Args[1:])) }, // the peer matrix's tee (peer_wrap_test.go)
	})
}

// TestScripts runs every testdata/script/*.txtar end to end. Scripts named
// after their command (cat_*.txtar, record_*.txtar, ...). $SHARED points at
// ../shared; scripts that need it start with
// `[!shared] skip 'needs ../shared beside the checkout'`.
func TestScripts(t *testing.T) {
	shared, _ := filepath.Abs(filepath.Join("..", "..", "..", "shared"))
	testscript.Run(t, testscript.Params{
		Dir:  "testdata/script",
		Cmds: map[string]func(*testscript.TestScript, bool, []string){"htmldata": htmldataCmd},
		Setup: func(env *testscript.Env) error {
			env.Setenv("SHARED", shared)
			env.Setenv("RPCTAP_DIR", filepath.Join(env.WorkDir, "cassettes"))
			return nil
		},
		Condition: func(cond string) (bool, error) {
			if cond == "shared" {
				_, err := os.Stat(filepath.Join(shared, "DESIGN.md"))
				return err == nil, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
	})
}
