package export

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/rpctap/rpctap/internal/linked/linkedfix"
)

type otlpSpan struct {
	TraceID, SpanID, ParentSpanID, Name string
	File                                string // its resource's rpctap.cassette
}

// readOTLP reads an OTLP/JSON document's spans (and fails on one that
// is not JSON).
func readOTLP(t *testing.T, b []byte) []otlpSpan {
	t.Helper()
	var d struct {
		ResourceSpans []struct {
			Resource struct {
				Attributes []struct {
					Key   string
					Value struct{ StringValue string }
				}
			}
			ScopeSpans []struct{ Spans []otlpSpan }
		}
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, b)
	}
	var out []otlpSpan
	for _, rs := range d.ResourceSpans {
		file := ""
		for _, a := range rs.Resource.Attributes {
			if a.Key == "rpctap.cassette" {
				file = filepath.Base(a.Value.StringValue)
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, sp := range ss.Spans {
				sp.File = file
				out = append(out, sp)
			}
		}
	}
	return out
}

func spanNamed(spans []otlpSpan, file, name string) otlpSpan {
	for _, s := range spans {
		if s.File == file && s.Name == name {
			return s
		}
	}
	return otlpSpan{}
}

// A deep recording's set exports as one trace, each cassette a resource:
// each MCP tools/call span is a child of the execute_tool span of the ACP
// tool call that encloses it; the MCP servers' start-up and the log
// message outside any tool call are children of the session/new span
// that spawned them. Span ids do not collide across the cassettes.
func TestRunLinkedOneTrace(t *testing.T) {
	set, err := linkedfix.Write(t.TempDir(), linkedfix.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	w := NewOTLP(&b, false)
	rep, kids, err := RunLinked(set.Parent, w, Options{}, nil)
	if err != nil || len(rep.Damaged) != 0 || len(kids) != 2 || kids[0].Err != nil || kids[1].Err != nil {
		t.Fatalf("RunLinked: %v %+v %+v", err, rep, kids)
	}
	spans := readOTLP(t, b.Bytes())
	ids := map[string]bool{}
	for _, s := range spans {
		if s.TraceID != spans[0].TraceID {
			t.Errorf("span %s of %s is in trace %s, not %s", s.Name, s.File, s.TraceID, spans[0].TraceID)
		}
		if ids[s.SpanID] {
			t.Errorf("span id %s twice", s.SpanID)
		}
		ids[s.SpanID] = true
	}
	if len(spans) != 12+5+4 {
		t.Errorf("%d spans, want 21 (12 ACP, 5 of files, 4 of git)", len(spans))
	}
	p, f, g := linkedfix.Parent, linkedfix.Files, linkedfix.Git
	newSpan := spanNamed(spans, p, "session/new")
	for _, c := range []struct{ file, name, parent string }{
		{f, "tools/call read_file", spanNamed(spans, p, "execute_tool Read README.md").SpanID},
		{g, "tools/call status", spanNamed(spans, p, "execute_tool git status").SpanID},
		{f, "initialize", newSpan.SpanID},
		{g, "tools/list", newSpan.SpanID},
		{f, "notifications/message", newSpan.SpanID},
	} {
		s := spanNamed(spans, c.file, c.name)
		if s.SpanID == "" || c.parent == "" || s.ParentSpanID != c.parent {
			t.Errorf("%s %s: parent %q, want %q", c.file, c.name, s.ParentSpanID, c.parent)
		}
	}

	// --alone: the parent's spans only, as before linking existed.
	var alone, plain bytes.Buffer
	if err := Run(set.Parent, NewOTLP(&alone, false), Options{}, nil); err != nil {
		t.Fatal(err)
	}
	os.Remove(set.Files)
	os.Remove(set.Git)
	if _, kids, err := RunLinked(set.Parent, NewOTLP(&plain, false), Options{}, nil); err != nil || kids != nil {
		t.Fatal(err, kids)
	}
	if !bytes.Equal(alone.Bytes(), plain.Bytes()) || len(readOTLP(t, alone.Bytes())) != 12 {
		t.Errorf("without linked cassettes RunLinked is RunReport")
	}
}

// A linked cassette cut off by a killed recorder: its complete records
// are exported into the trace, the early end reported, the output valid.
func TestRunLinkedCutChild(t *testing.T) {
	set, err := linkedfix.Write(t.TempDir(), linkedfix.Options{CutFiles: true})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	_, kids, err := RunLinked(set.Parent, NewOTLP(&b, false), Options{}, nil)
	if err != nil || len(kids) != 2 {
		t.Fatal(err, kids)
	}
	if kids[0].Truncated == nil {
		t.Errorf("the cut files cassette's early end is not reported: %+v", kids[0])
	}
	spans := readOTLP(t, b.Bytes())
	if s := spanNamed(spans, linkedfix.Files, "initialize"); s.ParentSpanID == "" {
		t.Errorf("the cut cassette's spans: %+v", spans)
	}
}
