// Command testpeer is a set of small protocol peers for replay's end-to-end
// tests, written from the catalogues in ../shared/protocols: children that
// speak synaps and opi on stdin/stdout, parents that drive such a child (or
// `rpctap replay` standing in for it) and print what they saw, and an MCP
// parent on the MCP Go SDK that makes the server send requests of its own
// (roots/list, sampling/createMessage, ping) and notifications.
//
// Usage:
//
//	testpeer synaps-child | opi-child | dap-child
//	testpeer synaps-parent | opi-parent | mcp-parent | lsp-parent | dap-parent  CMD [ARGS...]
//
// lsp-parent is an editor driving a Go language server (gopls) on the module
// in its working directory; dap-child is a scripted debug adapter and
// dap-parent its client (both Content-Length framed, lsp.go).
//
// The parents print a transcript on stdout and exit with the child's status.
package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: testpeer synaps-child|opi-child|dap-child|synaps-parent|opi-parent|mcp-parent|lsp-parent|dap-parent|dap-debug [CMD ARGS...]")
		os.Exit(2)
	}
	var err error
	switch mode, args := os.Args[1], os.Args[2:]; mode {
	case "synaps-child":
		err = synapsChild(os.Stdin, os.Stdout)
	case "opi-child":
		err = opiChild(os.Stdin, os.Stdout)
	case "synaps-parent":
		err = parent(args, synapsScript)
	case "opi-parent":
		err = parent(args, opiScript)
	case "mcp-parent":
		err = mcpParent(args)
	case "lsp-parent":
		err = lspParent(args)
	case "dap-child":
		err = dapChild(os.Stdin, os.Stdout)
	case "dap-parent":
		err = dapParent(args)
	case "dap-debug":
		err = dapDebug(args)
	default:
		err = fmt.Errorf("unknown mode %q", mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "testpeer:", err)
		if ee, ok := err.(*exec.ExitError); ok {
			os.Exit(ee.ExitCode())
		}
		os.Exit(1)
	}
}

func randomID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func send(w io.Writer, v any) {
	b, _ := json.Marshal(v)
	w.Write(append(b, '\n'))
}

type obj = map[string]any

// synapsChild is a synaps `rpc` child (catalogue: synaps.md).
func synapsChild(in io.Reader, out io.Writer) error {
	sid := "s-" + randomID()
	fmt.Fprintln(os.Stderr, "synaps child: starting session", sid)
	send(out, obj{"type": "ready", "session_id": sid, "model": "test-model", "protocol_version": 1})
	msgs := 0
	sc := bufio.NewScanner(in)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var cmd obj
		if err := json.Unmarshal(sc.Bytes(), &cmd); err != nil {
			send(out, obj{"type": "error", "message": err.Error()})
			continue
		}
		id, _ := cmd["id"].(string)
		switch cmd["type"] {
		case "prompt", "follow_up":
			msg, _ := cmd["message"].(string)
			for _, w := range strings.Fields("you said: " + msg) {
				send(out, obj{"type": "message_update", "event": obj{"type": "text_delta", "delta": w + " "}})
			}
			msgs += 2
			send(out, obj{"type": "agent_end", "usage": obj{"input_tokens": len(msg), "output_tokens": 3,
				"cache_read_input_tokens": 0, "cache_creation_input_tokens": 0, "model": "test-model"}})
			send(out, obj{"type": "response", "id": id, "command": "prompt", "ok": true})
		case "get_state":
			send(out, obj{"type": "response", "id": id, "command": "get_state", "streaming": false,
				"model": "test-model", "session_id": sid, "message_count": msgs})
		case "abort":
			send(out, obj{"type": "response", "id": id, "command": "abort", "ok": true})
		case "shutdown":
			fmt.Fprintln(os.Stderr, "synaps child: shutdown")
			os.Exit(0)
		default:
			send(out, obj{"type": "error", "message": fmt.Sprintf("unknown variant `%v`", cmd["type"])})
		}
	}
	return nil
}

// opiChild is an opi `--rpc` child (catalogue: opi.md).
func opiChild(in io.Reader, out io.Writer) error {
	sid := randomID()
	send(out, obj{"type": "rpc_ready", "schema_version": 3, "mode": "rpc", "version": "0.6.3", "startup_diagnostics": []any{}})
	model := "anthropic:claude-sonnet-4"
	sc := bufio.NewScanner(in)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var cmd obj
		if err := json.Unmarshal(sc.Bytes(), &cmd); err != nil {
			send(out, obj{"type": "response", "command": "parse", "success": false, "error": "failed to parse command: " + err.Error()})
			continue
		}
		t, _ := cmd["type"].(string)
		resp := obj{"type": "response", "command": t, "success": true}
		if id, ok := cmd["id"].(string); ok {
			resp["id"] = id
		}
		switch t {
		case "prompt":
			send(out, resp)
			msg, _ := cmd["message"].(string)
			now := time.Now().UnixMilli()
			send(out, obj{"type": "AgentStart"})
			user := obj{"type": "Llm", "role": "user", "content": []any{obj{"type": "text", "text": msg}}, "timestamp_ms": now}
			send(out, obj{"type": "MessageStart", "message": user})
			send(out, obj{"type": "MessageEnd", "message": user})
			send(out, obj{"type": "AgentEnd", "messages": []any{user}})
			send(out, obj{"type": "run_summary", "diagnostics": obj{"info": 0, "warning": 0, "error": 0}})
		case "set_model":
			model, _ = cmd["model"].(string)
			resp["data"] = obj{"model": model}
			send(out, resp)
		case "session_info":
			resp["data"] = obj{"model": model, "resources": obj{}, "session_id": sid}
			send(out, resp)
		case "quit":
			send(out, resp)
			return nil
		default:
			resp["success"] = false
			resp["error"] = "failed to parse command: unknown variant `" + t + "`"
			send(out, resp)
		}
	}
	return nil
}

// step is one thing a scripted parent does: send a frame, then read frames
// until done says the answer arrived.
type step struct {
	frame string
	done  func(m obj) bool
}

func responseTo(id string) func(obj) bool {
	return func(m obj) bool { return m["id"] == id && (m["type"] == "response" || m["type"] == "error") }
}

var synapsScript = []step{
	{"", func(m obj) bool { return m["type"] == "ready" }},
	{`{"type":"prompt","id":"p1","message":"hello there"}`, responseTo("p1")},
	{`{"type":"get_state","id":"g1"}`, responseTo("g1")},
	{`{"type":"abort","id":"a1"}`, responseTo("a1")},
	{`{"type":"shutdown"}`, nil},
}

var opiScript = []step{
	{"", func(m obj) bool { return m["type"] == "rpc_ready" }},
	{`{"type":"set_model","id":"m1","model":"openai:gpt-5"}`, responseTo("m1")},
	{`{"type":"prompt","id":"p1","message":"hello"}`, func(m obj) bool { return m["type"] == "run_summary" }},
	{`{"type":"session_info","id":"i1"}`, responseTo("i1")},
	{`{"type":"quit","id":"q1"}`, responseTo("q1")},
}

// parent runs argv as the child and plays script against it, printing each
// frame it receives with volatile fields (session ids, times) masked.
func parent(argv []string, script []step) error {
	if len(argv) == 0 {
		return fmt.Errorf("parent needs a child command")
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		return err
	}
	br := bufio.NewReader(stdout)
	for _, st := range script {
		if st.frame != "" {
			fmt.Printf("> %s\n", st.frame)
			io.WriteString(stdin, st.frame+"\n")
		}
		for st.done != nil {
			line, err := br.ReadBytes('\n')
			if err != nil {
				return fmt.Errorf("child closed stdout while waiting: %v", err)
			}
			var m obj
			if err := json.Unmarshal(line, &m); err != nil {
				return fmt.Errorf("child sent a non-JSON line: %q", line)
			}
			fmt.Printf("< %s\n", mask(m))
			if st.done(m) {
				break
			}
		}
	}
	stdin.Close()
	rest, _ := io.ReadAll(br)
	if len(rest) > 0 {
		fmt.Printf("< (after the script) %s", rest)
	}
	return cmd.Wait()
}

// mask prints m with keys sorted and run-dependent values masked.
func mask(m obj) string {
	var walk func(v any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			c := obj{}
			for k, e := range x {
				switch k {
				case "session_id", "timestamp_ms":
					c[k] = "*"
				default:
					c[k] = walk(e)
				}
			}
			return c
		case []any:
			for i := range x {
				x[i] = walk(x[i])
			}
		}
		return v
	}
	b, _ := json.Marshal(walk(m)) // encoding/json sorts map keys
	return string(b)
}

// mcpParent connects to the MCP server argv with roots and a sampling
// handler, then calls tools that make the server ask the client for roots,
// a sampled message and a ping, and send a log notification.
func mcpParent(argv []string) error {
	if len(argv) == 0 {
		return fmt.Errorf("mcp-parent needs a server command")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var (
		mu     sync.Mutex
		logs   []string
		logged = make(chan struct{}, 1)
	)
	client := mcp.NewClient(&mcp.Implementation{Name: "testpeer", Version: "v1.0.0"}, &mcp.ClientOptions{
		CreateMessageHandler: func(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			fmt.Println("sampling request from the server")
			return &mcp.CreateMessageResult{Model: "test-model", Role: "assistant", Content: &mcp.TextContent{Text: "sampled text"}}, nil
		},
		LoggingMessageHandler: func(ctx context.Context, req *mcp.LoggingMessageRequest) {
			mu.Lock()
			logs = append(logs, fmt.Sprintf("log %s: %v", req.Params.Level, req.Params.Data))
			mu.Unlock()
			select {
			case logged <- struct{}{}:
			default:
			}
		},
	})
	client.AddRoots(&mcp.Root{Name: "project", URI: "file:///project"})
	// 2025-11-25: the last version in which a server may send requests of
	// its own while serving one (2026-07-28 replaced them with InputRequests).
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(argv[0], argv[1:]...)}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		return err
	}
	defer cs.Close()
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		return err
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		return err
	}
	var names []string
	for _, t := range tools.Tools {
		names = append(names, t.Name)
	}
	sort.Strings(names)
	fmt.Println("tools:", strings.Join(names, ", "))
	for _, call := range []struct {
		name string
		args any
	}{{"greet", obj{"name": "replay"}}, {"roots", obj{}}, {"sample", obj{}}, {"ping", obj{}}, {"log", obj{}}} {
		// RPCTAP_TESTPEER_CALL_TIMEOUT bounds each call, so that a test
		// that drops an answer (rpctap ctl drop) sees the client give up
		// on it as it would on a lost answer, and go on.
		callCtx, callCancel := ctx, context.CancelFunc(func() {})
		if d, err := time.ParseDuration(os.Getenv("RPCTAP_TESTPEER_CALL_TIMEOUT")); err == nil && d > 0 {
			callCtx, callCancel = context.WithTimeout(ctx, d)
		}
		res, err := cs.CallTool(callCtx, &mcp.CallToolParams{Name: call.name, Arguments: call.args})
		callCancel()
		if err != nil {
			fmt.Printf("%s: error %v\n", call.name, err)
			continue
		}
		var texts []string
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				texts = append(texts, tc.Text)
			}
		}
		fmt.Printf("%s: error=%v %s\n", call.name, res.IsError, strings.Join(texts, " | "))
	}
	// The SDK runs notification handlers on their own goroutines: wait for
	// the log the "log" tool sent before printing.
	select {
	case <-logged:
	case <-time.After(10 * time.Second):
		fmt.Println("no log notification within 10s")
	}
	mu.Lock()
	defer mu.Unlock()
	for _, l := range logs {
		fmt.Println(l)
	}
	return nil
}
