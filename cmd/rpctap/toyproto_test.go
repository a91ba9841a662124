package main

// A protocol that exists only in this file, to show that adding a protocol
// touches no shared file: it registers itself with protocol.Register and
// implements the optional interfaces for what rpctap says about its frames
// (summary, chunks, streams-into, failure, transcript, telemetry facts).
// TestToyProtocol records a real toy agent (this test binary, re-executed)
// and reads the cassette with `view --dump` and `export`.
//
// The toy protocol: the parent asks {"type":"ask","n":N,"topic":T,"text":Q};
// the agent streams {"type":"piece","n":N,"text":...} and answers
// {"type":"done","n":N,"status":"ok"|"failed","why":...}; {"type":"bye"}
// ends the session.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/rpctap/rpctap/protocol"
)

type toyProto struct{}

type toyFrame struct {
	Type   string `json:"type"`
	N      int    `json:"n"`
	Topic  string `json:"topic"`
	Text   string `json:"text"`
	Status string `json:"status"`
	Why    string `json:"why"`
}

func toyDecode(frame []byte) (toyFrame, bool) {
	var f toyFrame
	return f, json.Unmarshal(frame, &f) == nil && f.Type != ""
}

func (toyProto) Name() string  { return "toy" }
func (toyProto) MaxFrame() int { return 0 }

func (toyProto) Classify(dir protocol.Dir, frame []byte) protocol.Info {
	f, ok := toyDecode(frame)
	if !ok {
		return protocol.Info{Kind: protocol.Invalid}
	}
	id := ""
	if f.N != 0 {
		id = strconv.Itoa(f.N)
	}
	switch {
	case dir == protocol.FromParent && f.Type == "ask":
		return protocol.Info{Kind: protocol.Request, Method: f.Type, ID: id}
	case dir == protocol.FromParent:
		return protocol.Info{Kind: protocol.Notification, Method: f.Type}
	case f.Type == "done":
		return protocol.Info{Kind: protocol.Response, ID: id}
	}
	return protocol.Info{Kind: protocol.Event, Method: f.Type}
}

func (p toyProto) Validate(dir protocol.Dir, frame []byte, info protocol.Info) []protocol.Violation {
	if f, ok := toyDecode(frame); !ok || !p.known(f.Type) {
		return []protocol.Violation{{Code: "toy.unknown-type", Severity: protocol.SevError, Pointer: "/type",
			Message: "not a toy message"}}
	}
	return nil
}

func (p toyProto) known(t string) bool {
	for _, m := range p.Catalogue() {
		if m == t {
			return true
		}
	}
	return false
}

func (toyProto) Catalogue() []string { return []string{"ask", "bye", "piece", "done"} }

func (toyProto) Summarize(_ protocol.Dir, _ protocol.Info, frame []byte) string {
	f, _ := toyDecode(frame)
	switch f.Type {
	case "ask":
		return f.Topic + ": " + protocol.QuoteWords(f.Text)
	case "piece":
		return protocol.QuoteWords(f.Text)
	case "done":
		if f.Status == "failed" {
			return "failed: " + f.Why
		}
		return f.Status
	}
	return ""
}

func (toyProto) IsChunk(method string, frame []byte) bool {
	if method == "" {
		f, _ := toyDecode(frame)
		method = f.Type
	}
	return method == "piece"
}

func (toyProto) StreamsInto(req string, reqFrame []byte, notif string, frame []byte) bool {
	q, _ := toyDecode(reqFrame)
	f, _ := toyDecode(frame)
	return req == "ask" && notif == "piece" && q.N == f.N
}

func (toyProto) Failed(_ protocol.Dir, _ protocol.Info, frame []byte) bool {
	f, _ := toyDecode(frame)
	return f.Type == "done" && f.Status == "failed"
}

func (toyProto) NewTranscriptFolder() protocol.TranscriptFolder { return toyFolder{} }

type toyFolder struct{}

func (toyFolder) Fold(tr *protocol.Transcript, r protocol.TranscriptFrame) {
	f, _ := toyDecode(r.JSON)
	switch f.Type {
	case "ask":
		tr.StartTurn(r, f.Type, f.Text)
	case "piece":
		tr.Append(r, protocol.EntryText, "", f.Text, true)
	case "done":
		if f.Status == "failed" {
			tr.Append(r, protocol.EntryNote, "", "failed: "+f.Why, false)
		}
		tr.EndTurn(r.T)
	}
}

func (toyProto) CallFacts(method string, frame []byte) protocol.CallFacts {
	f, _ := toyDecode(frame)
	if method != "ask" {
		return protocol.CallFacts{}
	}
	return protocol.CallFacts{Target: f.Topic, Operation: "chat"}
}

func (toyProto) FinishReasons(_ string, response []byte) []string {
	f, _ := toyDecode(response)
	return []string{f.Status}
}

func init() {
	protocol.Register(toyProto{}, 5, func(_ protocol.Dir, frame []byte) int {
		if f, ok := toyDecode(frame); ok && (f.Type == "ask" || f.Type == "piece") {
			return 60
		}
		return 0
	})
	if len(os.Args) > 1 && os.Args[1] == "-rpctap-toy-agent" {
		toyAgent()
		os.Exit(0)
	}
}

// toyAgent answers asks on stdin: two pieces and "ok", or, when the
// question asks it to fail, one piece and "failed".
func toyAgent() {
	in := bufio.NewScanner(os.Stdin)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		f, ok := toyDecode(in.Bytes())
		if !ok || f.Type == "bye" {
			return
		}
		if strings.Contains(f.Text, "fail") {
			out.Encode(toyFrame{Type: "piece", N: f.N, Text: "Let me think. "})
			out.Encode(toyFrame{Type: "done", N: f.N, Status: "failed", Why: "no answer to riddles"})
			continue
		}
		out.Encode(toyFrame{Type: "piece", N: f.N, Text: "The answer "})
		out.Encode(toyFrame{Type: "piece", N: f.N, Text: "to " + f.Topic + " is four."})
		out.Encode(toyFrame{Type: "done", N: f.N, Status: "ok"})
	}
}

func TestToyProtocol(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	parent, err := os.ReadFile(filepath.Join("testdata", "toy", "parent.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cas := filepath.Join(dir, "toy.cassette")
	rec := exec.Command("rpctap", "record", "--protocol", "toy", "-o", cas, "--", exe, "-rpctap-toy-agent")
	rec.Env = rpctapEnv()
	var errb bytes.Buffer
	rec.Stderr = &errb
	stdin, _ := rec.StdinPipe()
	stdout, _ := rec.StdoutPipe()
	if err := rec.Start(); err != nil {
		t.Fatal(err)
	}
	// The parent asks one question at a time: the next ask after the
	// answer to the last.
	answers := bufio.NewScanner(stdout)
	got := 0
	for _, line := range bytes.SplitAfter(parent, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		stdin.Write(line)
		if f, _ := toyDecode(line); f.Type != "ask" {
			continue
		}
		for answers.Scan() {
			got++
			if f, _ := toyDecode(answers.Bytes()); f.Type == "done" {
				break
			}
		}
	}
	stdin.Close()
	for answers.Scan() {
		got++
	}
	if err := rec.Wait(); err != nil {
		t.Fatalf("record: %v: %s", err, errb.String())
	}
	if got != 5 {
		t.Fatalf("the toy agent wrote %d lines, want 5: %s", got, errb.String())
	}
	contains := func(what, got string, wants ...string) {
		t.Helper()
		for _, w := range wants {
			if !strings.Contains(got, w) {
				t.Errorf("%s lacks %q:\n%s", what, w, got)
			}
		}
	}
	lacks := func(what, got string, nots ...string) {
		t.Helper()
		for _, w := range nots {
			if strings.Contains(got, w) {
				t.Errorf("%s has %q:\n%s", what, w, got)
			}
		}
	}
	view := func(keys string) string {
		t.Helper()
		args := []string{"view", "--dump", "160x24"}
		if keys != "" {
			args = append(args, "--keys", keys)
		}
		code, out, errs := viewMain(append(args, cas)...)
		if code != 0 {
			t.Fatalf("view --keys %q: exit %d: %s", keys, code, errs)
		}
		return out
	}

	// The list: each frame summarised by the toy protocol's words.
	list := view("")
	contains("list", list, `sum: "what is two and two"`, `riddle: "please fail this one"`, `"The answer"`,
		`"to sum is four."`, "failed: no answer to riddles", " ok")
	// Chunks hide with c: the pieces are the toy's streamed chunks.
	contains("list without chunks", view("c"), `sum: "what is two and two"`, " ok")
	lacks("list without chunks", view("c"), `"The answer"`, `"Let me think."`)
	// Failure marks: the err filter keeps the failed answer only.
	failed := view("ferr<enter>")
	contains("err filter", failed, "failed: no answer to riddles")
	lacks("err filter", failed, `"The answer"`, " ok ")
	// Flows: each ask with its answer, its pieces folded in.
	flows := view("o")
	contains("flows", flows, `sum: "what is two and two" → ok`, `riddle: "please fail this one" → failed: no answer to riddles`)
	lacks("flows", flows, `"to sum is four."`)
	// The transcript: one turn per ask, the pieces folded into one text.
	tr := view("t")
	order := []string{"turn 1 · ask", "> what is two and two", "The answer to sum is four.", "turn 2 · ask",
		"> please fail this one", "Let me think.", "! failed: no answer to riddles"}
	at := 0
	for _, w := range order {
		i := strings.Index(tr[at:], w)
		if i < 0 {
			t.Fatalf("transcript lacks %q after %q:\n%s", w, tr[:at], tr)
		}
		at += i + len(w)
	}

	export := func(format string) string {
		t.Helper()
		var o, e bytes.Buffer
		if code := Main([]string{"export", "--format", format, cas}, Stdio{In: strings.NewReader(""), Out: &o, Err: &e}); code != 0 {
			t.Fatalf("export --format %s: exit %d: %s", format, code, e.String())
		}
		return o.String()
	}
	// HAR: the failed ask is a 500 whose status text is the toy's summary.
	har := export("har")
	contains("har", har, `"url":"rpctap://toy/ask"`, `"status":200`, `"status":500`, `"statusText":"0 failed: no answer to riddles"`)
	// OTLP: spans named by the toy's target, the failed one an error, the
	// finish reasons from its answers.
	otlp := export("otlp")
	contains("otlp", otlp, `"name":"ask sum"`, `"name":"ask riddle"`, `"gen_ai.operation.name"`, `{"stringValue":"chat"}`,
		`"message":"failed: no answer to riddles"`, `"gen_ai.response.finish_reasons"`, `{"stringValue":"failed"}`)
	lacks("otlp", otlp, `"rpc.system"`) // not JSON-RPC
	// The HTML report: summaries, the failed row, the transcript.
	html := htmlReportText(t, export("html"))
	contains("html", html, `sum: \"what is two and two\"`, "The answer to sum is four.", "Turn 2 · ask")
	if !regexp.MustCompile(`"err":\[[01,]*1`).MatchString(html) {
		t.Error("html: no failed row")
	}
}
