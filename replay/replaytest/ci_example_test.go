package replaytest_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"testing"

	"github.com/rpctap/rpctap/replay"
	"github.com/rpctap/rpctap/replay/replaytest"
)

// listTools is the parent under test: it starts an MCP session with a
// server on w/r and returns the names of the server's tools.
func listTools(w io.Writer, r io.Reader) ([]string, error) {
	in := bufio.NewScanner(r)
	call := func(frame string) (json.RawMessage, error) {
		if _, err := fmt.Fprintln(w, frame); err != nil {
			return nil, err
		}
		if !in.Scan() {
			return nil, fmt.Errorf("the server hung up: %v", in.Err())
		}
		var resp struct {
			Result json.RawMessage `json:"result"`
			Error  *struct{ Message string }
		}
		if err := json.Unmarshal(in.Bytes(), &resp); err != nil {
			return nil, err
		}
		if resp.Error != nil {
			return nil, fmt.Errorf("server error: %s", resp.Error.Message)
		}
		return resp.Result, nil
	}
	if _, err := call(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"my-client","version":"1.0.0"}}}`); err != nil {
		return nil, err
	}
	if _, err := fmt.Fprintln(w, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil {
		return nil, err
	}
	res, err := call(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if err != nil {
		return nil, err
	}
	var list struct{ Tools []struct{ Name string } }
	if err := json.Unmarshal(res, &list); err != nil {
		return nil, err
	}
	var names []string
	for _, t := range list.Tools {
		names = append(names, t.Name)
	}
	return names, nil
}

// TestListTools runs the parent against a fake server that replays a
// cassette built here with replaytest (a cassette recorded with `rpctap
// record` works the same way): no server binary, no network.
func TestListTools(t *testing.T) {
	cas := filepath.Join(t.TempDir(), "server.cassette")
	recs := replaytest.New("mcp").
		In(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"my-client","version":"1.0.0"}}}`).
		Out(`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"my-server","version":"0.3.0"}}}`).
		In(`{"jsonrpc":"2.0","method":"notifications/initialized"}`).
		In(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`).
		Out(`{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"search","inputSchema":{"type":"object"}},{"name":"fetch","inputSchema":{"type":"object"}}]}}`).
		End()
	if err := replaytest.WriteFile(cas, recs, true); err != nil {
		t.Fatal(err)
	}
	child, err := replay.NewChild(cas, replay.WithSpeed(0), replay.WithStrict(true))
	if err != nil {
		t.Fatal(err)
	}
	names, err := listTools(child.Stdin, child.Stdout)
	if err != nil {
		t.Fatal(err)
	}
	child.Stdin.Close()
	res, err := child.Wait()
	if err != nil {
		t.Fatalf("the parent diverged from the recording: %v (%d divergences)", err, len(res.Divergences))
	}
	if fmt.Sprint(names) != "[search fetch]" {
		t.Errorf("tools %v, want [search fetch]", names)
	}
}
