package replay

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/internal/framing"
)

// clFrame is a Content-Length framed frame record, as the recorder writes it.
func clFrame(d cassette.Dir, body string) cassette.Record {
	r := cassette.NewLineRecord(cassette.KindFrame, d, []byte(body), "")
	r.Hdr = fmt.Sprintf("Content-Length: %d\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n", len(body))
	return r
}

// TestReplayContentLengthRewritesLength: a fake LSP server answers a live
// client whose ids differ from the recording's; the answer carries the live
// id, and its header counts the bytes actually sent (the recorded
// Content-Type kept), so the client's reader stays in step. A request the
// cassette lacks is refused in a Content-Length framed error.
func TestReplayContentLengthRewritesLength(t *testing.T) {
	b := newBuilder("lsp")
	b.event(cassette.EventStart, nil)
	b.add(clFrame(dirIn, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"processId":1,"capabilities":{}}}`))
	b.add(clFrame(dirOut, `{"jsonrpc":"2.0","id":1,"result":{"capabilities":{}}}`))
	b.add(clFrame(dirIn, `{"jsonrpc":"2.0","id":2,"method":"shutdown"}`))
	b.add(clFrame(dirOut, `{"jsonrpc":"2.0","id":2,"result":null}`))
	b.event(cassette.EventStdinEOF, nil)
	exit := 0
	b.event(cassette.EventExit, &exit)
	rec := FromRecords("lsp.cassette", b.end())

	var live bytes.Buffer
	send := func(body string) { fmt.Fprintf(&live, "Content-Length: %d\r\n\r\n%s", len(body), body) }
	send(`{"jsonrpc":"2.0","id":1000,"method":"initialize","params":{"processId":1,"capabilities":{}}}`)
	send(`{"jsonrpc":"2.0","id":7,"method":"textDocument/hover","params":{"textDocument":{"uri":"file:///a"},"position":{"line":0,"character":0}}}`)
	send(`{"jsonrpc":"2.0","id":1001,"method":"shutdown"}`)
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := RunChild(ctx, rec, &live, &out, io.Discard, nil, WithSpeed(0)); err != nil && !strings.Contains(err.Error(), "diverg") {
		t.Fatal(err)
	}
	// Read back what the fake server wrote, as a client would.
	var got []string
	sp := framing.NewSplitter(framing.ContentLength, 0)
	sp.Feed(out.Bytes(), func(hdr, body []byte, _ string, part bool) {
		if hdr == nil || part {
			t.Errorf("out of step at %q", body)
			return
		}
		n, _ := framing.ContentLengthOf(hdr)
		if int(n) != len(body) {
			t.Errorf("header says %d, body is %d bytes: %q", n, len(body), body)
		}
		got = append(got, string(hdr)+string(body))
	})
	sp.End(func(hdr, body []byte, _ string, _ bool) { t.Errorf("bytes left over: %q%q", hdr, body) })
	if len(got) != 3 {
		t.Fatalf("%d messages, want 3 (initialize's answer, the refusal, shutdown's answer):\n%q", len(got), out.String())
	}
	if !strings.Contains(got[0], `"id":1000,"result"`) || !strings.Contains(got[0], "Content-Type: application/vscode-jsonrpc") {
		t.Errorf("initialize's answer: %q", got[0])
	}
	if !strings.Contains(got[1], `"id":7,"error"`) || !strings.Contains(got[1], "-32601") {
		t.Errorf("the unrecorded hover was not refused in a framed error: %q", got[1])
	}
	if !strings.Contains(got[2], `"id":1001,"result":null`) {
		t.Errorf("shutdown's answer: %q", got[2])
	}
}
