package main

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rpctap/rpctap/internal/testpeers"
)

// recordFaulty runs parent with `rpctap record -o cas --fault RULE -- child`
// as its agent command and returns its output, whether it finished within
// limit, and its exit status.
func recordFaulty(t *testing.T, dir, cas, stdin string, limit time.Duration, parent []string, rule string, child ...string) (string, bool, int) {
	t.Helper()
	argv := append(append(append([]string{}, parent...), rpctapPath(t), "record", "-o", cas, "--fault", rule, "--"), child...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	finished, err := testpeers.RunFor(cmd, limit)
	if err != nil {
		t.Fatal(err)
	}
	code := -1
	if finished {
		code = cmd.ProcessState.ExitCode()
	}
	return out.String(), finished, code
}

// TestRecordFaultsACP: `rpctap record --fault` between the ACP SDK example
// client and agent: the client sees the fault, and the cassette records
// the frame as the client got it, marked with the agent's own frame
// (format 1.2: an intercept event with orig), then a fault event, which
// cat and check read (check judges the agent by what it wrote: no error).
func TestRecordFaultsACP(t *testing.T) {
	t.Parallel()
	client, agent := testpeers.Tool(t, "acpclient"), testpeers.Tool(t, "acpagent")
	for _, c := range []struct {
		name, rule string
		hang       bool
		exit       int
		want       []string
		event      string
		act        string // the intercept event's act before it
		after      string // a record that must follow the fault event
	}{
		{name: "error", rule: "error method=session/prompt", exit: 0,
			want:  []string{"[Client] Error", `"message": "rpctap: injected fault"`},
			event: `"ev":"fault","msg":"error method=session/prompt on frame 12 of out (response session/prompt)"`, act: "rewrite"},
		{name: "kill", rule: "kill frame=2", exit: 1,
			want:  []string{"Connected to agent", "peer disconnected before response"},
			event: `"ev":"fault","msg":"kill frame=2 on frame 2 of out (response session/new)"`, act: "drop", after: `"ev":"exit","signal":"SIGKILL"`},
		{name: "truncate", rule: "truncate method=session/new", hang: true,
			want:  []string{"failed to parse incoming message"},
			event: `"ev":"fault","msg":"truncate method=session/new on frame 2 of out (response session/new)"`, act: "rewrite"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			cas := filepath.Join(dir, "f.cassette")
			limit := 60 * time.Second
			if c.hang {
				limit = 3 * time.Second
			}
			out, finished, code := recordFaulty(t, dir, cas, "1\n", limit, []string{client}, c.rule, agent)
			switch {
			case c.hang && finished:
				t.Fatalf("the client finished (exit %d); it should wait:\n%s", code, out)
			case !c.hang && (!finished || code != c.exit):
				t.Fatalf("finished %v, exit %d, want %d:\n%s", finished, code, c.exit, out)
			}
			for _, w := range append(c.want, "rpctap record: fault injected: "+c.rule) {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			waitEnded(t, cas) // the sink finishes the file after the client kills rpctap
			code, cat, errs := runMain("cat", cas)
			if code != ExitOK {
				t.Fatalf("cat: exit %d: %s", code, errs)
			}
			i := strings.Index(cat, c.event)
			if i < 0 {
				t.Fatalf("no %s in the cassette:\n%s", c.event, cat)
			}
			// Right before the fault event: the frame as the parent got it
			// and its intercept event with the agent's own frame (format
			// 1.2), or, for a frame not forwarded, the drop event with it.
			lines := strings.Split(cat[:i], "\n") // the last is the fault event's own start
			if len(lines) < 3 || !strings.Contains(lines[len(lines)-2], `"ev":"intercept","act":"`+c.act+`","bp":"fault `+c.rule+`","orig":{`) ||
				c.act == "rewrite" && !strings.Contains(lines[len(lines)-3], `"k":"frame","d":"out"`) {
				t.Errorf("the fault event does not follow the %s of a frame of out with its original:\n%s", c.act, cat)
			}
			// The agent died of the kill: its exit, when rpctap lived to
			// see it (the client may SIGKILL rpctap first), says SIGKILL.
			if c.after != "" && strings.Contains(cat[i:], `"ev":"exit"`) && !strings.Contains(cat[i:], c.after) {
				t.Errorf("no %s after the fault:\n%s", c.after, cat)
			}
			// Readers take the new event in their stride.
			if code, _, errs := runMain("check", cas); code != ExitOK {
				t.Errorf("check: exit %d: %s", code, errs)
			}
		})
	}
}

// TestRecordFaultMCP: an error injected into the everything server's
// tools/list answer reaches the MCP SDK listfeatures client, and the
// cassette records the fault: the client's record has the error, the
// server's its own answer, and replay and verify give each what it saw.
func TestRecordFaultMCP(t *testing.T) {
	t.Parallel()
	realPeersRpctap(t)
	dir := t.TempDir()
	cas := filepath.Join(dir, "mcp.cassette")
	client := testpeers.Tool(t, "mcpclient")
	out, finished, code := recordFaulty(t, dir, cas, "", 60*time.Second, []string{client}, "error method=tools/list", testpeers.Tool(t, "mcpserver"))
	if !finished || code != 1 || !strings.Contains(out, `calling "tools/list": rpctap: injected fault`) {
		t.Fatalf("finished %v exit %d:\n%s", finished, code, out)
	}
	waitEnded(t, cas)
	_, cat, _ := runMain("cat", cas)
	if !strings.Contains(cat, `"ev":"fault","msg":"error method=tools/list on frame 2 of out (response tools/list)"`) {
		t.Fatalf("no fault event:\n%s", cat)
	}
	// Each side gets what it saw: replayed, the client gets the error it
	// got; verify holds the server to the answer it wrote (the original).
	r := run(t, dir, "", client, rpctapPath(t), "replay", "--speed", "0", cas)
	if r.code != 1 || !strings.Contains(r.stdout+r.stderr, `calling "tools/list": rpctap: injected fault`) {
		t.Fatalf("replay: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if v := run(t, dir, "", rpctapPath(t), "verify", cas, "--", testpeers.Tool(t, "mcpserver")); v.code != 0 {
		t.Errorf("verify against the server: exit %d\n%s%s", v.code, v.stdout, v.stderr)
	}
	checkClean(t, cas, "mcp")
}

// TestRecordFaultFlagErrors: a bad rule, a missing rule file and faults in
// socket mode are usage errors (exit 2), said on the first line, before
// any child runs.
func TestRecordFaultFlagErrors(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--fault", "explode", "--", "true"}, `rpctap: --fault: fault "explode": unknown action "explode"`},
		{[]string{"--faults", filepath.Join(dir, "missing"), "--", "true"}, "rpctap: --faults: open "},
		{[]string{"--fault", "drop", "--listen", filepath.Join(dir, "l.sock"), "--upstream", filepath.Join(dir, "u.sock")}, "rpctap: record: --fault is for stdio recordings"},
	} {
		args := append([]string{"record", "-o", filepath.Join(dir, "x.cassette")}, c.args...)
		code, _, errs := runMain(args...)
		first, _, _ := strings.Cut(errs, "\n")
		if code != ExitUsage || !strings.Contains(first, c.msg) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, errs, c.msg)
		}
	}
}
