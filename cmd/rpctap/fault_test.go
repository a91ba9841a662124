package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rpctap/rpctap/internal/testpeers"
)

// TestReplayFaultsSeenByRealParents runs the ACP Go SDK example client (and
// the MCP SDK listfeatures client) against `rpctap replay --fault ...` and
// checks that each kind of fault reaches the real parent as that fault.
func TestReplayFaultsSeenByRealParents(t *testing.T) {
	t.Parallel()
	rp := realPeersRpctap(t)
	client := testpeers.Tool(t, "acpclient")
	acp, _ := filepath.Abs(filepath.Join("..", "..", "replay", "testdata", "acp-example.cassette"))
	type result struct {
		out      string
		finished bool
		code     int
		took     time.Duration
	}
	runACP := func(t *testing.T, faults ...string) result {
		args := []string{rp, "replay", "--speed", "0"}
		for _, f := range faults {
			args = append(args, "--fault", f)
		}
		cmd := exec.Command(client, append(args, acp)...)
		cmd.Dir = t.TempDir()
		cmd.Stdin = strings.NewReader("1\n")
		var b bytes.Buffer
		cmd.Stdout, cmd.Stderr = &b, &b
		start := time.Now()
		finished, err := testpeers.RunFor(cmd, 6*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		code := -1
		if finished {
			code = cmd.ProcessState.ExitCode()
		}
		return result{b.String(), finished, code, time.Since(start)}
	}
	clean := runACP(t)
	if !clean.finished || clean.code != 0 || !strings.Contains(clean.out, "Agent completed") {
		t.Fatalf("without faults the client completes:\n%s", clean.out)
	}
	cases := []struct {
		name  string
		fault string
		check func(r result) bool
	}{
		{"drop: the client waits for an answer that never comes", "drop kind=response method=session/prompt",
			func(r result) bool { return !r.finished && !strings.Contains(r.out, "Agent completed") }},
		{"error: the client gets the protocol's error", "error method=session/new",
			func(r result) bool {
				return r.code != 0 && strings.Contains(r.out, "rpctap fault injected: error method=session/new")
			}},
		{"kill: the agent is gone mid-session", "kill frame=3",
			func(r result) bool {
				return strings.Contains(r.out, "peer disconnected") && !strings.Contains(r.out, "Agent completed")
			}},
		{"truncate: the client cannot parse the answer", "truncate method=initialize",
			func(r result) bool { return strings.Contains(r.out, "failed to parse incoming message") }},
		{"corrupt: a field of the wrong type", "corrupt /result/protocolVersion",
			func(r result) bool {
				return strings.Contains(r.out, "cannot unmarshal string") && strings.Contains(r.out, "protocolVersion") && !strings.Contains(r.out, "Agent completed")
			}},
		{"duplicate: the client sees a message chunk twice", "duplicate method=session/update frame=4",
			func(r result) bool {
				return r.code == 0 && strings.Count(r.out, "I'll help you with that") == 2*strings.Count(clean.out, "I'll help you with that")
			}},
		{"delay: the answer comes late", "delay 1500ms method=initialize",
			func(r result) bool { return r.code == 0 && r.took >= 1500*time.Millisecond }},
		{"dir=out: the fake child's answers", "error method=session/new dir=out",
			func(r result) bool { return r.code != 0 && strings.Contains(r.out, "rpctap fault injected") }},
		{"dir=in: never what a fake child sends, so refused before the replay starts", "error method=session/new dir=in",
			func(r result) bool {
				return strings.Contains(r.out, "can never fire: replay sends only dir=out frames") && !strings.Contains(r.out, "Agent completed")
			}},
		{"split: one frame in two writes is still one frame", "split method=session/new",
			func(r result) bool { return r.code == 0 && strings.Contains(r.out, "Agent completed") }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := runACP(t, c.fault)
			if !c.check(r) {
				t.Errorf("--fault %q: finished %v, exit %d, took %v:\n%s", c.fault, r.finished, r.code, r.took, r.out)
			}
		})
	}

	// The MCP SDK client through a rule file: tools/list answered with an
	// error.
	t.Run("mcp rule file", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		cas := filepath.Join(dir, "mcp.cassette")
		testpeers.Record(t, rp, dir, cas, "", 60*time.Second, []string{testpeers.Tool(t, "mcpclient")}, testpeers.Tool(t, "mcpserver"))
		rules := filepath.Join(dir, "faults")
		os.WriteFile(rules, []byte("# the server cannot list its tools\nerror method=tools/list\n"), 0o644)
		r := run(t, dir, "", testpeers.Tool(t, "mcpclient"), rp, "replay", "--speed", "0", "--faults", rules, cas)
		if !strings.Contains(r.stdout+r.stderr, "rpctap fault injected: error method=tools/list") {
			t.Errorf("the MCP client did not see the injected error: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
	})
}

// TestFaultFlags: bad rules are one line and exit 2.
func TestFaultFlags(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad")
	os.WriteFile(bad, []byte("drop\nexplode now\n"), 0o644)
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"replay", "--fault", "explode", "x.cassette"}, `unknown action "explode"`},
		{[]string{"replay", "--fault", "delay soon", "x.cassette"}, `"soon" is not a duration`},
		{[]string{"replay", "--fault", "drop frame=0", "x.cassette"}, "frame must be a positive number"},
		{[]string{"replay", "--fault", "drop mthod=x", "x.cassette"}, `unknown selector "mthod"`},
		{[]string{"replay", "--fault", "corrupt result", "x.cassette"}, "corrupt needs a JSON pointer"},
		{[]string{"replay", "--fault", "drop dir=up", "x.cassette"}, "dir must be in (parent -> child) or out"},
		{[]string{"record", "--fault", "drop dir=sideways", "-o", "x.cassette", "--", "true"}, "dir must be in (parent -> child) or out"},
		{[]string{"replay", "--faults", bad, "x.cassette"}, bad + ":2: fault"},
		{[]string{"verify", "--fault", "kill", "--fault", "drop kind=answer", "x.cassette", "--", "true"}, "kind must be"},
	} {
		code, _, errs := runMain(c.args...)
		if code != ExitUsage || !strings.Contains(errs, c.msg) || strings.Count(strings.TrimSpace(errs), "\n") > 1 {
			t.Errorf("%v: exit %d, %q; want exit 2 with %q", c.args, code, errs, c.msg)
		}
	}
}
