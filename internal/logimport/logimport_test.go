package logimport

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The fixtures are written from each program's source (see the comment on
// each reader for the version read); want is the messages they must give,
// "> " for In (parent to child), "< " for Out.
func TestFixtures(t *testing.T) {
	mod := time.Date(2026, 11, 26, 18, 0, 0, 0, time.Local)
	for _, c := range []struct {
		format, file, clock string
		want                []string
	}{
		{"zed-acp", "zed-acp.json", "none", []string{
			`> {"jsonrpc":"2.0","id":0,"method":"initialize","params":{"clientCapabilities":{"fs":{"readTextFile":true,"writeTextFile":true},"terminal":true},"protocolVersion":1}}`,
			`< {"jsonrpc":"2.0","id":0,"result":{"agentCapabilities":{"loadSession":false,"promptCapabilities":{"audio":false,"embeddedContext":true,"image":true}},"authMethods":[],"protocolVersion":1}}`,
			`> {"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/home/dev/src/app","mcpServers":[]}}`,
			`< {"jsonrpc":"2.0","id":1,"result":{"sessionId":"sess_4f2a"}}`,
			`> {"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"prompt":[{"text":"Rename Greet to Hello","type":"text"}],"sessionId":"sess_4f2a"}}`,
			`< {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_4f2a","update":{"content":{"text":"I'll rename it.","type":"text"},"sessionUpdate":"agent_message_chunk"}}}`,
			`< {"jsonrpc":"2.0","id":0,"method":"fs/read_text_file","params":{"path":"/home/dev/src/app/main.go","sessionId":"sess_4f2a"}}`,
			`> {"jsonrpc":"2.0","id":0,"result":{"content":"package main\n"}}`,
			`< {"jsonrpc":"2.0","id":1,"method":"fs/read_text_file","params":{"path":"/home/dev/src/app/missing.go","sessionId":"sess_4f2a"}}`,
			`> {"jsonrpc":"2.0","id":1,"error":{"code":-32002,"message":"Resource not found"}}`,
			`< {"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}`,
		}},
		{"vscode-lsp", "vscode-text.log", "time-of-day", []string{
			`> {"jsonrpc":"2.0","id":0,"method":"initialize","params":{"processId":4242,"clientInfo":{"name":"Visual Studio Code","version":"1.95.3"},"rootUri":"file:///home/dev/src/app","capabilities":{}}}`,
			`< {"jsonrpc":"2.0","id":0,"result":{"capabilities":{"hoverProvider":true,"definitionProvider":true},"serverInfo":{"name":"gopls","version":"v0.23.0"}}}`,
			`> {"jsonrpc":"2.0","method":"initialized","params":{}}`,
			`< {"jsonrpc":"2.0","id":1,"method":"workspace/configuration","params":{"items":[{"section":"gopls"}]}}`,
			`> {"jsonrpc":"2.0","id":1,"result":[null]}`,
			`< {"jsonrpc":"2.0","method":"window/logMessage","params":{"type":3,"message":"Loading packages..."}}`,
			`> {"jsonrpc":"2.0","id":2,"method":"textDocument/hover","params":{"textDocument":{"uri":"file:///home/dev/src/app/main.go"},"position":{"line":7,"character":27}}}`,
			`< {"jsonrpc":"2.0","id":2,"result":null}`,
			`> {"jsonrpc":"2.0","id":3,"method":"textDocument/definition","params":{"textDocument":{"uri":"file:///home/dev/src/app/nofile.go"},"position":{"line":0,"character":0}}}`,
			`< {"jsonrpc":"2.0","id":3,"error":{"code":0,"message":"no package metadata for file file:///home/dev/src/app/nofile.go"}}`,
			`> {"jsonrpc":"2.0","id":4,"method":"shutdown"}`,
			`< {"jsonrpc":"2.0","id":4,"result":null}`,
			`> {"jsonrpc":"2.0","method":"exit"}`,
		}},
		{"vscode-lsp", "vscode-json.log", "wall", []string{
			`> {"jsonrpc":"2.0","id":0,"method":"initialize","params":{"processId":4242,"rootUri":"file:///home/dev/src/app","capabilities":{}}}`,
			`< {"jsonrpc":"2.0","id":0,"result":{"capabilities":{"hoverProvider":true}}}`,
			`> {"jsonrpc":"2.0","method":"initialized","params":{}}`,
			`< {"jsonrpc":"2.0","method":"window/logMessage","params":{"type":3,"message":"Loading packages..."}}`,
			`> {"jsonrpc":"2.0","id":1,"method":"shutdown"}`,
			`< {"jsonrpc":"2.0","id":1,"result":null}`,
			`> {"jsonrpc":"2.0","method":"exit"}`,
		}},
		{"vscode-lsp", "vscode-logchannel.log", "wall", []string{
			`> {"jsonrpc":"2.0","id":0,"method":"initialize","params":{"processId":4242,"rootUri":"file:///home/dev/src/app","capabilities":{}}}`,
			`< {"jsonrpc":"2.0","id":0,"result":{"capabilities":{"hoverProvider":true}}}`,
			`> {"jsonrpc":"2.0","method":"initialized","params":{}}`,
			`> {"jsonrpc":"2.0","id":1,"method":"shutdown"}`,
			`< {"jsonrpc":"2.0","id":1,"result":null}`,
			`> {"jsonrpc":"2.0","method":"exit"}`,
		}},
		{"lsp-devtools", "lsp-devtools.jsonl", "none", []string{
			`> {"jsonrpc":"2.0","id":1,"method":"initialize","params":{"processId":4242,"rootUri":"file:///home/dev/src/app","capabilities":{}}}`,
			`< {"jsonrpc":"2.0","id":1,"result":{"capabilities":{"hoverProvider":true},"serverInfo":{"name":"esbonio","version":"0.16.4"}}}`,
			`> {"jsonrpc":"2.0","method":"initialized","params":{}}`,
			`< {"jsonrpc":"2.0","id":1,"method":"workspace/configuration","params":{"items":[{"section":"esbonio"}]}}`,
			`> {"jsonrpc":"2.0","id":1,"result":[{}]}`,
			`< {"jsonrpc":"2.0","method":"window/logMessage","params":{"type":4,"message":"Sphinx build started"}}`,
			`> {"jsonrpc":"2.0","id":2,"method":"shutdown","params":null}`,
			`< {"jsonrpc":"2.0","id":2,"result":null}`,
			`> {"jsonrpc":"2.0","method":"exit","params":null}`,
		}},
		{"lsp-devtools", "lsp-devtools-records.jsonl", "wall", []string{
			`> {"jsonrpc":"2.0","id":1,"method":"initialize","params":{"processId":4242,"capabilities":{}}}`,
			`< {"jsonrpc":"2.0","id":1,"result":{"capabilities":{"hoverProvider":true}}}`,
			`> {"jsonrpc":"2.0","method":"initialized","params":{}}`,
		}},
		{"jsonl", "generic.jsonl", "wall", []string{
			`> {"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`,
			`< {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}}`,
			`> {"jsonrpc":"2.0","method":"notifications/initialized"}`,
			`> {"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
			`< {"jsonrpc":"2.0","id":2,"result":{"tools":[]}}`,
		}},
	} {
		t.Run(c.file, func(t *testing.T) {
			f, err := os.Open(filepath.Join("testdata", c.file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			l, err := Read(c.format, f, mod)
			if err != nil {
				t.Fatal(err)
			}
			if len(l.Problems) > 0 {
				t.Errorf("problems: %v", l.Problems)
			}
			var got []string
			for _, m := range l.Messages {
				p := "> "
				if m.Dir == Out {
					p = "< "
				}
				got = append(got, p+string(m.Body))
			}
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("messages:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
			if l.Clock != c.clock {
				t.Errorf("clock %q, want %q", l.Clock, c.clock)
			}
			var last time.Time
			for _, m := range l.Messages {
				if c.clock == "none" {
					if !m.Time.IsZero() {
						t.Errorf("line %d has a time in a log without times", m.Line)
					}
					continue
				}
				if m.Time.IsZero() || m.Time.Before(last) {
					t.Errorf("line %d: time %v after %v", m.Line, m.Time, last)
				}
				last = m.Time
			}
		})
	}
}

// VS Code's old trace has times of day only: they are dated from the file's
// modification time, and cross midnight forwards.
func TestVSCodeTimeOfDay(t *testing.T) {
	log := "[Trace - 11:59:58 PM] Sending notification 'exit'.\nNo parameters provided.\n\n\n" +
		"[Trace - 12:00:01 AM] Sending notification 'exit'.\nNo parameters provided.\n"
	mod := time.Date(2026, 11, 27, 0, 5, 0, 0, time.Local)
	l, err := Read("vscode-lsp", strings.NewReader(log), mod)
	if err != nil {
		t.Fatal(err)
	}
	want := []time.Time{time.Date(2026, 11, 26, 23, 59, 58, 0, time.Local), time.Date(2026, 11, 27, 0, 0, 1, 0, time.Local)}
	for i, m := range l.Messages {
		if !m.Time.Equal(want[i]) {
			t.Errorf("message %d at %v, want %v", i, m.Time, want[i])
		}
	}
}

// A malformed entry is named by its line; everything else is kept.
func TestMalformed(t *testing.T) {
	for _, c := range []struct {
		format, log string
		line        int
		kept        int
	}{
		{"vscode-lsp", "[Trace - 10:15:02 AM] Sending request 'shutdown - (1)'.\n\n\n[Trace - 10:15:02 AM] Received request 'x - (1)'.\nParams: {\"a\": \n\n\n[Trace - 10:15:03 AM] Sending notification 'exit'.\n", 4, 2},
		{"jsonl", "{\"direction\":\"in\",\"message\":{}}\n{\"direction\":\"sideways\",\"message\":{}}\nnot json\n{\"direction\":\"out\",\"message\":{}}\n", 2, 2},
		{"lsp-devtools", "{\"jsonrpc\": \"2.0\", \"method\": \"exit\"}\n{\"jsonrpc\": \n", 2, 1},
		{"zed-acp", "[{\"_direction\":\"outgoing\",\"_type\":\"notification\",\"id\":null,\"method\":\"x\",\"params\":null},\n {\"_direction\":\"outgoing\",\n \"_type\": ]", 3, 1},
		{"zed-acp", "[{\"_direction\":\"outgoing\",\"_type\":\"notification\",\"method\":\"x\"},\n{\"_direction\":\"up\",\"_type\":\"request\",\"method\":\"y\"}]", 2, 1},
		// cut off after a whole entry (no closing bracket), and text after the array
		{"zed-acp", "[{\"_direction\":\"outgoing\",\"_type\":\"notification\",\"method\":\"x\"},\n{\"_direction\":\"incoming\",\"_type\":\"notification\",\"method\":\"y\"}\n", 3, 2},
		{"zed-acp", "[{\"_direction\":\"outgoing\",\"_type\":\"notification\",\"method\":\"x\"}]\n[{\"_direction\":\"outgoing\",\"_type\":\"notification\",\"method\":\"z\"}]", 2, 1},
	} {
		l, err := Read(c.format, strings.NewReader(c.log), time.Now())
		if err != nil {
			t.Errorf("%s: %v", c.format, err)
			continue
		}
		if len(l.Problems) == 0 || l.Problems[0].Line != c.line || len(l.Messages) != c.kept {
			t.Errorf("%s: problems %v, %d messages kept; want line %d first and %d kept", c.format, l.Problems, len(l.Messages), c.line, c.kept)
		}
	}
	if _, err := Read("zed-acp", strings.NewReader("{}"), time.Now()); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("a log with nothing readable: %v", err)
	}
	if _, err := Read("nope", strings.NewReader(""), time.Now()); err == nil {
		t.Error("an unknown format was accepted")
	}
}
