// Command deepclient is a test peer of rpctap's (record --deep): an ACP
// client on the ACP Go SDK that runs the agent command it is given (after
// its flags), hands it -n stdio MCP servers in session/new (each the
// command of -server, named mcp-1, mcp-2, ..., with an env variable
// MCP_TOKEN whose value is a secret), prompts once and prints what it
// sees, one line each:
//
//	session sess-1
//	tool_call call_1 in_progress greet via mcp-1
//	tool_call_update call_1 completed Hi rpctap
//	stop end_turn
//
// With -load it then sends session/load for the same session with the same
// servers and prompts again. It closes the agent's stdin at the end and
// waits for the agent to exit (no kill: every process ends its own way, so
// the cassettes end normally). Exit status 1 on any error, with one line.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"

	acp "github.com/coder/acp-go-sdk"
)

var (
	serverCmd = flag.String("server", "", "the MCP server command line to hand the agent (split on spaces)")
	n         = flag.Int("n", 1, "how many stdio mcpServers entries")
	load      = flag.Bool("load", false, "after the first turn, session/load the session and prompt again")
	secret    = flag.String("secret", "s3cr3t-value", "the MCP_TOKEN env value of each entry")
)

type client struct{ mu sync.Mutex }

func (c *client) say(format string, a ...any) {
	c.mu.Lock()
	fmt.Printf(format+"\n", a...)
	c.mu.Unlock()
}

func (c *client) SessionUpdate(ctx context.Context, p acp.SessionNotification) error {
	u := p.Update
	switch {
	case u.ToolCall != nil:
		c.say("tool_call %s %s %s", u.ToolCall.ToolCallId, u.ToolCall.Status, u.ToolCall.Title)
	case u.ToolCallUpdate != nil:
		st := ""
		if u.ToolCallUpdate.Status != nil {
			st = string(*u.ToolCallUpdate.Status)
		}
		var texts []string
		for _, tc := range u.ToolCallUpdate.Content {
			if tc.Content != nil && tc.Content.Content.Text != nil {
				texts = append(texts, tc.Content.Content.Text.Text)
			}
		}
		c.say("tool_call_update %s %s %s", u.ToolCallUpdate.ToolCallId, st, strings.Join(texts, " "))
	case u.AgentMessageChunk != nil && u.AgentMessageChunk.Content.Text != nil:
		c.say("message %s", u.AgentMessageChunk.Content.Text.Text)
	}
	return nil
}

func (c *client) RequestPermission(ctx context.Context, p acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Cancelled: &acp.RequestPermissionOutcomeCancelled{}}}, nil
}

func (c *client) ReadTextFile(ctx context.Context, p acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	return acp.ReadTextFileResponse{}, acp.NewMethodNotFound(acp.ClientMethodFsReadTextFile)
}

func (c *client) WriteTextFile(ctx context.Context, p acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	return acp.WriteTextFileResponse{}, acp.NewMethodNotFound(acp.ClientMethodFsWriteTextFile)
}

func (c *client) CreateTerminal(ctx context.Context, p acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	return acp.CreateTerminalResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalCreate)
}

func (c *client) KillTerminal(ctx context.Context, p acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	return acp.KillTerminalResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalKill)
}

func (c *client) TerminalOutput(ctx context.Context, p acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	return acp.TerminalOutputResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalOutput)
}

func (c *client) ReleaseTerminal(ctx context.Context, p acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	return acp.ReleaseTerminalResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalRelease)
}

func (c *client) WaitForTerminalExit(ctx context.Context, p acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	return acp.WaitForTerminalExitResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalWaitForExit)
}

func fail(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "deepclient: "+format+"\n", a...)
	os.Exit(1)
}

func main() {
	flag.Parse()
	if flag.NArg() == 0 || *serverCmd == "" {
		fail("usage: deepclient -server 'MCP SERVER CMD' [-n N] [-load] -- AGENT [ARGS...]")
	}
	cmd := exec.Command(flag.Arg(0), flag.Args()[1:]...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		fail("%v", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		fail("%v", err)
	}
	if err := cmd.Start(); err != nil {
		fail("start agent: %v", err)
	}
	c := &client{}
	conn := acp.NewClientSideConnection(c, stdin, stdout)
	ctx := context.Background()
	if _, err := conn.Initialize(ctx, acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber,
		ClientInfo: &acp.Implementation{Name: "rpctap-deepclient", Version: "0.1.0"}}); err != nil {
		fail("initialize: %v", err)
	}
	words := strings.Fields(*serverCmd)
	var servers []acp.McpServer
	for i := 1; i <= *n; i++ {
		servers = append(servers, acp.McpServer{Stdio: &acp.McpServerStdio{
			Name: fmt.Sprintf("mcp-%d", i), Command: words[0], Args: append([]string{}, words[1:]...),
			Env: []acp.EnvVariable{{Name: "MCP_TOKEN", Value: *secret}},
		}})
	}
	cwd, _ := os.Getwd()
	ns, err := conn.NewSession(ctx, acp.NewSessionRequest{Cwd: cwd, McpServers: servers})
	if err != nil {
		fail("session/new: %v", err)
	}
	c.say("session %s", ns.SessionId)
	turn := func() {
		r, err := conn.Prompt(ctx, acp.PromptRequest{SessionId: ns.SessionId,
			Prompt: []acp.ContentBlock{acp.TextBlock("greet rpctap with every tool you have")}})
		if err != nil {
			fail("session/prompt: %v", err)
		}
		c.say("stop %s", r.StopReason)
	}
	turn()
	if *load {
		if _, err := conn.LoadSession(ctx, acp.LoadSessionRequest{SessionId: ns.SessionId, Cwd: cwd, McpServers: servers}); err != nil {
			fail("session/load: %v", err)
		}
		c.say("loaded %s", ns.SessionId)
		turn()
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		fail("agent: %v", err)
	}
}
