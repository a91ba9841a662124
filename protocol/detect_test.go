package protocol

import "testing"

func TestDetectorFallbacks(t *testing.T) {
	// Generic JSON-RPC that no specific protocol claims.
	var frames []DirFrame
	for i := 0; i < DetectFrames+2; i++ {
		frames = append(frames, DirFrame{FromParent, []byte(`{"jsonrpc":"2.0","id":1,"method":"x/y"}`)})
	}
	if got := Detect(frames); got != "jsonrpc" {
		t.Errorf("generic JSON-RPC detected as %q", got)
	}
	if got := Detect([]DirFrame{{FromChild, []byte("hello")}, {FromParent, []byte("1 2 3")}}); got != "raw" {
		t.Errorf("plain text detected as %q", got)
	}
	d := NewDetector()
	for i := 0; i < DetectFrames-1; i++ {
		if _, done := d.Add(FromChild, []byte("log line")); done {
			t.Fatalf("done after %d unclear frames", i+1)
		}
	}
	if name, done := d.Add(FromChild, []byte("log line")); !done || name != "raw" {
		t.Errorf("after %d frames: %q, %v; want raw, done", DetectFrames, name, done)
	}
	if name, done := d.Add(FromChild, []byte(`{"jsonrpc":"2.0","method":"initialize","id":1,"params":{"protocolVersion":1}}`)); !done || name != "raw" {
		t.Errorf("a done Detector changed its mind: %q %v", name, done)
	}
}

// hsProto is jsonrpc whose sessions must open with "hello" from the parent,
// and which allows "ping" before it.
type hsProto struct{ jsonrpcProto }

func (hsProto) HandshakeDir() Dir                         { return FromParent }
func (hsProto) IsHandshake(_ Dir, info Info) bool         { return info.Method == "hello" }
func (hsProto) AllowedBeforeHandshake(_ Dir, i Info) bool { return i.Method == "ping" }

func TestHandshakeRules(t *testing.T) {
	feed := func(frames ...step) []Violation {
		s := NewSession(hsProto{})
		var vs []Violation
		for i, f := range frames {
			_, v := s.Frame(uint64(i+1), f.dir, []byte(f.frame))
			vs = append(vs, v...)
		}
		return append(vs, s.End()...)
	}
	hello := in(`{"jsonrpc":"2.0","method":"hello"}`)
	other := in(`{"jsonrpc":"2.0","method":"work"}`)
	ping := in(`{"jsonrpc":"2.0","method":"ping"}`)
	if vs := feed(ping, hello, other); len(vs) != 0 {
		t.Errorf("clean session: %v", vs)
	}
	vs := feed(other, hello)
	if !hasCode(vs, CodeHandshakeMissing) || !hasCode(vs, CodeHandshakeLate) {
		t.Errorf("late handshake: %v", codes(vs))
	}
	if vs[0].Record != 1 {
		t.Errorf("missing handshake reported at record %d, want 1", vs[0].Record)
	}
	vs = feed(other, other)
	if n := len(vs); n != 1 || vs[0].Code != CodeHandshakeMissing || vs[0].Severity != SevError {
		t.Errorf("no handshake: want one handshake-missing error, got %v", vs)
	}
	// Only the child spoke: End reports the missing handshake.
	vs = feed(out(`{"jsonrpc":"2.0","method":"log"}`))
	if len(vs) != 1 || vs[0].Code != CodeHandshakeMissing {
		t.Errorf("child only: %v", vs)
	}
	if vs := feed(hello, hello); !hasCode(vs, CodeHandshakeRepeated) {
		t.Errorf("repeated handshake: %v", codes(vs))
	}
}
