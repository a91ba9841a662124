package protocol

import (
	"encoding/json"
	"testing"
)

// FuzzJSONRPCFamily: whatever the bytes, Classify, Validate and a Session
// never panic, and a frame that is not JSON never gets past the Session
// with a JSON-RPC kind.
func FuzzJSONRPCFamily(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"plan","entries":[{"content":"x","priority":"high","status":"pending"}]}}}`,
		`{"jsonrpc":"2.0","id":"a\"b","method":"tools/call","params":{"name":"x","arguments":{"a":[1,{"b":"\\u00e9"}]}}}`,
		"\x1b[31m{\"jsonrpc\":\"2.0\",\"method\":\"x\"}",
		`{"a":`, `[1,2`, `"\`, ``, `{"jsonrpc":"2.0","id":1e400,"error":{"code":1.5,"message":7}}`,
	} {
		f.Add(s, true)
		f.Add(s, false)
	}
	protos := []Protocol{acpProto{}, mcpProto{}, jsonrpcProto{}}
	f.Fuzz(func(t *testing.T, frame string, child bool) {
		dir := FromParent
		if child {
			dir = FromChild
		}
		b := []byte(frame)
		for _, p := range protos {
			info := p.Classify(dir, b)
			info.Method = "session/prompt"
			p.Validate(dir, b, info)
			info.Method = "tools/call"
			p.Validate(dir, b, info)
			s := NewSession(p)
			got, _ := s.Frame(1, dir, b)
			if rest, _ := stripANSI(b); !json.Valid(b) && !json.Valid(rest) && got.Kind != Invalid {
				t.Fatalf("%s: non-JSON frame %q classified as %+v", p.Name(), b, got)
			}
			s.Frame(2, 1-dir, b)
			s.End()
		}
		d := NewDetector()
		d.Add(dir, b)
		stripANSI(b)
	})
}
