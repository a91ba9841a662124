package demo

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// ClientOptions tunes the demo client.
type ClientOptions struct {
	// Out receives the human transcript of the session.
	Out io.Writer
	// Prompt is the user's message.
	Prompt string
	// Deny answers the permission request with "reject" instead of "allow".
	Deny bool
	// Timeout bounds each request; zero means 30 s.
	Timeout time.Duration
}

// RunClient speaks ACP as a client (editor) to an agent whose stdin is w and
// whose stdout is r: initialize, session/new, one session/prompt, answering
// the agent's permission and file requests. It closes w when the turn ended.
func RunClient(r io.Reader, w io.WriteCloser, opt ClientOptions) error {
	if opt.Out == nil {
		opt.Out = io.Discard
	}
	if opt.Prompt == "" {
		opt.Prompt = "Please add a greeting to README.md"
	}
	if opt.Timeout == 0 {
		opt.Timeout = 30 * time.Second
	}
	cl := &client{c: &conn{w: w}, opt: opt, waiting: map[string]chan message{}}
	readErr := make(chan error, 1)
	go cl.readLoop(r, readErr)

	defer w.Close()
	init, err := cl.call("initialize", map[string]any{
		"protocolVersion":    1,
		"clientCapabilities": map[string]any{"fs": map[string]any{"readTextFile": true, "writeTextFile": false}, "terminal": false},
		"clientInfo":         map[string]any{"name": "rpctap-demo-client", "version": "1.0.0"},
	})
	if err != nil {
		return err
	}
	var ir struct {
		ProtocolVersion int `json:"protocolVersion"`
		AgentInfo       struct {
			Name string `json:"name"`
		} `json:"agentInfo"`
	}
	_ = json.Unmarshal(init, &ir)
	fmt.Fprintf(opt.Out, "connected to %s (ACP v%d)\n", orDefault(ir.AgentInfo.Name, "agent"), ir.ProtocolVersion)

	sess, err := cl.call("session/new", map[string]any{"cwd": "/demo/project", "mcpServers": []any{}})
	if err != nil {
		return err
	}
	var sr struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal(sess, &sr); err != nil || sr.SessionID == "" {
		return fmt.Errorf("session/new: no sessionId in %s", sess)
	}
	fmt.Fprintf(opt.Out, "session %s\n> %s\n", sr.SessionID, opt.Prompt)

	res, err := cl.call("session/prompt", map[string]any{"sessionId": sr.SessionID, "prompt": []any{text(opt.Prompt)}})
	if err != nil {
		return err
	}
	var pr struct {
		StopReason string `json:"stopReason"`
	}
	_ = json.Unmarshal(res, &pr)
	cl.flushText()
	fmt.Fprintf(opt.Out, "turn ended: %s\n", pr.StopReason)
	w.Close()
	select {
	case err := <-readErr:
		return err
	case <-time.After(opt.Timeout):
		return errors.New("agent did not close its stdout after stdin was closed")
	}
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

type client struct {
	c   *conn
	opt ClientOptions

	mu      sync.Mutex
	nextID  int
	waiting map[string]chan message
	text    strings.Builder // agent message chunks of the current turn
}

func (cl *client) call(method string, params any) (json.RawMessage, error) {
	cl.mu.Lock()
	cl.nextID++
	id := cl.nextID
	ch := make(chan message, 1)
	cl.waiting[fmt.Sprint(id)] = ch
	cl.mu.Unlock()
	if err := cl.c.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}); err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	select {
	case m, ok := <-ch:
		if !ok {
			return nil, fmt.Errorf("%s: the agent closed its stdout before answering", method)
		}
		if m.Error != nil {
			return nil, fmt.Errorf("%s: agent error %d: %s", method, m.Error.Code, m.Error.Message)
		}
		return m.Result, nil
	case <-time.After(cl.opt.Timeout):
		return nil, fmt.Errorf("%s: no answer within %s", method, cl.opt.Timeout)
	}
}

func (cl *client) readLoop(r io.Reader, done chan<- error) {
	in := bufio.NewReader(r)
	defer func() {
		cl.mu.Lock()
		for k, ch := range cl.waiting {
			close(ch)
			delete(cl.waiting, k)
		}
		cl.mu.Unlock()
	}()
	for {
		line, err := in.ReadBytes('\n')
		if len(line) > 0 {
			var m message
			if jerr := json.Unmarshal(line, &m); jerr == nil {
				cl.dispatch(m)
			}
		}
		if errors.Is(err, io.EOF) {
			done <- nil
			return
		}
		if err != nil {
			done <- err
			return
		}
	}
}

func (cl *client) dispatch(m message) {
	switch {
	case m.Method == "" && m.ID != nil:
		cl.mu.Lock()
		ch := cl.waiting[string(m.ID)]
		delete(cl.waiting, string(m.ID))
		cl.mu.Unlock()
		if ch != nil {
			ch <- m
		}
	case m.Method == "session/update":
		cl.update(m.Params)
	case m.Method == "session/request_permission":
		var p struct {
			ToolCall struct {
				Title string `json:"title"`
			} `json:"toolCall"`
		}
		_ = json.Unmarshal(m.Params, &p)
		choice := "allow"
		if cl.opt.Deny {
			choice = "reject"
		}
		cl.flushText()
		fmt.Fprintf(cl.opt.Out, "? permission: %s -> %s\n", p.ToolCall.Title, choice)
		_ = cl.c.reply(m.ID, map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": choice}})
	case m.Method == "fs/read_text_file":
		var p struct {
			Path string `json:"path"`
		}
		_ = json.Unmarshal(m.Params, &p)
		fmt.Fprintf(cl.opt.Out, "  (agent reads %s)\n", p.Path)
		_ = cl.c.reply(m.ID, map[string]any{"content": "# Demo\n\nA project used by the rpctap demo.\n"})
	case m.ID != nil:
		_ = cl.c.replyError(m.ID, -32601, "method not found: "+m.Method)
	}
}

func (cl *client) update(params json.RawMessage) {
	var p struct {
		Update struct {
			Kind    string `json:"sessionUpdate"`
			Content struct {
				Text string `json:"text"`
			} `json:"content"`
			Title  string `json:"title"`
			Status string `json:"status"`
			ID     string `json:"toolCallId"`
		} `json:"update"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	u := p.Update
	switch u.Kind {
	case "agent_message_chunk":
		cl.mu.Lock()
		cl.text.WriteString(u.Content.Text)
		cl.mu.Unlock()
	case "tool_call":
		cl.flushText()
		fmt.Fprintf(cl.opt.Out, "  [tool %s] %s (%s)\n", u.ID, u.Title, u.Status)
	case "tool_call_update":
		fmt.Fprintf(cl.opt.Out, "  [tool %s] %s\n", u.ID, u.Status)
	}
}

func (cl *client) flushText() {
	cl.mu.Lock()
	s := cl.text.String()
	cl.text.Reset()
	cl.mu.Unlock()
	if s != "" {
		fmt.Fprintf(cl.opt.Out, "< %s\n", s)
	}
}
