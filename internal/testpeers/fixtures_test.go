package testpeers

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "record testdata/traffic afresh from the SDK peers")

// A recorded fixture: parent and child programs (keys of Programs plus
// arguments) and what the parent reads on its stdin.
type fixtureRun struct {
	name   string
	parent []string
	child  []string
	stdin  string
}

var fixtureRuns = []fixtureRun{
	{"acp-go", []string{"acpclient"}, []string{"acpagent"}, "1\n"},
	{"mcp-go-everything", []string{"mcpclient"}, []string{"mcpserver"}, ""},
	{"mcp-go-session", []string{"testpeer", "mcp-parent"}, []string{"mcpserver"}, ""},
	{"synaps-session", []string{"testpeer", "synaps-parent"}, []string{"testpeer", "synaps-child"}, ""},
	{"opi-session", []string{"testpeer", "opi-parent"}, []string{"testpeer", "opi-child"}, ""},
}

// TestFixtures keeps testdata/traffic honest. With -update it records each
// fixture run afresh: the parent starts `sh -c 'tee IN | CHILD | tee OUT'`
// as its child, the way ../shared/traffic was captured, so only the order
// within each direction is kept. Without -update it runs the same peers
// again and checks that they still speak the committed fixture's sequence of
// methods, so a peer upgrade that changes the traffic is noticed.
func TestFixtures(t *testing.T) {
	dir := TestdataTraffic()
	for _, f := range fixtureRuns {
		t.Run(f.name, func(t *testing.T) {
			in, out := recordRun(t, f)
			if *update {
				if err := os.WriteFile(filepath.Join(dir, f.name+".in"), in, 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, f.name+".out"), out, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			wantIn, wantOut := Fixture(t, f.name)
			if got, want := methods(splitLines(in)), methods(wantIn); got != want {
				t.Errorf("%s.in: the peers now send\n  %s\nthe fixture has\n  %s\n(go test ./internal/testpeers -run TestFixtures -update)", f.name, got, want)
			}
			if got, want := methods(splitLines(out)), methods(wantOut); got != want {
				t.Errorf("%s.out: the peers now send\n  %s\nthe fixture has\n  %s", f.name, got, want)
			}
		})
	}
}

// recordRun runs one fixture and returns the bytes of each direction, with
// the run's temporary directory written as /home/dev1/NAME.
func recordRun(t *testing.T, f fixtureRun) (in, out []byte) {
	t.Helper()
	tmp := t.TempDir()
	inFile, outFile := filepath.Join(tmp, "in"), filepath.Join(tmp, "out")
	work := filepath.Join(tmp, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	child := append([]string{Tool(t, f.child[0])}, f.child[1:]...)
	tee := append([]string{"sh", "-c", `in=$1 out=$2; shift 2; tee "$in" | "$@" | tee "$out"`, "tee", inFile, outFile}, child...)
	argv := append(append([]string{Tool(t, f.parent[0])}, f.parent[1:]...), tee...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = work
	cmd.Stdin = strings.NewReader(f.stdin)
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if finished, err := RunFor(cmd, 60*time.Second); err != nil {
		t.Fatal(err)
	} else if !finished {
		t.Fatalf("%v did not finish:\n%s", argv, log.String())
	}
	in, err1 := os.ReadFile(inFile)
	out, err2 := os.ReadFile(outFile)
	if err1 != nil || err2 != nil {
		t.Fatalf("capture missing: %v %v\n%s", err1, err2, log.String())
	}
	if len(in) == 0 || len(out) == 0 {
		t.Fatalf("%s: empty capture (in %d bytes, out %d bytes):\n%s", f.name, len(in), len(out), log.String())
	}
	home := []byte("/home/dev1/" + f.name)
	for _, p := range []string{work, tmp} {
		in = bytes.ReplaceAll(in, []byte(p), home)
		out = bytes.ReplaceAll(out, []byte(p), home)
	}
	return in, out
}

// methods summarises a direction as the sequence of its frames' methods
// (JSON-RPC method, or "type"), "response" for JSON-RPC responses: what a
// peer upgrade would change, unlike ids, session ids and timestamps.
func methods(lines [][]byte) string {
	var seq []string
	for _, l := range lines {
		var env struct {
			Method string          `json:"method"`
			Type   string          `json:"type"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		switch {
		case json.Unmarshal(l, &env) != nil:
			seq = append(seq, "(text)")
		case env.Method != "":
			seq = append(seq, env.Method)
		case env.Type != "":
			seq = append(seq, env.Type)
		case env.Result != nil || env.Error != nil:
			seq = append(seq, "response")
		default:
			seq = append(seq, "?")
		}
	}
	return strings.Join(seq, " ")
}

func TestFixtureNamesListed(t *testing.T) {
	entries, err := os.ReadDir(TestdataTraffic())
	if err != nil {
		t.Fatal(err)
	}
	recorded := map[string]bool{}
	for _, f := range fixtureRuns {
		recorded[f.name] = true
	}
	for _, n := range FixtureNames() {
		if !recorded[n] && !handWritten[n] {
			t.Errorf("testdata/traffic/%s is neither recorded by TestFixtures nor listed as hand-written", n)
		}
	}
	if len(entries) != 2*len(FixtureNames()) {
		t.Errorf("testdata/traffic holds %d files for %d pairs: every fixture is a .in/.out pair", len(entries), len(FixtureNames()))
	}
}
