package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/internal/testpeers"
)

// waitEnded waits until the cassette holds its end record: after rpctap is
// SIGKILLed its recorder process (the sink) still finishes the file. It
// returns the records.
func waitEnded(t *testing.T, cas string) []*cassette.Record {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		recs, err := readCassette(cas)
		if err == nil {
			return recs
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no end record after 30 s: %v", cas, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// readCassette reads every record; an error unless it ends with the end
// record.
func readCassette(path string) ([]*cassette.Record, error) {
	r, err := cassette.Open(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var recs []*cassette.Record
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return recs, nil
		}
		if err != nil {
			return nil, err
		}
		recs = append(recs, rec)
	}
}

// checkJSON runs check --format json on one cassette.
func checkJSON(t *testing.T, cas string) (int, checkReport) {
	t.Helper()
	code, out, errs := runMain("check", "--format", "json", cas)
	var doc struct {
		Files []checkReport `json:"files"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Files) != 1 {
		t.Fatalf("check: exit %d, %v\n%s%s", code, err, out, errs)
	}
	return code, doc.Files[0]
}

func findingsOf(rep checkReport, code string) []checkFinding {
	var out []checkFinding
	for _, f := range rep.Findings {
		if f.Code == code {
			out = append(out, f)
		}
	}
	return out
}

// TestCheckKilledRecorder: `kill -9` of a real `rpctap record` while the
// agent is answering a prompt. The recorder process finishes the cassette
// with an ordinary end record, but the child's exit event is missing, and
// check says so: a warning naming the request in flight and the time of the
// last record. A session the same agent ends normally has its exit event
// and no such finding.
func TestCheckKilledRecorder(t *testing.T) {
	dir := t.TempDir()
	cas := filepath.Join(dir, "killed.cassette")
	cmd := exec.Command("rpctap", "record", "-q", "-o", cas, "--", "rpctap", "demo-agent", "--delay", "200ms")
	cmd.Env = rpctapEnv()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := bufio.NewScanner(stdout)
	lines.Buffer(nil, 1<<20)
	// await reads the agent's lines until one contains want.
	await := func(want string) {
		t.Helper()
		for lines.Scan() {
			if strings.Contains(lines.Text(), want) {
				return
			}
		}
		t.Fatalf("the agent ended before %s: %v", want, lines.Err())
	}
	send := func(s string) {
		t.Helper()
		if _, err := io.WriteString(stdin, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true,"writeTextFile":true}}}}`)
	await(`"id":1`)
	send(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}`)
	await(`"sessionId"`)
	send(`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"sess_demo_0001","prompt":[{"type":"text","text":"hi"}]}}`)
	await(`"session/update"`) // the agent is working on the prompt
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var ee *exec.ExitError
	if err := cmd.Wait(); !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("rpctap record: %v, want killed by SIGKILL", err)
	}

	recs := waitEnded(t, cas)
	var start, exit bool
	for _, r := range recs {
		start = start || r.K == cassette.KindEvent && r.Ev == cassette.EventStart
		exit = exit || r.K == cassette.KindEvent && r.Ev == cassette.EventExit
	}
	last := recs[len(recs)-2] // the session's last record, before the end record
	if !start || exit || recs[len(recs)-1].K != cassette.KindEnd {
		t.Fatalf("cassette: start event %v, exit event %v, last record %s; want a start, no exit, an end record", start, exit, recs[len(recs)-1].K)
	}

	code, rep := checkJSON(t, cas)
	ne := findingsOf(rep, "cassette.no-exit")
	if code != ExitOK || len(ne) != 1 || ne[0].Severity != "warning" {
		t.Fatalf("check: exit %d, no-exit findings %+v; want one warning, exit 0", code, ne)
	}
	if want := "at " + seconds(last.T, false) + "s (record "; !strings.Contains(ne[0].Message, want) || ne[0].Record != last.N ||
		!strings.Contains(ne[0].Message, "1 request in flight") {
		t.Errorf("message %q (record %d): want the last record's time %q, record %d, the prompt in flight", ne[0].Message, ne[0].Record, want, last.N)
	}
	_, text, _ := runMain("check", cas)
	if !strings.Contains(text, "warning cassette.no-exit (1)") {
		t.Errorf("text report:\n%s", text)
	}

	// The same agent, ended by closing its stdin: the exit event is there.
	clean := filepath.Join(dir, "clean.cassette")
	run := exec.Command("rpctap", "demo-client", "--", "rpctap", "record", "-q", "-o", clean, "--", "rpctap", "demo-agent", "--delay", "0s")
	run.Env = rpctapEnv()
	if out, err := run.CombinedOutput(); err != nil {
		t.Fatalf("demo session: %v\n%s", err, out)
	}
	code, rep = checkJSON(t, clean)
	if code != ExitOK || len(findingsOf(rep, "cassette.no-exit")) != 0 || rep.Warnings != 0 {
		t.Errorf("clean session: exit %d, findings %+v", code, rep.Findings)
	}
}

// TestCheckSIGKILLAfterLastReply: the ACP Go SDK example client SIGKILLs
// its agent (here rpctap record) right after reading the last reply, as
// many parents end a session. The cassette has no exit event; check says so
// as info, with no warning: the session was valid and complete.
func TestCheckSIGKILLAfterLastReply(t *testing.T) {
	rp := realPeersRpctap(t)
	dir := t.TempDir()
	cas := filepath.Join(dir, "acp.cassette")
	testpeers.Record(t, rp, dir, cas, "1\n", 60*time.Second, []string{testpeers.Tool(t, "acpclient")}, testpeers.Tool(t, "acpagent"))
	waitEnded(t, cas)
	code, rep := checkJSON(t, cas)
	ne := findingsOf(rep, "cassette.no-exit")
	if code != ExitOK || rep.Errors != 0 || rep.Warnings != 0 || len(ne) != 1 || ne[0].Severity != "info" {
		t.Fatalf("check: exit %d, %d errors, %d warnings, no-exit %+v; want info only\n%+v", code, rep.Errors, rep.Warnings, ne, rep.Findings)
	}
}
