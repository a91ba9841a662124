package replay

import (
	"fmt"
	"io"
	"strings"

	"github.com/rpctap/rpctap/internal/redact"
)

// DivergenceKind says how a live session left the recording.
type DivergenceKind string

const (
	// Unexpected: a live frame that no recorded frame accepts. A request got
	// the protocol's error reply; the recording did not advance.
	Unexpected DivergenceKind = "unexpected"
	// Mismatch: a live frame taken as the recorded one with the same kind,
	// method and (for answers) id, whose body differs. The recording
	// advanced as if it had matched, so one different answer does not stall
	// the rest of the session.
	Mismatch DivergenceKind = "mismatch"
	// Missing: a recorded frame the live side never sent.
	Missing DivergenceKind = "missing"
	// Late: verify only: the child did not send a recorded frame within the
	// timeout, and the next parent frame was sent without it.
	Late DivergenceKind = "late"
	// ExitStatus: verify only: the child exited differently from the recording.
	ExitStatus DivergenceKind = "exit"
)

// Divergence is one place where the live session differs from the cassette.
// Frames in it are redacted (secret fields replaced) and shortened.
type Divergence struct {
	Kind     DivergenceKind `json:"kind"`
	Cassette string         `json:"cassette"`
	Conn     int            `json:"conn,omitempty"`
	// Record is the cassette record number of the recorded frame concerned:
	// the missing frame, the frame matched with differences, or the nearest
	// recorded candidate of an unexpected frame (0 when there is none).
	Record    uint64     `json:"record,omitempty"`
	FrameKind string     `json:"frame_kind,omitempty"` // request, response, notification, ...
	Method    string     `json:"method,omitempty"`
	Live      string     `json:"live,omitempty"`     // the live frame
	Recorded  string     `json:"recorded,omitempty"` // the recorded frame (candidate)
	Diff      []PathDiff `json:"diff,omitempty"`     // recorded -> live, ids and ignored fields left out
	Reply     string     `json:"reply,omitempty"`    // the error reply sent for an unexpected request
	Message   string     `json:"message"`            // one line for a person
}

func (d Divergence) String() string {
	s := fmt.Sprintf("%s: %s", d.Kind, d.Message)
	if len(d.Diff) > 0 {
		s += ": " + d.Diff[0].String()
		if len(d.Diff) > 1 {
			s += fmt.Sprintf(" (+%d more)", len(d.Diff)-1)
		}
	}
	return s
}

func (p PathDiff) String() string {
	path := p.Path
	if path == "" {
		path = "(frame)"
	}
	rec, live := p.Recorded, p.Live
	if rec == "" {
		rec = "(absent)"
	}
	if live == "" {
		live = "(absent)"
	}
	return fmt.Sprintf("%s: %s -> %s", path, rec, live)
}

// writeFirst prints the full first-divergence report.
func writeFirst(w io.Writer, prog string, who string, d Divergence) {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: first divergence from %s", prog, d.Cassette)
	if d.Conn != 0 {
		fmt.Fprintf(&b, " (conn %d)", d.Conn)
	}
	fmt.Fprintf(&b, ": %s\n", d.Message)
	if d.Live != "" {
		fmt.Fprintf(&b, "  %s sent:  %s\n", who, d.Live)
	}
	if d.Record != 0 {
		label := "recorded frame"
		if d.Kind == Unexpected {
			label = "nearest recorded candidate"
		}
		fmt.Fprintf(&b, "  %s: record #%d %s %s\n", label, d.Record, d.FrameKind, d.Method)
		if d.Recorded != "" {
			fmt.Fprintf(&b, "    %s\n", d.Recorded)
		}
	}
	if len(d.Diff) > 0 {
		fmt.Fprintf(&b, "  differences (recorded -> live; ids and ignored fields not compared):\n")
		for _, p := range d.Diff {
			fmt.Fprintf(&b, "    %s\n", p)
		}
	}
	if d.Reply != "" {
		fmt.Fprintf(&b, "  answered with: %s\n", d.Reply)
	}
	io.WriteString(w, b.String())
}

// writeLater prints a one-line report for a divergence after the first.
func writeLater(w io.Writer, prog string, n int, d Divergence) {
	rec := ""
	if d.Record != 0 {
		rec = fmt.Sprintf(" (record #%d)", d.Record)
	}
	fmt.Fprintf(w, "%s: divergence %d%s: %s\n", prog, n, rec, d)
}

// Redaction. Reports show frames, and frames carry secrets; anything under
// one of these keys is replaced by redactedMark before it is printed.

// The rules are the recorder's (package redact), so a report never shows
// what a cassette would not.
const redactedMark = redact.Placeholder

var secretKeys = func() map[string]bool {
	m := map[string]bool{}
	for _, k := range redact.DefaultKeys {
		m[k] = true
	}
	return m
}()

func isSecretKey(k string) bool { return secretKeys[redact.Normalize(k)] }

var reportRedactor = redact.Default()

// redactValue returns v with every secret member replaced; key is the member
// name v was found under ("" for none). The rules follow package redact:
// secret keys, every value of an "env" object, the "value" of each
// {"name","value"} pair in an "env" array or whose name is a secret key.
func redactValue(key string, v any) any {
	if key != "" && isSecretKey(key) {
		if v == nil || v == "" {
			return v
		}
		return redactedMark
	}
	switch x := v.(type) {
	case map[string]any:
		c := make(map[string]any, len(x))
		for k, e := range x {
			c[k] = redactValue(k, e)
		}
		if key == "env" {
			for k, e := range c {
				if e != nil {
					c[k] = redactedMark
				}
			}
		}
		if name, ok := x["name"].(string); ok && x["value"] != nil && isSecretKey(name) {
			c["value"] = redactedMark
		}
		return c
	case []any:
		c := make([]any, len(x))
		for i, e := range x {
			c[i] = redactValue("", e)
			if m, ok := c[i].(map[string]any); ok && key == "env" && m["value"] != nil {
				m["value"] = redactedMark
			}
		}
		return c
	}
	return v
}

// showFrame renders f for a report: redacted, compact, shortened.
func showFrame(f *Frame) string {
	if f == nil {
		return ""
	}
	b, _ := reportRedactor.Line(f.Raw)
	var s string
	if _, ok := decodeJSON(b); ok {
		s = string(b)
	} else {
		s = string(mustJSON(string(b)))
	}
	if len(s) > 400 {
		s = s[:397] + "..."
	}
	return s
}
