package viewer

import (
	"encoding/json"
	"testing"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/internal/testpeers"
)

const ms = int64(1e6)

// rb builds records for tests with increasing times.
type rb struct {
	recs []cassette.Record
	t    int64
}

func newRB(protocol string, argv ...string) *rb {
	b := &rb{}
	b.recs = append(b.recs, cassette.Record{K: cassette.KindHeader, Header: &cassette.Header{
		Format: cassette.FormatName, Version: "1.0", Protocol: protocol, Argv: argv}})
	return b
}

func (b *rb) at(dt int64) *rb { b.t += dt; return b }

func (b *rb) add(r cassette.Record) *rb {
	r.N = uint64(len(b.recs))
	r.T = b.t
	b.recs = append(b.recs, r)
	return b
}

// frame adds a frame; it is classified the way the recorder would.
func (b *rb) frame(d cassette.Dir, js string) *rb {
	r := cassette.Record{K: cassette.KindFrame, D: d, JSON: json.RawMessage(js), EOL: "\n"}
	if !json.Valid(r.JSON) {
		r.JSON, r.Text, r.HasText = nil, js, true
	}
	guess(&r)
	return b.add(r)
}

func (b *rb) in(js string) *rb  { return b.frame(cassette.DirIn, js) }
func (b *rb) out(js string) *rb { return b.frame(cassette.DirOut, js) }
func (b *rb) stderr(s string) *rb {
	return b.add(cassette.Record{K: cassette.KindStderr, D: cassette.DirErr, Text: s, HasText: true, EOL: "\n"})
}
func (b *rb) event(ev string, mod func(*cassette.Record)) *rb {
	r := cassette.Record{K: cassette.KindEvent, Ev: ev}
	if mod != nil {
		mod(&r)
	}
	return b.add(r)
}
func (b *rb) violation(ref uint64, code, msg string) *rb {
	return b.add(cassette.Record{K: cassette.KindViolation, Ref: ref, Code: code, Severity: "error", Msg: msg})
}
func (b *rb) end() *rb {
	return b.add(cassette.Record{K: cassette.KindEnd, Records: uint64(len(b.recs))})
}

// acpSession is a small ACP session like the bundled demo's: handshake, a
// prompt streamed in chunks with a thought, a tool call, a permission
// request (whose id 1 collides with the client's initialize id 1), stderr,
// process events and one violation.
func acpSession() []cassette.Record {
	zero := 0
	b := newRB("acp", "agent", "--acp")
	b.event(cassette.EventStart, func(r *cassette.Record) { r.PID = 4242; r.Argv = []string{"agent", "--acp"}; r.Cwd = "/w" })
	b.at(2 * ms).in(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true}}}}`)
	b.at(1 * ms).stderr("agent: starting up")
	b.at(3 * ms).out(`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentCapabilities":{"loadSession":false}}}`)
	b.at(1 * ms).in(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}`)
	b.at(5 * ms).out(`{"jsonrpc":"2.0","id":2,"result":{"sessionId":"sess_1"}}`)
	b.at(10 * ms).in(`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"sess_1","prompt":[{"type":"text","text":"Fix the bug"}]}}`)
	b.at(40 * ms).out(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"Looking at "}}}}`)
	b.at(5 * ms).out(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"the code."}}}}`)
	b.at(5 * ms).out(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"I will "}}}}`)
	b.at(5 * ms).out(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"edit main.go."}}}}`)
	b.at(5 * ms).out(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"tool_call","toolCallId":"call_1","title":"Edit main.go","kind":"edit","status":"pending"}}}`)
	b.at(2 * ms).out(`{"jsonrpc":"2.0","id":1,"method":"session/request_permission","params":{"sessionId":"sess_1","toolCall":{"toolCallId":"call_1","title":"Edit main.go"},"options":[{"kind":"allow_once","name":"Allow","optionId":"allow"},{"kind":"reject_once","name":"Reject","optionId":"reject"}]}}`)
	b.at(300 * ms).in(`{"jsonrpc":"2.0","id":1,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}`)
	b.at(20 * ms).out(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"tool_call_update","toolCallId":"call_1","status":"completed"}}}`)
	b.at(5 * ms).out(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Done [really]."}}}}`)
	b.at(3 * ms).out(`{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}`)
	b.at(1 * ms).out(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"bogus_update"}}}`)
	b.violation(b.recs[len(b.recs)-1].N, "acp.unknown-enum", "sessionUpdate \"bogus_update\" is not one of the known updates")
	b.at(10 * ms).in(`{"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"sessionId":"sess_1","prompt":[{"type":"text","text":"And the tests?"}]}}`)
	b.at(1 * ms).stderr("agent: warning: slow disk")
	b.at(50*ms).event(cassette.EventStdinEOF, nil)
	b.at(2*ms).event(cassette.EventExit, func(r *cassette.Record) { r.Exit = &zero })
	b.end()
	return b.recs
}

// trafficRecords turns a capture pair from testdata/traffic into records,
// interleaving the two directions causally (a response after its request).
func trafficRecords(t testing.TB, name string) []cassette.Record {
	t.Helper()
	in, out := testpeers.Fixture(t, name)
	lines := func(ls [][]byte, d cassette.Dir) []cassette.Record {
		var rs []cassette.Record
		for _, l := range ls {
			r := cassette.Record{K: cassette.KindFrame, D: d, JSON: json.RawMessage(l), EOL: "\n"}
			if !json.Valid(r.JSON) {
				r.JSON, r.Text, r.HasText = nil, string(l), true
			}
			guess(&r)
			rs = append(rs, r)
		}
		return rs
	}
	ins, outs := lines(in, cassette.DirIn), lines(out, cassette.DirOut)
	b := newRB("")
	sent := map[string]bool{} // dir+id of requests emitted
	needs := func(r cassette.Record) bool {
		// A response whose request (other direction) is not out yet.
		return r.Kind == "response" && len(r.ID) > 0 && !sent[string(opposite(r.D))+string(r.ID)]
	}
	emit := func(r cassette.Record) {
		if r.Kind == "request" {
			sent[string(r.D)+string(r.ID)] = true
		}
		b.at(ms).add(r)
	}
	for len(ins) > 0 || len(outs) > 0 {
		switch {
		case len(outs) == 0:
			emit(ins[0])
			ins = ins[1:]
		case len(ins) == 0:
			emit(outs[0])
			outs = outs[1:]
		case needs(outs[0]) && !needs(ins[0]):
			emit(ins[0])
			ins = ins[1:]
		case needs(ins[0]) && !needs(outs[0]):
			emit(outs[0])
			outs = outs[1:]
		default:
			emit(ins[0])
			ins = ins[1:]
		}
	}
	b.end()
	return b.recs
}
