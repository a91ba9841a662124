package replay_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/coder/acp-go-sdk"
	"github.com/rpctap/rpctap/replay"
)

// exampleClient is the parent under test: an ACP client (editor side) built
// on the ACP Go SDK. A real one would render chunks and ask the user.
type exampleClient struct {
	mu     sync.Mutex
	chunks []string
	asked  string
}

func (c *exampleClient) SessionUpdate(_ context.Context, n acp.SessionNotification) error {
	if u := n.Update.AgentMessageChunk; u != nil && u.Content.Text != nil {
		c.mu.Lock()
		c.chunks = append(c.chunks, u.Content.Text.Text)
		c.mu.Unlock()
	}
	return nil
}

func (c *exampleClient) RequestPermission(_ context.Context, p acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	c.mu.Lock()
	c.asked = *p.ToolCall.Title
	c.mu.Unlock()
	return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{
		Selected: &acp.RequestPermissionOutcomeSelected{OptionId: p.Options[0].OptionId}}}, nil
}

var errUnused = errors.New("not used in this session")

func (c *exampleClient) ReadTextFile(context.Context, acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	return acp.ReadTextFileResponse{}, errUnused
}
func (c *exampleClient) WriteTextFile(context.Context, acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	return acp.WriteTextFileResponse{}, errUnused
}
func (c *exampleClient) CreateTerminal(context.Context, acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	return acp.CreateTerminalResponse{}, errUnused
}
func (c *exampleClient) KillTerminal(context.Context, acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	return acp.KillTerminalResponse{}, errUnused
}
func (c *exampleClient) TerminalOutput(context.Context, acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	return acp.TerminalOutputResponse{}, errUnused
}
func (c *exampleClient) ReleaseTerminal(context.Context, acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	return acp.ReleaseTerminalResponse{}, errUnused
}
func (c *exampleClient) WaitForTerminalExit(context.Context, acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	return acp.WaitForTerminalExitResponse{}, errUnused
}

// runPrompt is the client's side of the recorded session: initialize, a
// new session in cwd, one prompt. A real client would do this in its own
// code; the examples share it.
func runPrompt(child *replay.Child, client *exampleClient, cwd string) (acp.SessionId, acp.StopReason, error) {
	conn := acp.NewClientSideConnection(client, child.Stdin, child.Stdout)
	conn.SetLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx := context.Background()
	if _, err := conn.Initialize(ctx, acp.InitializeRequest{
		ProtocolVersion:    acp.ProtocolVersionNumber,
		ClientCapabilities: acp.ClientCapabilities{Fs: acp.FileSystemCapabilities{ReadTextFile: true, WriteTextFile: true}, Terminal: true},
	}); err != nil {
		return "", "", fmt.Errorf("initialize: %w", err)
	}
	sess, err := conn.NewSession(ctx, acp.NewSessionRequest{Cwd: cwd, McpServers: []acp.McpServer{}})
	if err != nil {
		return "", "", fmt.Errorf("session/new: %w", err)
	}
	resp, err := conn.Prompt(ctx, acp.PromptRequest{SessionId: sess.SessionId, Prompt: []acp.ContentBlock{acp.TextBlock("Hello, agent!")}})
	if err != nil {
		return "", "", fmt.Errorf("session/prompt: %w", err)
	}
	return sess.SessionId, resp.StopReason, nil
}

// A Go parent's regression test: the agent is replaced by a fake child that
// replays a cassette recorded with `rpctap record` (here, the ACP Go SDK's
// example client and agent: `acp-client rpctap record -o
// testdata/acp-example.cassette -- acp-agent`). No agent binary, no model, no network; in a real test the
// prints below would be t.Fatal checks.
func Example_goParentTest() {
	child, err := replay.NewChild("testdata/acp-example.cassette",
		replay.WithSpeed(0),     // no recorded pauses
		replay.WithStrict(true), // any divergence fails Wait
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	client := &exampleClient{}
	// The cwd differs from the recording's; ACP's default ignore rules say
	// it does not matter.
	_, stop, err := runPrompt(child, client, "/tmp/somewhere-else")
	if err != nil {
		fmt.Println(err)
		return
	}
	child.Stdin.Close() // like closing a real agent's stdin
	res, err := child.Wait()

	fmt.Println("stop reason:", stop)
	fmt.Println("permission asked for:", client.asked)
	fmt.Println("message chunks:", len(client.chunks))
	fmt.Println("divergences:", len(res.Divergences), "error:", err)
	if res.Exit == nil {
		// The example client kills its agent when it is done, so the
		// recording has no exit event (and the fake child none to give).
		fmt.Println("recorded exit status: none, the client killed the agent")
	} else {
		fmt.Println("recorded exit status:", res.Exit.Code)
	}
	// Output:
	// stop reason: end_turn
	// permission asked for: Modifying critical configuration file
	// message chunks: 4
	// divergences: 0 error: <nil>
	// recorded exit status: none, the client killed the agent
}

// A portable cassette (rpctap record --portable, or rpctap normalize of an
// old one) holds ${RPCTAP_...} placeholders instead of the recording
// machine's directory and the agent's session id. The fake child fills them
// in: the cwd with the one the live client sends, the session id with a
// fresh one, or with values a test pins with WithBinding. Here the default
// ignore rules are off, so only the placeholders let another cwd through.
func ExampleWithBinding() {
	child, err := replay.NewChild("testdata/acp-portable.cassette",
		replay.WithSpeed(0),
		replay.WithStrict(true),
		replay.WithoutDefaultIgnores(),
		replay.WithBinding("${RPCTAP_SESSION_1}", "sess_pinned"),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	sess, stop, err := runPrompt(child, &exampleClient{}, "/home/someone/checkout")
	if err != nil {
		fmt.Println(err)
		return
	}
	child.Stdin.Close()
	res, err := child.Wait()
	fmt.Println("session:", sess)
	fmt.Println("stop reason:", stop)
	fmt.Println("divergences:", len(res.Divergences), "error:", err)
	// Output:
	// session: sess_pinned
	// stop reason: end_turn
	// divergences: 0 error: <nil>
}

// A failure path of the parent under test: the fake agent refuses
// session/new with the protocol's own error, as an agent that needs
// authentication would. Faults are rules of the same form as
// `rpctap replay --fault`: an action (delay, drop, duplicate, split,
// truncate, corrupt, error, kill) and selectors (method=, kind=, frame=,
// times=).
func ExampleWithFaults() {
	refuse, err := replay.ParseFault("error method=session/new")
	if err != nil {
		fmt.Println(err)
		return
	}
	child, err := replay.NewChild("testdata/acp-example.cassette", replay.WithSpeed(0), replay.WithFaults(refuse))
	if err != nil {
		fmt.Println(err)
		return
	}
	_, _, err = runPrompt(child, &exampleClient{}, "/tmp/project")
	fmt.Println("client:", err != nil)
	child.Stdin.Close()
	res, _ := child.Wait()
	fmt.Println("faults injected:", res.Faults)
	// Output:
	// client: true
	// faults injected: [error method=session/new on record #6 (response session/new)]
}

// A fault rule may select its frame with the viewer's filter language
// (filter=, & instead of spaces): here the answer to session/new.
func ExampleParseFault_filter() {
	refuse, err := replay.ParseFault("error filter=kind:response&m=session/new")
	if err != nil {
		fmt.Println(err)
		return
	}
	child, err := replay.NewChild("testdata/acp-example.cassette", replay.WithSpeed(0), replay.WithFaults(refuse))
	if err != nil {
		fmt.Println(err)
		return
	}
	_, _, err = runPrompt(child, &exampleClient{}, "/tmp/project")
	fmt.Println("client:", err != nil)
	child.Stdin.Close()
	res, _ := child.Wait()
	fmt.Println("faults injected:", res.Faults)
	// Output:
	// client: true
	// faults injected: [error filter=kind:response&m=session/new on record #6 (response session/new)]
}
