package protocol

import (
	"fmt"
	"path/filepath"
	"testing"
)

// TestJudge: frames are held until the protocol is decided, then judged in
// recorded order; a fallback named by the recording wins over a generic
// guess; a forced protocol is used from the first frame.
func TestJudge(t *testing.T) {
	steps := loadSession(t, filepath.Join("testdata", "mcp", "valid.session"))
	run := func(j *Judge) {
		for i, st := range steps {
			j.Frame(uint64(i+1), st.dir, nil, st.frame)
		}
		if vs := j.End(); len(vs) != 0 {
			t.Errorf("End: %s", fmtViolations(vs))
		}
	}
	var got []uint64
	j := NewJudge(nil, "", func(v Verdict) {
		got = append(got, v.Record)
		for _, x := range v.Violations {
			if x.Severity != SevInfo {
				t.Errorf("record %d: %s %s", v.Record, x.Code, x.Message)
			}
		}
	})
	run(j)
	if name, src := j.Protocol(); name != "mcp" || src != "detected" {
		t.Errorf("Protocol() = %q, %q", name, src)
	}
	if len(got) != len(steps) {
		t.Fatalf("%d verdicts for %d frames", len(got), len(steps))
	}
	for i, r := range got {
		if r != uint64(i+1) {
			t.Fatalf("verdicts out of order: %v", got)
		}
	}

	// Plain JSON-RPC frames in a cassette whose header says acp: acp.
	j = NewJudge(nil, "jsonrpc", func(Verdict) {})
	j.SetFallback("acp")
	j.Frame(1, FromParent, nil, []byte(`{"jsonrpc":"2.0","id":1,"method":"x"}`))
	j.End()
	if name, src := j.Protocol(); name != "acp" || src != "header" {
		t.Errorf("with a fallback: Protocol() = %q, %q", name, src)
	}

	// Forced: judged at once, before any detection could decide.
	p, _ := Lookup("lsp")
	n := 0
	j = NewJudge(p, "", func(Verdict) { n++ })
	j.Frame(1, FromParent, []byte("Content-Length: 2\r\n\r\n"), []byte(`{}`))
	if name, src := j.Protocol(); n != 1 || name != "lsp" || src != "flag" {
		t.Errorf("forced: %d verdicts, Protocol() = %q, %q", n, name, src)
	}
}

func TestDirOf(t *testing.T) {
	if DirOf("in") != FromParent || DirOf("out") != FromChild || DirOf(FromParent.String()) != FromParent || DirOf(FromChild.String()) != FromChild {
		t.Error("DirOf does not read back Dir.String")
	}
}

// TestHolder: items are held in order until the Detector decides, at most
// DetectFrames of them, and taken once.
func TestHolder(t *testing.T) {
	h := NewHolder[int]()
	for i := 0; i < 3; i++ {
		if name, decided := h.Add(FromChild, []byte(`{"unknown":true}`)); decided || name != "raw" {
			t.Fatalf("frame %d: %q decided=%v", i, name, decided)
		}
		h.Hold(i)
	}
	name, decided := h.Add(FromParent, []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`))
	if !decided || name != "acp" {
		t.Fatalf("the ACP initialize: %q decided=%v", name, decided)
	}
	if got := fmt.Sprint(h.Take()); got != "[0 1 2]" {
		t.Errorf("held %s, want [0 1 2]", got)
	}
	if len(h.Take()) != 0 {
		t.Error("Take gave the items twice")
	}
	full := NewHolder[int]()
	for i := 0; i < DetectFrames+3; i++ {
		full.Hold(i)
	}
	if n := len(full.Take()); n != DetectFrames {
		t.Errorf("held %d items, want at most %d", n, DetectFrames)
	}
}
