package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// This file holds the Content-Length framed peers: an LSP client that drives
// a language server (gopls, or `rpctap replay` standing in for it) the way
// an editor does, and a small scripted DAP adapter with its client.

// clConn reads and writes Content-Length framed messages (LSP base
// protocol, DAP).
type clConn struct {
	r *bufio.Reader
	w io.Writer
}

func (c *clConn) write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(c.w, "Content-Length: %d\r\n\r\n%s", len(b), b)
	return err
}

// read returns the next message's body.
func (c *clConn) read() (map[string]any, error) {
	n := -1
	for {
		line, err := c.r.ReadString('\n')
		if err != nil {
			return nil, err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			break
		}
		name, val, ok := strings.Cut(line, ":")
		if ok && strings.EqualFold(strings.TrimSpace(name), "Content-Length") {
			n, err = strconv.Atoi(strings.TrimSpace(val))
			if err != nil {
				return nil, fmt.Errorf("bad header %q", line)
			}
		}
	}
	if n < 0 {
		return nil, fmt.Errorf("a message without Content-Length")
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(c.r, body); err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("body %q: %v", body, err)
	}
	return m, nil
}

// startChild starts argv with pipes on stdin and stdout.
func startChild(argv []string) (*exec.Cmd, *clConn, io.WriteCloser, error) {
	if len(argv) == 0 {
		return nil, nil, nil, fmt.Errorf("no child command")
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, nil, err
	}
	return cmd, &clConn{r: bufio.NewReader(out), w: in}, in, nil
}

// lspParent drives a Go language server on the module in the working
// directory (it must hold main.go with a call to Greet, as the tests write
// it): initialize, initialized, didOpen, hover and definition on the call,
// shutdown, exit. It answers the server's own requests as an editor would
// (workspace/configuration with nulls, progress creation with null) and
// prints the answers it got, so that a run against gopls and one against
// `rpctap replay` can be compared.
func lspParent(argv []string) error {
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	src, err := os.ReadFile(filepath.Join(wd, "main.go"))
	if err != nil {
		return err
	}
	line, col := -1, -1
	for i, l := range strings.Split(string(src), "\n") {
		if j := strings.Index(l, "Greet("); j >= 0 && strings.Contains(l, "Println") {
			line, col = i, j+1
		}
	}
	if line < 0 {
		return fmt.Errorf("main.go has no Println(Greet(...)) line")
	}
	cmd, c, stdin, err := startChild(argv)
	if err != nil {
		return err
	}
	root := "file://" + wd
	uri := root + "/main.go"
	// call sends a request and waits for its response, answering the
	// server's requests and skipping its notifications meanwhile.
	nextID := 0
	call := func(method string, params any) (map[string]any, error) {
		nextID++
		id := nextID
		msg := map[string]any{"jsonrpc": "2.0", "id": id, "method": method}
		if params != nil {
			msg["params"] = params
		}
		if err := c.write(msg); err != nil {
			return nil, err
		}
		for {
			m, err := c.read()
			if err != nil {
				return nil, fmt.Errorf("waiting for %s: %w", method, err)
			}
			if meth, ok := m["method"].(string); ok {
				if sid, has := m["id"]; has {
					if err := c.write(map[string]any{"jsonrpc": "2.0", "id": sid, "result": editorAnswer(meth, m["params"])}); err != nil {
						return nil, err
					}
				}
				continue
			}
			if f, ok := m["id"].(float64); ok && int(f) == id {
				return m, nil
			}
		}
	}
	notify := func(method string, params any) error {
		msg := map[string]any{"jsonrpc": "2.0", "method": method}
		if params != nil {
			msg["params"] = params
		}
		return c.write(msg)
	}
	initParams := map[string]any{
		"processId": os.Getpid(), "rootUri": root, "clientInfo": map[string]any{"name": "testpeer", "version": "1"},
		"workspaceFolders": []any{map[string]any{"uri": root, "name": "ws"}},
		"capabilities": map[string]any{
			"workspace":    map[string]any{"configuration": true, "workspaceFolders": true},
			"window":       map[string]any{"workDoneProgress": true},
			"textDocument": map[string]any{"hover": map[string]any{"contentFormat": []string{"plaintext"}}},
		},
	}
	res, err := call("initialize", initParams)
	if err != nil {
		return err
	}
	info, _ := res["result"].(map[string]any)["serverInfo"].(map[string]any)
	fmt.Printf("initialize: server %v\n", info["name"])
	if err := notify("initialized", map[string]any{}); err != nil {
		return err
	}
	if err := notify("textDocument/didOpen", map[string]any{"textDocument": map[string]any{
		"uri": uri, "languageId": "go", "version": 1, "text": string(src)}}); err != nil {
		return err
	}
	pos := map[string]any{"textDocument": map[string]any{"uri": uri}, "position": map[string]any{"line": line, "character": col}}
	res, err = call("textDocument/hover", pos)
	if err != nil {
		return err
	}
	hv, _ := res["result"].(map[string]any)
	contents, _ := hv["contents"].(map[string]any)
	fmt.Printf("hover: %q\n", contents["value"])
	res, err = call("textDocument/definition", pos)
	if err != nil {
		return err
	}
	locs, _ := res["result"].([]any)
	for _, l := range locs {
		loc, _ := l.(map[string]any)
		r, _ := loc["range"].(map[string]any)
		start, _ := r["start"].(map[string]any)
		u, _ := loc["uri"].(string)
		fmt.Printf("definition: %s:%v:%v\n", strings.TrimPrefix(u, root+"/"), start["line"], start["character"])
	}
	if _, err := call("shutdown", nil); err != nil {
		return err
	}
	fmt.Println("shutdown: ok")
	if err := notify("exit", nil); err != nil {
		return err
	}
	stdin.Close()
	// Drain what the server still writes (log messages) until it exits.
	for {
		if _, err := c.read(); err != nil {
			break
		}
	}
	return cmd.Wait()
}

// editorAnswer is what the client answers to a server request.
func editorAnswer(method string, params any) any {
	if method == "workspace/configuration" {
		p, _ := params.(map[string]any)
		items, _ := p["items"].([]any)
		return make([]any, len(items)) // null: no settings for any section
	}
	return nil
}

// dapChild is a scripted debug adapter: it answers initialize, sends the
// initialized event, launches (asking the client to run a terminal first),
// sets breakpoints, stops on one, answers stackTrace, refuses an evaluate
// it cannot do, continues to the program's exit and disconnects. Like
// lldb-vscode, it makes up its thread and stack frame ids anew each run
// (from its process id) and fails a request naming another.
func dapChild(in io.Reader, out io.Writer) error {
	c := &clConn{r: bufio.NewReader(in), w: out}
	thread, frame := os.Getpid(), 1000+os.Getpid()%1000
	seq := 0
	send := func(m map[string]any) error {
		seq++
		m["seq"] = seq
		return c.write(m)
	}
	respond := func(req map[string]any, ok bool, body any, msg string) error {
		m := map[string]any{"type": "response", "request_seq": req["seq"], "command": req["command"], "success": ok}
		if body != nil {
			m["body"] = body
		}
		if msg != "" {
			m["message"] = msg
		}
		return send(m)
	}
	event := func(name string, body any) error {
		m := map[string]any{"type": "event", "event": name}
		if body != nil {
			m["body"] = body
		}
		return send(m)
	}
	var pendingLaunch map[string]any
	for {
		req, err := c.read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if req["type"] == "response" && req["command"] == "runInTerminal" && pendingLaunch != nil {
			if err := respond(pendingLaunch, true, nil, ""); err != nil {
				return err
			}
			pendingLaunch = nil
			continue
		}
		var e error
		switch req["command"] {
		case "initialize":
			if e = respond(req, true, map[string]any{"supportsConfigurationDoneRequest": true}, ""); e == nil {
				e = event("initialized", nil)
			}
		case "launch":
			pendingLaunch = req
			e = send(map[string]any{"type": "request", "command": "runInTerminal",
				"arguments": map[string]any{"kind": "integrated", "cwd": "/w", "args": []string{"/w/main"}}})
		case "setBreakpoints":
			e = respond(req, true, map[string]any{"breakpoints": []any{map[string]any{"verified": true, "line": 3}}}, "")
		case "configurationDone":
			if e = respond(req, true, nil, ""); e == nil {
				e = event("stopped", map[string]any{"reason": "breakpoint", "threadId": thread})
			}
		case "stackTrace":
			if arg(req, "threadId") != float64(thread) {
				e = respond(req, false, nil, fmt.Sprintf("invalid thread %v", arg(req, "threadId")))
				break
			}
			e = respond(req, true, map[string]any{"stackFrames": []any{map[string]any{"id": frame, "name": "main.main", "line": 3, "column": 1}}, "totalFrames": 1}, "")
		case "evaluate":
			if arg(req, "frameId") != float64(frame) {
				e = respond(req, false, nil, fmt.Sprintf("invalid frame %v", arg(req, "frameId")))
				break
			}
			e = respond(req, false, nil, "could not find symbol value for nope")
		case "continue":
			if arg(req, "threadId") != float64(thread) {
				e = respond(req, false, nil, fmt.Sprintf("invalid thread %v", arg(req, "threadId")))
				break
			}
			if e = respond(req, true, map[string]any{"allThreadsContinued": true}, ""); e == nil {
				if e = event("output", map[string]any{"category": "stdout", "output": "hello\n"}); e == nil {
					if e = event("exited", map[string]any{"exitCode": 0}); e == nil {
						e = event("terminated", nil)
					}
				}
			}
		case "disconnect":
			return respond(req, true, nil, "")
		default:
			e = respond(req, false, nil, "unsupported")
		}
		if e != nil {
			return e
		}
	}
}

// arg returns the request's argument name (nil when absent).
func arg(req map[string]any, name string) any {
	a, _ := req["arguments"].(map[string]any)
	return a[name]
}

// dapParent drives a debug adapter through dapChild's script and prints
// what it got. As a development tool does, it sends back the thread id of
// the stopped event and the stack frame id of the stack trace, and fails
// when a request it needed failed.
func dapParent(argv []string) error {
	cmd, c, stdin, err := startChild(argv)
	if err != nil {
		return err
	}
	var thread, frame any
	seq := 0
	// call sends a request and waits for its response, printing events and
	// answering runInTerminal meanwhile.
	call := func(command string, args any) (map[string]any, error) {
		seq++
		my := seq
		m := map[string]any{"seq": my, "type": "request", "command": command}
		if args != nil {
			m["arguments"] = args
		}
		if err := c.write(m); err != nil {
			return nil, err
		}
		for {
			r, err := c.read()
			if err != nil {
				return nil, fmt.Errorf("waiting for %s: %w", command, err)
			}
			switch r["type"] {
			case "event":
				fmt.Printf("event %v\n", r["event"])
				if b, _ := r["body"].(map[string]any); r["event"] == "stopped" && b != nil {
					thread = b["threadId"]
				}
			case "request":
				seq++
				fmt.Printf("reverse request %v\n", r["command"])
				if err := c.write(map[string]any{"seq": seq, "type": "response", "request_seq": r["seq"], "command": r["command"],
					"success": true, "body": map[string]any{"processId": 4321}}); err != nil {
					return nil, err
				}
			case "response":
				if f, _ := r["request_seq"].(float64); int(f) == my {
					fmt.Printf("%s: success=%v message=%v\n", command, r["success"], r["message"])
					return r, nil
				}
			}
		}
	}
	steps := []struct {
		cmd  string
		args func() any
	}{
		{"initialize", func() any {
			return map[string]any{"clientID": "testpeer", "adapterID": "scripted", "linesStartAt1": true, "columnsStartAt1": true}
		}},
		{"launch", func() any { return map[string]any{"program": "/w/main.go"} }},
		{"setBreakpoints", func() any {
			return map[string]any{"source": map[string]any{"path": "/w/main.go"}, "breakpoints": []any{map[string]any{"line": 3}}}
		}},
		{"configurationDone", func() any { return nil }},
		{"stackTrace", func() any { return map[string]any{"threadId": thread} }},
		{"evaluate", func() any { return map[string]any{"expression": "nope", "frameId": frame} }},
		{"continue", func() any { return map[string]any{"threadId": thread} }},
		{"disconnect", func() any { return map[string]any{"restart": false} }},
	}
	for _, s := range steps {
		for s.cmd == "stackTrace" && thread == nil {
			// The stopped event follows configurationDone's response.
			r, err := c.read()
			if err != nil {
				return fmt.Errorf("waiting for the stopped event: %w", err)
			}
			if r["type"] == "event" {
				fmt.Printf("event %v\n", r["event"])
				if b, _ := r["body"].(map[string]any); r["event"] == "stopped" && b != nil {
					thread = b["threadId"]
				}
			}
		}
		r, err := call(s.cmd, s.args())
		if err != nil {
			return err
		}
		b, _ := r["body"].(map[string]any)
		switch s.cmd {
		case "stackTrace":
			if fs, _ := b["stackFrames"].([]any); len(fs) > 0 {
				frame = fs[0].(map[string]any)["id"]
			}
		}
		if r["success"] != true && s.cmd != "evaluate" {
			return fmt.Errorf("%s failed: %v", s.cmd, r["message"])
		}
	}
	stdin.Close()
	return cmd.Wait()
}
