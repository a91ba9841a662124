package protocol

import (
	"fmt"
	"strings"
	"testing"
)

const (
	lspInit     = `in {"jsonrpc":"2.0","id":1,"method":"initialize","params":{"processId":1,"rootUri":"file:///w","capabilities":{}}}`
	lspInitRes  = `out {"jsonrpc":"2.0","id":1,"result":{"capabilities":{"textDocumentSync":1}}}`
	lspInitd    = `in {"jsonrpc":"2.0","method":"initialized","params":{}}`
	lspShutdown = `in {"jsonrpc":"2.0","id":9,"method":"shutdown"}`
	lspShutRes  = `out {"jsonrpc":"2.0","id":9,"result":null}`
)

// TestLSPBroken: each lifecycle and shape rule fires where the session
// breaks it, and nowhere before.
func TestLSPBroken(t *testing.T) {
	p, _ := Lookup("lsp")
	open := []string{lspInit, lspInitRes, lspInitd}
	testBroken(t, p, []brokenCase{
		{name: "hover before initialize", frame: `in {"jsonrpc":"2.0","id":1,"method":"textDocument/hover","params":{"textDocument":{"uri":"file:///a"},"position":{"line":0,"character":0}}}`, code: CodeHandshakeMissing},
		{name: "client request while initialize is pending", prefix: []string{lspInit}, frame: `in {"jsonrpc":"2.0","id":2,"method":"workspace/symbol","params":{"query":"x"}}`, suffix: []string{lspInitRes, `out {"jsonrpc":"2.0","id":2,"result":[]}`}, code: CodeLSPEarly},
		{name: "server request while initialize is pending", prefix: []string{lspInit}, frame: `out {"jsonrpc":"2.0","id":1,"method":"workspace/configuration","params":{"items":[]}}`, suffix: []string{`in {"jsonrpc":"2.0","id":1,"result":[]}`, lspInitRes}, code: CodeLSPEarly},
		{name: "initialized before the result", prefix: []string{lspInit}, frame: lspInitd, suffix: []string{lspInitRes}, code: CodeLSPInitializedLate},
		{name: "initialized twice", prefix: open, frame: lspInitd, code: CodeLSPInitializedLate, sev: SevWarning},
		{name: "request after shutdown", prefix: append(append([]string{}, open...), lspShutdown, lspShutRes), frame: `in {"jsonrpc":"2.0","id":10,"method":"workspace/symbol","params":{"query":"x"}}`, code: CodeLSPAfterShutdown},
		{name: "notification after shutdown", prefix: append(append([]string{}, open...), lspShutdown), frame: `in {"jsonrpc":"2.0","method":"textDocument/didClose","params":{"textDocument":{"uri":"file:///a"}}}`, suffix: []string{lspShutRes}, code: CodeLSPAfterShutdown},
		{name: "progress on an unknown token", prefix: open, frame: `out {"jsonrpc":"2.0","method":"$/progress","params":{"token":"zz","value":{"kind":"begin","title":"x"}}}`, code: CodeLSPProgressToken, sev: SevWarning},
		{name: "progress report before begin", prefix: append(append([]string{}, open...), `out {"jsonrpc":"2.0","id":1,"method":"window/workDoneProgress/create","params":{"token":1}}`, `in {"jsonrpc":"2.0","id":1,"result":null}`),
			frame: `out {"jsonrpc":"2.0","method":"$/progress","params":{"token":1,"value":{"kind":"report"}}}`, code: CodeLSPProgressOrder, sev: SevWarning},
		{name: "cancel with an object id", prefix: open, frame: `in {"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":{}}}`, code: "lsp.wrong-type"},
		{name: "hover without position", prefix: open, frame: `in {"jsonrpc":"2.0","id":2,"method":"textDocument/hover","params":{"textDocument":{"uri":"file:///a"}}}`, suffix: []string{`out {"jsonrpc":"2.0","id":2,"result":null}`}, code: "lsp.missing-field"},
		{name: "server sends a client request", prefix: open, frame: `out {"jsonrpc":"2.0","id":5,"method":"textDocument/hover","params":{"textDocument":{"uri":"file:///a"},"position":{"line":0,"character":0}}}`, suffix: []string{`in {"jsonrpc":"2.0","id":5,"result":null}`}, code: "lsp.wrong-direction"},
		{name: "response to an id the server never sent", prefix: open, frame: `in {"jsonrpc":"2.0","id":1,"result":null}`, code: CodeUnknownResponseID},
	})
}

func TestDAPBroken(t *testing.T) {
	p, _ := Lookup("dap")
	init := `in {"seq":1,"type":"request","command":"initialize","arguments":{"adapterID":"x"}}`
	res := `out {"seq":1,"type":"response","request_seq":1,"success":true,"command":"initialize"}`
	testBroken(t, p, []brokenCase{
		{name: "launch first", frame: `in {"seq":1,"type":"request","command":"launch","arguments":{}}`, code: CodeHandshakeMissing},
		{name: "initialized event early", prefix: []string{init}, frame: `out {"seq":1,"type":"event","event":"initialized"}`, suffix: []string{`out {"seq":2,"type":"response","request_seq":1,"success":true,"command":"initialize"}`}, code: CodeDAPInitializedEarly},
		{name: "seq skips", prefix: []string{init, res}, frame: `in {"seq":5,"type":"request","command":"threads"}`, suffix: []string{`out {"seq":2,"type":"response","request_seq":5,"success":true,"command":"threads"}`}, code: CodeDAPSeq, sev: SevWarning},
		{name: "response without success", prefix: []string{init}, frame: `out {"seq":1,"type":"response","request_seq":1,"command":"initialize"}`, code: "dap.missing-field"},
		{name: "unknown type", prefix: []string{init, res}, frame: `in {"seq":2,"type":"ask","command":"x"}`, code: "dap.bad-type"},
		{name: "response to no request", prefix: []string{init, res}, frame: `out {"seq":2,"type":"response","request_seq":7,"success":true,"command":"threads"}`, code: CodeUnknownResponseID},
	})
}

// TestDetectLSPAndDAP: the sniffers name LSP and DAP from their first frames
// and leave MCP's and ACP's initialize alone.
func TestDetectLSPAndDAP(t *testing.T) {
	for _, c := range []struct{ frame, want string }{
		{`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"processId":1,"rootUri":null,"capabilities":{}}}`, "lsp"},
		{`{"seq":1,"type":"request","command":"initialize","arguments":{"adapterID":"go"}}`, "dap"},
		{`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`, "mcp"},
		{`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`, "acp"},
	} {
		if got := Detect([]DirFrame{{FromParent, []byte(c.frame)}}); got != c.want {
			t.Errorf("Detect(%s) = %q, want %q", c.frame, got, c.want)
		}
	}
}

func hdr(n int) []byte { return []byte(fmt.Sprintf("Content-Length: %d\r\n\r\n", n)) }

// TestFramingRules: the header and framing checks, each at the message that
// breaks it.
func TestFramingRules(t *testing.T) {
	lsp, _ := Lookup("lsp")
	mcp, _ := Lookup("mcp")
	init := []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"processId":1,"capabilities":{}}}`)
	mcpInit := []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
	mcpRes := []byte(`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}`)
	type msg struct {
		dir   Dir
		hdr   string // "" = a line
		body  string
		whole bool
	}
	swallowed := string(init) + "Content-Length: 52\r\n\r\n{\"jsonrpc\":\"2.0\","
	for _, c := range []struct {
		name string
		p    Protocol
		msgs []msg
		code string
		sev  Severity
		in   string // the message must contain this
	}{
		{"mcp server writes Content-Length", mcp, []msg{{FromParent, "", string(mcpInit), true}, {FromChild, string(hdr(len(mcpRes))), string(mcpRes), true}},
			CodeWrongFraming, SevError, "newline-delimited"},
		{"lsp client writes lines", lsp, []msg{{FromParent, "", string(init), true}}, CodeWrongFraming, SevError, "Content-Length"},
		{"bare newline header", lsp, []msg{{FromParent, fmt.Sprintf("Content-Length: %d\n\n", len(init)), string(init), true}}, CodeHeaderSyntax, SevError, "\\r\\n"},
		{"other content type", lsp, []msg{{FromParent, fmt.Sprintf("Content-Length: %d\r\nContent-Type: text/plain\r\n\r\n", len(init)), string(init), true}}, CodeHeaderType, SevWarning, "text/plain"},
		{"utf8 charset alias is fine but an unknown header is info", lsp, []msg{{FromParent, fmt.Sprintf("Content-Length: %d\r\nX-Trace: 1\r\n\r\n", len(init)), string(init), true}}, CodeHeaderUnknown, SevInfo, "X-Trace"},
		{"short body at the end", lsp, []msg{{FromParent, "Content-Length: 500\r\n\r\n", string(init), true}}, CodeShortBody, SevError, "500"},
		{"length too large swallows the next header", lsp, []msg{{FromParent, string(hdr(len(swallowed))), swallowed, true}}, CodeLengthMismatch, SevError, "next message's header"},
		{"junk on a Content-Length stream", lsp, []msg{{FromParent, string(hdr(len(init))), string(init), true}, {FromChild, string(hdr(2)), "{}", true}, {FromChild, "", "debug: x", true}}, CodeOutOfSync, SevError, "debug: x"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := NewSession(c.p)
			var got []Violation
			for i, m := range c.msgs {
				var h []byte
				if m.hdr != "" {
					h = []byte(m.hdr)
				}
				s.Framed(m.dir, h, m.whole)
				_, vs := s.Frame(uint64(i+1), m.dir, []byte(m.body))
				got = append(got, vs...)
			}
			last := uint64(len(c.msgs))
			found := false
			for _, v := range got {
				if v.Code == c.code && v.Record == last {
					found = true
					if v.Severity != c.sev || !strings.Contains(v.Message, c.in) {
						t.Errorf("%s: severity %s, message %q; want %s containing %q", v.Code, v.Severity, v.Message, c.sev, c.in)
					}
				}
				if v.Code == CodeNonJSONStdout || v.Code == CodeNonJSONStdin {
					t.Errorf("the framing finding was reported again as not-JSON: %s", v.Message)
				}
			}
			if !found {
				t.Errorf("want %s at record %d; got:%s", c.code, last, fmtViolations(got))
			}
		})
	}
}

// TestShortBodyOnTheWayOut: a server message cut short by the end of its
// stream is an error, unless the parent had closed the server's stdin
// before it (the session was over; gopls's last log line races its exit),
// when it is info.
func TestShortBodyOnTheWayOut(t *testing.T) {
	lsp, _ := Lookup("lsp")
	init := []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"processId":1,"capabilities":{}}}`)
	res := []byte(`{"jsonrpc":"2.0","id":1,"result":{"capabilities":{}}}`)
	for _, closed := range []bool{false, true} {
		s := NewSession(lsp)
		s.Framed(FromParent, hdr(len(init)), true)
		s.Frame(1, FromParent, init)
		s.Framed(FromChild, hdr(len(res)), true)
		s.Frame(2, FromChild, res)
		if closed {
			s.ParentClosed(3)
		}
		s.Framed(FromChild, []byte("Content-Length: 139\r\n\r\n"), true)
		if _, vs := s.Frame(4, FromChild, nil); len(vs) != 0 {
			t.Errorf("closed=%v: judged before the end: %v", closed, vs)
		}
		var got *Violation
		for _, v := range s.End() {
			if v.Code == CodeShortBody {
				got = &v
			}
		}
		want := SevError
		if closed {
			want = SevInfo
		}
		if got == nil || got.Severity != want || got.Record != 4 {
			t.Errorf("closed=%v: short body finding %+v, want %s at record 4", closed, got, want)
		}
	}
}

// TestDAPSeqOrderOncePerSide: an adapter that sends seq 0 on every message
// (lldb-vscode 14) gets one dap.seq-order per side, at its first message,
// with the count, and no talk of a previous message where there was none
// (it was reported 17 times, the first saying "the previous message from
// that side had seq 0"). A client that skips once gets its own finding.
func TestDAPSeqOrderOncePerSide(t *testing.T) {
	p, _ := Lookup("dap")
	lines := []string{
		`in {"seq":1,"type":"request","command":"initialize","arguments":{"adapterID":"lldb"}}`,
		`out {"seq":0,"type":"response","request_seq":1,"success":true,"command":"initialize"}`,
		`out {"seq":0,"type":"event","event":"initialized"}`,
		`in {"seq":2,"type":"request","command":"threads"}`,
		`out {"seq":0,"type":"response","request_seq":2,"success":true,"command":"threads","body":{"threads":[]}}`,
		`in {"seq":4,"type":"request","command":"disconnect"}`,
		`out {"seq":0,"type":"response","request_seq":4,"success":true,"command":"disconnect"}`,
	}
	vs, _ := runSteps(p, mustSteps(t, lines...))
	var got []string
	for _, v := range vs {
		if v.Code == CodeDAPSeq {
			got = append(got, fmt.Sprintf("%d %s: %s", v.Record, v.Severity, v.Message))
		}
	}
	want := []string{
		"6 warning: seq 4 from the client after its seq 2; the next should be 3",
		"2 warning: 4 of the debug adapter's 4 messages were out of sequence, every one with seq 0; here the first: the debug adapter's first message has seq 0; a side's first message has seq 1",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("dap.seq-order findings:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestLSPVoidParams: shutdown and exit have "params: void"; "params": {}
// on them is a warning like "params": null (one finding each, citing void),
// while an absent params is clean.
func TestLSPVoidParams(t *testing.T) {
	p, _ := Lookup("lsp")
	open := []string{lspInit, lspInitRes, lspInitd}
	for _, c := range []struct {
		shutdown, exit string
		want           []string
	}{
		{lspShutdown, `in {"jsonrpc":"2.0","method":"exit"}`, nil},
		{`in {"jsonrpc":"2.0","id":9,"method":"shutdown","params":{}}`, `in {"jsonrpc":"2.0","method":"exit","params":{}}`,
			[]string{`4 warning lsp.void-params /params: LSP gives shutdown "params: void": send no params member; servers reject "params": {}`,
				`6 warning lsp.void-params /params: LSP gives exit "params: void": send no params member; servers reject "params": {}`}},
		{`in {"jsonrpc":"2.0","id":9,"method":"shutdown","params":null}`, `in {"jsonrpc":"2.0","method":"exit","params":null}`,
			[]string{`4 warning lsp.void-params /params: LSP gives shutdown "params: void": send no params member; servers reject "params": null`,
				`6 warning lsp.void-params /params: LSP gives exit "params: void": send no params member; servers reject "params": null`}},
	} {
		vs, _ := runSteps(p, mustSteps(t, append(append([]string{}, open...), c.shutdown, lspShutRes, c.exit)...))
		var got []string
		for _, v := range vs {
			got = append(got, fmt.Sprintf("%d %s %s %s: %s", v.Record, v.Severity, v.Code, v.Pointer, v.Message))
		}
		if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("%s then %s:\n%s\nwant\n%s", c.shutdown, c.exit, strings.Join(got, "\n"), strings.Join(c.want, "\n"))
		}
	}
}
