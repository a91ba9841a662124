package main

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rpctap/rpctap/cassette"
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
			// A changed frame: the fault event comes first (a parent that
			// SIGKILLs rpctap once it has read the frame must not leave it
			// out), then the frame as the parent got it and its intercept
			// event with the agent's own frame (format 1.2). A frame not
			// forwarded: its drop event with it, then the fault event.
			intercept := `"ev":"intercept","act":"` + c.act + `","bp":"fault ` + c.rule + `","orig":{`
			if c.act == "rewrite" {
				after := strings.Split(cat[i:], "\n") // the fault event, then what follows
				if len(after) < 3 || !strings.Contains(after[1], `"k":"frame","d":"out"`) || !strings.Contains(after[2], intercept) {
					t.Errorf("the fault event is not followed by the rewritten frame of out and its original:\n%s", cat)
				}
			} else {
				lines := strings.Split(cat[:i], "\n") // the last is the fault event's own start
				if len(lines) < 2 || !strings.Contains(lines[len(lines)-2], intercept) {
					t.Errorf("the fault event does not follow the %s of a frame of out with its original:\n%s", c.act, cat)
				}
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

// TestRecordFaultBothDirectionsBothFramings: record-time faults run where
// rewrites do, on both directions and both framings, with cat as the
// child: a fault on the parent's frame reaches the child (and so the
// echo), a fault on the child's frame reaches the parent, a Content-Length
// message goes with its length recounted, a fault combines with a
// --rewrite rule on the same frame, and the cassette marks each changed,
// dropped or duplicated frame with the sender's own.
func TestRecordFaultBothDirectionsBothFramings(t *testing.T) {
	t.Parallel()
	rp := rpctapPath(t)
	x := `{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":1}}`
	y := `{"jsonrpc":"2.0","method":"y"}`
	corrupted := `{"id":1,"jsonrpc":"2.0","method":"x","params":{"a":"rpctap-corrupted"}}`
	cl := func(s string) string { return "Content-Length: " + itoa(len(s)) + "\r\n\r\n" + s }
	for _, c := range []struct {
		name, in, want string
		args           []string
		marks          []string // d act bp-prefix of each intercept event
		faults         int
	}{
		{name: "parent ndjson", in: x + "\n" + y + "\n", want: corrupted + "\n" + y + "\n",
			args:  []string{"--fault", "corrupt /params/a dir=in"},
			marks: []string{"in rewrite fault corrupt /params/a dir=in"}, faults: 1},
		{name: "both content-length", in: cl(x) + cl(y), want: cl(corrupted),
			args:  []string{"--fault", "corrupt /params/a dir=in", "--fault", "drop method=y"},
			marks: []string{"in rewrite fault corrupt", "out drop fault drop method=y"}, faults: 2},
		{name: "with rewrite", in: cl(x) + cl(y), want: cl(`{"id":1,"jsonrpc":"2.0","method":"x","params":{"a":"rpctap-corrupted","b":2}}`) + cl(y) + cl(y),
			args:   []string{"--rewrite", "dir:in & m=x => set params.b 2", "--fault", "corrupt /params/a dir=in", "--fault", "duplicate method=y"},
			marks:  []string{"in rewrite dir:in & m=x => set params.b 2; fault corrupt /params/a dir=in", "out inject fault duplicate method=y"},
			faults: 2},
	} {
		cas := filepath.Join(t.TempDir(), "f.cassette")
		cmd := exec.Command(rp, append(append([]string{"record", "-q", "-o", cas}, c.args...), "--", "cat")...)
		cmd.Env = rpctapEnv()
		cmd.Stdin = strings.NewReader(c.in)
		var errb bytes.Buffer
		cmd.Stderr = &errb
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: %v\n%s", c.name, err, errb.String())
		}
		if string(out) != c.want {
			t.Errorf("%s: the parent got %q, want %q", c.name, out, c.want)
		}
		if n := strings.Count(errb.String(), "rpctap record: fault injected: "); n != c.faults {
			t.Errorf("%s: %d faults told on stderr, want %d:\n%s", c.name, n, c.faults, errb.String())
		}
		recs, err := readCassette(cas)
		if err != nil {
			t.Fatal(err)
		}
		var marks []string
		faults := 0
		for _, r := range recs {
			switch {
			case r.Ev == cassette.EventFault:
				faults++
			case r.Ev == cassette.EventIntercept:
				marks = append(marks, string(r.D)+" "+r.Act+" "+r.BP)
				if r.Act != "inject" && !bytes.Contains(r.Orig, []byte(`"jsonrpc":"2.0"`)) {
					t.Errorf("%s: intercept event without the sender's frame: %+v", c.name, r)
				}
				if r.Act == "rewrite" && (r.Ref == 0 || recs[r.Ref].Icpt != "rewrite" || recs[r.Ref].Hdr != "" && recs[r.Ref].Hdr != "Content-Length: "+itoa(len(recs[r.Ref].JSON))+"\r\n\r\n") {
					t.Errorf("%s: the changed frame's record: %+v", c.name, recs[r.Ref])
				}
			}
		}
		if faults != c.faults || len(marks) != len(c.marks) {
			t.Errorf("%s: %d fault events, marks %q; want %d, %q", c.name, faults, marks, c.faults, c.marks)
			continue
		}
		for i, m := range c.marks {
			if !strings.HasPrefix(marks[i], m) {
				t.Errorf("%s: mark %q, want %q", c.name, marks[i], m)
			}
		}
	}
}

// TestRecordFaultGoplsHover: a fault on gopls's Content-Length framed
// hover answer (corrupt its text) reaches the LSP driver, which reads the
// message by its recounted Content-Length and shows the corrupted text;
// check judges gopls by what it wrote (clean), verify holds gopls to it,
// and replay gives the driver what it got.
func TestRecordFaultGoplsHover(t *testing.T) {
	t.Parallel()
	rp := realPeersRpctap(t)
	gopls := testpeers.Gopls(t)
	peer := testpeers.Tool(t, "testpeer")
	ws := goModule(t)
	cas := filepath.Join(t.TempDir(), "gopls.cassette")
	res := run(t, ws, "", peer, "lsp-parent", rp, "record", "-o", cas, "--fault", "corrupt /result/contents/value method=textDocument/hover", "--", gopls)
	if res.code != 0 || !strings.Contains(res.stdout, `hover: "rpctap-corrupted"`) || !strings.Contains(res.stdout, "definition: main.go:5:5") {
		t.Fatalf("the driver: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	testpeers.WaitFinished(t, rp, cas, 30*time.Second)
	checkClean(t, cas, "lsp")
	if v := run(t, ws, "", rp, "verify", cas, "--", gopls); v.code != 0 {
		t.Errorf("verify against gopls: exit %d\n%s%s", v.code, v.stdout, v.stderr)
	}
	if rep := run(t, ws, "", peer, "lsp-parent", rp, "replay", "--speed", "0", cas); !strings.Contains(rep.stdout, `hover: "rpctap-corrupted"`) {
		t.Errorf("replay to the driver: exit %d\n%s%s", rep.code, rep.stdout, rep.stderr)
	}
}
