// Package linkedfix writes a linked set of cassettes for tests: the ACP
// cassette of an agent recorded with `record --deep` and the cassettes of
// the two MCP servers it spawned from session/new, with frames as the ACP
// and MCP specifications shape them and times that put each MCP tool call
// inside the ACP tool call that made it.
package linkedfix

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/rpctap/rpctap/cassette"
)

// Names of the set's files.
const (
	Parent = "20261126T180000Z-agent.cassette"
	Files  = "20261126T180000Z-files.cassette"
	Git    = "20261126T180000Z-git.cassette"
)

// Start is the parent's created time.
var Start = time.Date(2026, 11, 26, 18, 0, 0, 0, time.UTC)

const ms = int64(time.Millisecond)

type rec struct {
	t     int64 // ms since the parent's start (children: converted)
	k     cassette.Kind
	d     cassette.Dir
	json  string
	kind  string
	meth  string
	id    string
	ev    string
	extra func(r *cassette.Record)
}

func frame(t int64, d cassette.Dir, kind, method, id, js string) rec {
	return rec{t: t, k: cassette.KindFrame, d: d, json: js, kind: kind, meth: method, id: id}
}

// Set says what Write wrote.
type Set struct {
	Dir, Parent, Files, Git string
}

// Options vary the set.
type Options struct {
	// CutFiles leaves the files server's cassette without its end record
	// and its last records (a recorder killed mid-write).
	CutFiles bool
	// AnswerNearCall has the git server answer a request the agent made
	// outside any tool call (resources/list at 290 ms) 1 ms before the git
	// tool call starts (300 ms), inside the enclosing slack.
	AnswerNearCall bool
}

// Write writes the set into dir.
func Write(dir string, o Options) (Set, error) {
	s := Set{Dir: dir, Parent: filepath.Join(dir, Parent), Files: filepath.Join(dir, Files), Git: filepath.Join(dir, Git)}
	exit0 := 0
	origNew := `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/work/demo","mcpServers":[{"name":"files","command":"mcp-files","args":["--root","/work/demo"],"env":[]},{"name":"git","command":"mcp-git","args":[],"env":[]}]}}`
	acp := []rec{
		{t: 0, k: cassette.KindEvent, ev: cassette.EventStart, extra: func(r *cassette.Record) { r.Argv = []string{"my-agent", "--acp"}; r.PID = 4242 }},
		frame(10, cassette.DirIn, "request", "initialize", "0", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true,"writeTextFile":true}}}}`),
		frame(20, cassette.DirOut, "response", "", "0", `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{"loadSession":true},"authMethods":[]}}`),
		frame(30, cassette.DirIn, "request", "session/new", "1", `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/work/demo","mcpServers":[{"name":"files","command":"/usr/bin/rpctap","args":["record","--dir","/tapes","--parent","`+Parent+`","--parent-request","1","--server","files","--","mcp-files","--root","/work/demo"],"env":[]},{"name":"git","command":"/usr/bin/rpctap","args":["record","--dir","/tapes","--parent","`+Parent+`","--parent-request","1","--server","git","--","mcp-git"],"env":[]}]}}`),
		{t: 30, k: cassette.KindEvent, d: cassette.DirIn, ev: cassette.EventIntercept, extra: func(r *cassette.Record) {
			r.Act, r.BP, r.Orig, r.Ref = "rewrite", "deep", []byte(origNew), 4
		}},
		frame(60, cassette.DirOut, "response", "", "1", `{"jsonrpc":"2.0","id":1,"result":{"sessionId":"sess-1"}}`),
		frame(100, cassette.DirIn, "request", "session/prompt", "2", `{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"sess-1","prompt":[{"type":"text","text":"What does the README say, and is the tree clean?"}]}}`),
		frame(150, cassette.DirOut, "notification", "session/update", "", `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess-1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Let me look."}}}}`),
		frame(200, cassette.DirOut, "notification", "session/update", "", `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess-1","update":{"sessionUpdate":"tool_call","toolCallId":"call_1","title":"Read README.md","kind":"read","status":"pending"}}}`),
		frame(210, cassette.DirOut, "notification", "session/update", "", `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess-1","update":{"sessionUpdate":"tool_call_update","toolCallId":"call_1","status":"in_progress"}}}`),
		frame(250, cassette.DirOut, "notification", "session/update", "", `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess-1","update":{"sessionUpdate":"tool_call_update","toolCallId":"call_1","status":"completed","content":[{"type":"content","content":{"type":"text","text":"# Demo"}}]}}}`),
		frame(300, cassette.DirOut, "notification", "session/update", "", `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess-1","update":{"sessionUpdate":"tool_call","toolCallId":"call_2","title":"git status","kind":"execute","status":"in_progress"}}}`),
		frame(330, cassette.DirOut, "notification", "session/update", "", `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess-1","update":{"sessionUpdate":"tool_call_update","toolCallId":"call_2","status":"failed"}}}`),
		frame(350, cassette.DirOut, "notification", "session/update", "", `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess-1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"The README is a title; git failed."}}}}`),
		frame(400, cassette.DirOut, "response", "", "2", `{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}`),
		{t: 450, k: cassette.KindEvent, ev: cassette.EventStdinEOF},
		{t: 480, k: cassette.KindEvent, ev: cassette.EventExit, extra: func(r *cassette.Record) { r.Exit = &exit0 }},
	}
	hd := func(created time.Time, proto string, argv []string) cassette.Header {
		return cassette.Header{Format: cassette.FormatName, Version: "1.2", Rpctap: "test", Created: created.Format(time.RFC3339Nano), Protocol: proto, Argv: argv}
	}
	ph := hd(Start, "acp", []string{"my-agent", "--acp"})
	ph.Deep = true
	if err := write(s.Parent, ph, 0, acp, 500); err != nil {
		return s, err
	}
	mcp := func(from int64, server string) []rec {
		init := from + 5
		return []rec{
			{t: from + 1, k: cassette.KindEvent, ev: cassette.EventStart, extra: func(r *cassette.Record) { r.Argv = []string{"mcp-" + server}; r.PID = 4300 }},
			frame(init, cassette.DirIn, "request", "initialize", "0", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"my-agent","version":"1.0.0"}}}`),
			frame(init+2, cassette.DirOut, "response", "", "0", `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"mcp-`+server+`","version":"0.1.0"}}}`),
			frame(init+3, cassette.DirIn, "notification", "notifications/initialized", "", `{"jsonrpc":"2.0","method":"notifications/initialized"}`),
			frame(init+4, cassette.DirIn, "request", "tools/list", "1", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`),
		}
	}
	childHdr := func(server string, created time.Time) cassette.Header {
		h := hd(created, "mcp", []string{"mcp-" + server})
		h.Parent = &cassette.Parent{Cassette: Parent, Request: []byte("1"), Method: "session/new", Server: server}
		return h
	}
	files := append(mcp(40, "files"),
		frame(50, cassette.DirOut, "response", "", "1", `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"read_file","description":"Read a file","inputSchema":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}]}}`),
		frame(220, cassette.DirIn, "request", "tools/call", "2", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"README.md"}}}`),
		frame(230, cassette.DirOut, "response", "", "2", `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"# Demo"}],"isError":false}}`),
		// A log message of the server's own, outside any tool call.
		frame(380, cassette.DirOut, "notification", "notifications/message", "", `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"cache flushed"}}`),
		rec{t: 460, k: cassette.KindEvent, ev: cassette.EventStdinEOF},
		rec{t: 470, k: cassette.KindEvent, ev: cassette.EventExit, extra: func(r *cassette.Record) { r.Exit = &exit0 }},
	)
	filesAt := Start.Add(35 * time.Millisecond)
	if err := write(s.Files, childHdr("files", filesAt), 35, files, 475); err != nil {
		return s, err
	}
	if o.CutFiles {
		if err := cut(s.Files); err != nil {
			return s, err
		}
	}
	git := append(mcp(42, "git"),
		frame(52, cassette.DirOut, "response", "", "1", `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"status","inputSchema":{"type":"object"}}]}}`))
	if o.AnswerNearCall {
		git = append(git,
			frame(290, cassette.DirIn, "request", "resources/list", "3", `{"jsonrpc":"2.0","id":3,"method":"resources/list","params":{}}`),
			frame(299, cassette.DirOut, "response", "", "3", `{"jsonrpc":"2.0","id":3,"result":{"resources":[]}}`))
	}
	git = append(git,
		frame(310, cassette.DirIn, "request", "tools/call", "2", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"status","arguments":{}}}`),
		frame(320, cassette.DirOut, "response", "", "2", `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"fatal: not a git repository"}],"isError":true}}`),
		rec{t: 461, k: cassette.KindEvent, ev: cassette.EventStdinEOF},
		rec{t: 471, k: cassette.KindEvent, ev: cassette.EventExit, extra: func(r *cassette.Record) { r.Exit = &exit0 }},
	)
	gitAt := Start.Add(38 * time.Millisecond)
	return s, write(s.Git, childHdr("git", gitAt), 38, git, 476)
}

// write writes one cassette whose created is offset ms after Start; rec
// times are in the parent's ms and are converted.
func write(path string, h cassette.Header, offset int64, recs []rec, end int64) error {
	// Small batches and frames, as a recorder flushing a slow session
	// writes them: a cut leaves whole frames before it.
	w, err := cassette.Create(path, h, &cassette.Options{BatchSize: 200, FrameSize: 400})
	if err != nil {
		return err
	}
	for _, x := range recs {
		var r cassette.Record
		if x.k == cassette.KindFrame {
			r = cassette.NewLineRecord(cassette.KindFrame, x.d, []byte(x.json), "\n")
			r.Kind, r.Method = x.kind, x.meth
			if x.id != "" {
				r.ID = []byte(x.id)
			}
			if x.meth == "session/new" {
				r.Icpt = "rewrite"
			}
		} else {
			r = cassette.Record{K: x.k, D: x.d, Ev: x.ev}
		}
		r.T = (x.t - offset) * ms
		if x.extra != nil {
			x.extra(&r)
		}
		if err := w.Append(&r); err != nil {
			return err
		}
	}
	return w.CloseAt((end - offset) * ms)
}

// cut truncates a cassette 40 bytes into its last data: the tail a killed
// recorder leaves (no end record, a torn frame).
func cut(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if st.Size() < 200 {
		return fmt.Errorf("linkedfix: %s too small to cut", path)
	}
	return os.Truncate(path, st.Size()*2/3)
}
