// Command deepagent is a test peer of rpctap's (record --deep): an ACP
// agent on the ACP Go SDK that starts each stdio MCP server it is handed in
// session/new or session/load with the MCP Go SDK's client
// (mcp.CommandTransport) and uses them in its turns. On session/prompt it
// does, for each server in turn: a tool_call session/update, a tools/call
// of the server's "greet" tool (the MCP Go SDK's everything example has
// it), a tool_call_update with the tool's text and status completed; then
// it answers end_turn.
//
// Flags: -lazy starts the servers at the session's first prompt instead of
// before answering session/new (agents do both); -tool NAME calls another
// tool (arguments {"name": "rpctap"}).
//
// It exits when its stdin closes, after closing its MCP sessions (each
// server's stdin closes, so a server under rpctap record ends its cassette
// normally).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"

	acp "github.com/coder/acp-go-sdk"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var (
	lazy = flag.Bool("lazy", false, "start the MCP servers at the first prompt, not before answering session/new")
	tool = flag.String("tool", "greet", "the MCP tool to call on each server")
)

// server is one MCP server of a session.
type server struct {
	name string
	cfg  *acp.McpServerStdio
	cs   *mcp.ClientSession
}

type session struct {
	servers []*server
	started bool
}

type agent struct {
	conn *acp.AgentSideConnection

	mu       sync.Mutex
	sessions map[acp.SessionId]*session
	nextID   int
}

var (
	_ acp.Agent       = (*agent)(nil)
	_ acp.AgentLoader = (*agent)(nil)
)

func (a *agent) Initialize(ctx context.Context, p acp.InitializeRequest) (acp.InitializeResponse, error) {
	return acp.InitializeResponse{
		ProtocolVersion:   acp.ProtocolVersionNumber,
		AgentCapabilities: acp.AgentCapabilities{LoadSession: true},
		AgentInfo:         &acp.Implementation{Name: "rpctap-deepagent", Version: "0.1.0"},
	}, nil
}

func (a *agent) Authenticate(ctx context.Context, p acp.AuthenticateRequest) (acp.AuthenticateResponse, error) {
	return acp.AuthenticateResponse{}, nil
}

func (a *agent) NewSession(ctx context.Context, p acp.NewSessionRequest) (acp.NewSessionResponse, error) {
	a.mu.Lock()
	a.nextID++
	sid := acp.SessionId(fmt.Sprintf("sess-%d", a.nextID))
	a.mu.Unlock()
	if err := a.open(ctx, sid, p.McpServers); err != nil {
		return acp.NewSessionResponse{}, err
	}
	return acp.NewSessionResponse{SessionId: sid}, nil
}

func (a *agent) LoadSession(ctx context.Context, p acp.LoadSessionRequest) (acp.LoadSessionResponse, error) {
	if err := a.open(ctx, p.SessionId, p.McpServers); err != nil {
		return acp.LoadSessionResponse{}, err
	}
	return acp.LoadSessionResponse{}, nil
}

// open makes the session and, unless -lazy, starts its servers.
func (a *agent) open(ctx context.Context, sid acp.SessionId, list []acp.McpServer) error {
	s := &session{}
	for _, m := range list {
		if m.Stdio == nil {
			continue // http, sse: not this agent's business
		}
		s.servers = append(s.servers, &server{name: m.Stdio.Name, cfg: m.Stdio})
	}
	if !*lazy {
		if err := start(s); err != nil {
			closeAll(s)
			return acp.NewInternalError(map[string]any{"error": err.Error()})
		}
	}
	a.mu.Lock()
	old := a.sessions[sid]
	a.sessions[sid] = s
	a.mu.Unlock()
	if old != nil {
		closeAll(old) // session/load again: the servers it was handed now replace the old ones
	}
	return nil
}

// start connects to each server of s (the MCP initialize handshake).
func start(s *session) error {
	if s.started {
		return nil
	}
	s.started = true
	for _, sv := range s.servers {
		cmd := exec.Command(sv.cfg.Command, sv.cfg.Args...)
		cmd.Env = os.Environ()
		for _, e := range sv.cfg.Env {
			cmd.Env = append(cmd.Env, e.Name+"="+e.Value)
		}
		cmd.Stderr = os.Stderr
		c := mcp.NewClient(&mcp.Implementation{Name: "rpctap-deepagent", Version: "0.1.0"}, nil)
		cs, err := c.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			return fmt.Errorf("mcp server %s: %v", sv.name, err)
		}
		sv.cs = cs
	}
	return nil
}

func closeAll(s *session) {
	for _, sv := range s.servers {
		if sv.cs != nil {
			sv.cs.Close()
			sv.cs = nil
		}
	}
}

func (a *agent) Prompt(ctx context.Context, p acp.PromptRequest) (acp.PromptResponse, error) {
	a.mu.Lock()
	s := a.sessions[p.SessionId]
	a.mu.Unlock()
	if s == nil {
		return acp.PromptResponse{}, acp.NewInvalidParams(map[string]any{"sessionId": p.SessionId})
	}
	if err := start(s); err != nil {
		return acp.PromptResponse{}, acp.NewInternalError(map[string]any{"error": err.Error()})
	}
	for i, sv := range s.servers {
		id := acp.ToolCallId(fmt.Sprintf("call_%d", i+1))
		in := map[string]any{"name": "rpctap"}
		if err := a.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: p.SessionId,
			Update: acp.StartToolCall(id, *tool+" via "+sv.name, acp.WithStartKind(acp.ToolKindOther),
				acp.WithStartStatus(acp.ToolCallStatusInProgress), acp.WithStartRawInput(in))}); err != nil {
			return acp.PromptResponse{}, err
		}
		res, err := sv.cs.CallTool(ctx, &mcp.CallToolParams{Name: *tool, Arguments: in})
		status, text := acp.ToolCallStatusCompleted, ""
		if err != nil {
			status, text = acp.ToolCallStatusFailed, err.Error()
		} else {
			var parts []string
			for _, c := range res.Content {
				if t, ok := c.(*mcp.TextContent); ok {
					parts = append(parts, t.Text)
				}
			}
			text = strings.Join(parts, "\n")
			if res.IsError {
				status = acp.ToolCallStatusFailed
			}
		}
		if err := a.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: p.SessionId,
			Update: acp.UpdateToolCall(id, acp.WithUpdateStatus(status),
				acp.WithUpdateContent([]acp.ToolCallContent{acp.ToolContent(acp.TextBlock(text))}))}); err != nil {
			return acp.PromptResponse{}, err
		}
	}
	return acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
}

func (a *agent) Cancel(ctx context.Context, p acp.CancelNotification) error { return nil }

func (a *agent) CloseSession(ctx context.Context, p acp.CloseSessionRequest) (acp.CloseSessionResponse, error) {
	return acp.CloseSessionResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionClose)
}

func (a *agent) ListSessions(ctx context.Context, p acp.ListSessionsRequest) (acp.ListSessionsResponse, error) {
	return acp.ListSessionsResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionList)
}

func (a *agent) ResumeSession(ctx context.Context, p acp.ResumeSessionRequest) (acp.ResumeSessionResponse, error) {
	return acp.ResumeSessionResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionResume)
}

func (a *agent) SetSessionConfigOption(ctx context.Context, p acp.SetSessionConfigOptionRequest) (acp.SetSessionConfigOptionResponse, error) {
	return acp.SetSessionConfigOptionResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionSetConfigOption)
}

func (a *agent) SetSessionMode(ctx context.Context, p acp.SetSessionModeRequest) (acp.SetSessionModeResponse, error) {
	return acp.SetSessionModeResponse{}, nil
}

func main() {
	flag.Parse()
	a := &agent{sessions: map[acp.SessionId]*session{}}
	var out io.Writer = os.Stdout
	a.conn = acp.NewAgentSideConnection(a, out, os.Stdin)
	<-a.conn.Done()
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, s := range a.sessions {
		closeAll(s)
	}
}
