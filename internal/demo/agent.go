// Package demo is a small, realistic Agent Client Protocol session with no
// AI model behind it: an agent that answers initialize, session/new and
// session/prompt the way real agents do (streamed thought and message
// chunks, a plan, a tool call that needs the client's permission, a file
// read through the client), and a client that drives it. rpctap bundles it
// so that a first `rpctap demo` records a real session with nothing else
// installed, and so that tests have a child that speaks a real protocol.
//
// Both sides are written from the ACP message catalogue; they speak
// newline-delimited JSON-RPC 2.0 on the child's stdin and stdout.
package demo

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// message is a JSON-RPC 2.0 frame, wide enough for requests, notifications
// and responses in both directions.
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// conn serialises writes of whole lines; reads happen on one goroutine.
type conn struct {
	mu sync.Mutex
	w  io.Writer
}

func (c *conn) send(m any) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	_, err = c.w.Write(append(b, '\n'))
	return err
}

func (c *conn) reply(id json.RawMessage, result any) error {
	return c.send(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
}

func (c *conn) replyError(id json.RawMessage, code int, msg string) error {
	return c.send(map[string]any{"jsonrpc": "2.0", "id": id, "error": rpcError{Code: code, Message: msg}})
}

func (c *conn) notify(method string, params any) error {
	return c.send(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
}

// AgentOptions tunes the demo agent.
type AgentOptions struct {
	// Delay is the pause between streamed chunks, so a live viewer has
	// something to follow. Zero streams as fast as possible.
	Delay time.Duration
	// Log receives the agent's diagnostics (its stderr).
	Log io.Writer
}

// RunAgent speaks ACP as an agent on r (its stdin) and w (its stdout) until r
// ends. It returns nil on a clean end of input.
func RunAgent(r io.Reader, w io.Writer, opt AgentOptions) error {
	if opt.Log == nil {
		opt.Log = io.Discard
	}
	a := &agent{c: &conn{w: w}, opt: opt, pending: map[string]chan message{}}
	fmt.Fprintln(opt.Log, "demo-agent: ready (ACP protocol version 1, no model)")
	in := bufio.NewReader(r)
	var turns sync.WaitGroup
	defer turns.Wait()
	for {
		line, err := in.ReadBytes('\n')
		if len(line) > 0 {
			var m message
			if jerr := json.Unmarshal(line, &m); jerr != nil {
				fmt.Fprintf(opt.Log, "demo-agent: ignoring a line that is not JSON: %v\n", jerr)
			} else if m.Method == "session/prompt" {
				// A prompt turn waits on the client (permission, file
				// read) whose answers arrive on this same reader, so the
				// turn runs on its own goroutine.
				turns.Add(1)
				go func() {
					defer turns.Done()
					a.prompt(m)
				}()
			} else if err := a.handle(m); err != nil {
				return err
			}
		}
		if errors.Is(err, io.EOF) {
			fmt.Fprintln(opt.Log, "demo-agent: stdin closed, exiting")
			return nil
		}
		if err != nil {
			return err
		}
	}
}

type agent struct {
	c   *conn
	opt AgentOptions

	mu      sync.Mutex
	nextID  int
	pending map[string]chan message // our requests to the client, by id
	session string
}

func (a *agent) handle(m message) error {
	switch {
	case m.Method == "" && m.ID != nil: // a response to one of our requests
		a.mu.Lock()
		ch := a.pending[string(m.ID)]
		delete(a.pending, string(m.ID))
		a.mu.Unlock()
		if ch != nil {
			ch <- m
		}
		return nil
	case m.Method == "initialize":
		return a.c.reply(m.ID, map[string]any{
			"protocolVersion": 1,
			"agentCapabilities": map[string]any{
				"loadSession":        false,
				"promptCapabilities": map[string]any{"image": false, "audio": false, "embeddedContext": true},
			},
			"agentInfo":   map[string]any{"name": "rpctap-demo-agent", "version": "1.0.0"},
			"authMethods": []any{},
		})
	case m.Method == "session/new":
		a.mu.Lock()
		a.session = "sess_demo_0001"
		a.mu.Unlock()
		return a.c.reply(m.ID, map[string]any{"sessionId": "sess_demo_0001"})
	case m.Method == "session/cancel":
		return nil
	case m.ID != nil:
		return a.c.replyError(m.ID, -32601, "method not found: "+m.Method)
	}
	return nil
}

// request sends a request to the client and waits for its answer.
func (a *agent) request(method string, params any) (message, error) {
	a.mu.Lock()
	id := a.nextID
	a.nextID++
	key := fmt.Sprint(id)
	ch := make(chan message, 1)
	a.pending[key] = ch
	a.mu.Unlock()
	if err := a.c.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}); err != nil {
		return message{}, err
	}
	select {
	case m := <-ch:
		return m, nil
	case <-time.After(30 * time.Second):
		return message{}, fmt.Errorf("no answer to %s", method)
	}
}

func (a *agent) pause() {
	if a.opt.Delay > 0 {
		time.Sleep(a.opt.Delay)
	}
}

func (a *agent) update(u map[string]any) {
	a.pause()
	_ = a.c.notify("session/update", map[string]any{"sessionId": a.session, "update": u})
}

func text(s string) map[string]any { return map[string]any{"type": "text", "text": s} }

// prompt plays one turn: think, plan, read a file through the client, ask
// permission for an edit, report, and end the turn.
func (a *agent) prompt(m message) {
	a.mu.Lock()
	if a.session == "" {
		a.session = "sess_demo_0001"
	}
	a.mu.Unlock()
	for _, s := range []string{"The user wants a greeting. ", "I should look at README.md first, ", "then propose a small edit."} {
		a.update(map[string]any{"sessionUpdate": "agent_thought_chunk", "content": text(s)})
	}
	a.update(map[string]any{"sessionUpdate": "plan", "entries": []any{
		map[string]any{"content": "Read README.md", "priority": "high", "status": "in_progress"},
		map[string]any{"content": "Add a greeting", "priority": "medium", "status": "pending"},
	}})
	a.update(map[string]any{"sessionUpdate": "tool_call", "toolCallId": "call_1", "title": "Read README.md",
		"kind": "read", "status": "in_progress", "locations": []any{map[string]any{"path": "README.md"}}})
	a.pause()
	read, err := a.request("fs/read_text_file", map[string]any{"sessionId": a.session, "path": "README.md", "limit": 20})
	status := "completed"
	if err != nil || read.Error != nil {
		status = "failed"
	}
	a.update(map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": "call_1", "status": status})
	a.update(map[string]any{"sessionUpdate": "tool_call", "toolCallId": "call_2", "title": "Add a greeting to README.md",
		"kind": "edit", "status": "pending",
		"content": []any{map[string]any{"type": "diff", "path": "README.md", "oldText": "# Demo", "newText": "# Demo\n\nHello from the demo agent!"}}})
	a.pause()
	perm, err := a.request("session/request_permission", map[string]any{
		"sessionId": a.session,
		"toolCall":  map[string]any{"toolCallId": "call_2", "title": "Add a greeting to README.md", "kind": "edit", "status": "pending"},
		"options": []any{
			map[string]any{"optionId": "allow", "name": "Allow this edit", "kind": "allow_once"},
			map[string]any{"optionId": "reject", "name": "Skip it", "kind": "reject_once"},
		},
	})
	allowed := false
	if err == nil && perm.Result != nil {
		var r struct {
			Outcome struct {
				Outcome  string `json:"outcome"`
				OptionID string `json:"optionId"`
			} `json:"outcome"`
		}
		_ = json.Unmarshal(perm.Result, &r)
		allowed = r.Outcome.Outcome == "selected" && r.Outcome.OptionID == "allow"
	}
	if allowed {
		a.update(map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": "call_2", "status": "completed"})
	} else {
		a.update(map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": "call_2", "status": "failed"})
	}
	reply := []string{"I read README.md", " and ", "added a greeting", " to it."}
	if !allowed {
		reply = []string{"I read README.md", " but left it unchanged,", " as you asked."}
	}
	for _, s := range reply {
		a.update(map[string]any{"sessionUpdate": "agent_message_chunk", "content": text(s)})
	}
	a.pause()
	_ = a.c.reply(m.ID, map[string]any{"stopReason": "end_turn"})
}
