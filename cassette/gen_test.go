package cassette

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/rpctap/rpctap/internal/testpeers"
)

// agentMix generates distinct agent-like traffic: ACP sessions with streamed
// chunks, tool calls and permission round trips, synaps-style events and
// opi-style commands. Every frame has fresh words, ids and hashes, so zstd
// cannot find long repeats that real traffic would not have (a short workload
// repeated inside zstd's window would make the ratio look far better).
type agentMix struct {
	r   *rand.Rand
	id  int
	t   int64
	sid string
}

func newAgentMix(seed uint64) *agentMix {
	return &agentMix{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

var words = strings.Fields(`the a to of and in is it for on that this with you file function
return error value test build go run package import type struct method interface string int
should would could need want let me check see look update change fix add remove read write
config server client session prompt tool call result content text agent model request response
handler parser buffer line frame record cassette stream pipe process signal exit code status
main cmd internal pkg api http json schema field key index offset length size count time`)

func (g *agentMix) words(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(' ')
		}
		w := words[g.r.IntN(len(words))]
		if g.r.IntN(9) == 0 {
			w = fmt.Sprintf("%s%d", w, g.r.IntN(1000))
		}
		b.WriteString(w)
	}
	return b.String()
}

func (g *agentMix) hex(n int) string {
	const digits = "0123456789abcdef"
	b := make([]byte, n)
	for i := range b {
		b[i] = digits[g.r.IntN(16)]
	}
	return string(b)
}

func (g *agentMix) path() string {
	return fmt.Sprintf("/home/dev%d/src/%s/%s_%s.go", g.r.IntN(9), g.words(1), g.words(1), g.hex(4))
}

// next returns the next frame (without newline) and its direction.
func (g *agentMix) next() (Dir, []byte) {
	g.t += int64(g.r.IntN(3_000_000)) + 20_000
	if g.sid == "" || g.r.IntN(400) == 0 {
		g.sid = "sess_" + g.hex(24)
		g.id++
		return DirIn, fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"session/new","params":{"cwd":"%s","mcpServers":[]}}`, g.id, g.path())
	}
	switch k := g.r.IntN(100); {
	case k < 55:
		return DirOut, fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"%s","update":{"content":{"text":"%s","type":"text"},"sessionUpdate":"agent_message_chunk"}}}`, g.sid, g.words(2+g.r.IntN(12)))
	case k < 65:
		g.id++
		return DirIn, fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"session/prompt","params":{"sessionId":"%s","prompt":[{"type":"text","text":"%s"}]}}`, g.id, g.sid, g.words(5+g.r.IntN(40)))
	case k < 72:
		return DirOut, fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"%s","update":{"sessionUpdate":"tool_call","toolCallId":"call_%s","title":"Read %s","kind":"read","status":"pending","locations":[{"path":"%s","line":%d}]}}}`, g.sid, g.hex(12), g.path(), g.path(), g.r.IntN(900))
	case k < 78:
		var b strings.Builder
		for i := 0; i < 3+g.r.IntN(30); i++ {
			fmt.Fprintf(&b, "func %s%d() error {\\n\\treturn %s\\n}\\n", g.words(1), g.r.IntN(100), g.words(3))
		}
		return DirOut, fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"%s","update":{"sessionUpdate":"tool_call_update","toolCallId":"call_%s","status":"completed","content":[{"type":"content","content":{"type":"text","text":"%s"}}]}}}`, g.sid, g.hex(12), b.String())
	case k < 82:
		return DirOut, fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"session/request_permission","params":{"sessionId":"%s","toolCall":{"toolCallId":"call_%s","title":"Write %s","kind":"edit"},"options":[{"optionId":"allow","name":"Allow","kind":"allow_once"},{"optionId":"reject","name":"Reject","kind":"reject_once"}]}}`, g.r.IntN(50), g.sid, g.hex(12), g.path())
	case k < 86:
		return DirIn, fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}`, g.r.IntN(50))
	case k < 90:
		return DirOut, fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"result":{"stopReason":"end_turn","usage":{"inputTokens":%d,"outputTokens":%d}}}`, g.id, g.r.IntN(90000), g.r.IntN(4000))
	case k < 95:
		return DirOut, fmt.Appendf(nil, `{"type":"text_delta","delta":"%s","message_id":"msg_%s"}`, g.words(1+g.r.IntN(6)), g.hex(16))
	case k < 98:
		return DirIn, fmt.Appendf(nil, `{"type":"prompt","id":"req-%s","message":"%s"}`, g.hex(8), g.words(4+g.r.IntN(20)))
	default:
		return DirErr, fmt.Appendf(nil, `%s level=info msg="%s" elapsed=%dms`, "2026-11-21T08:"+fmt.Sprint(10+g.r.IntN(49)), g.words(4), g.r.IntN(900))
	}
}

// record returns the next frame as a record.
func (g *agentMix) record() Record {
	d, p := g.next()
	k := KindFrame
	if d == DirErr {
		k = KindStderr
	}
	r := NewLineRecord(k, d, p, "\n")
	r.T = g.t
	return r
}

// writeMix writes a cassette of n generated records to path with options o,
// flushing every batch records (as a recorder would when its queue is idle).
func writeMix(t testing.TB, path string, n, batch int, o *Options) {
	t.Helper()
	w, err := Create(path, Header{Argv: []string{"agent", "--acp"}, Cwd: "/tmp"}, o)
	if err != nil {
		t.Fatal(err)
	}
	g := newAgentMix(uint64(n))
	for i := 0; i < n; i++ {
		r := g.record()
		if err := w.Append(&r); err != nil {
			t.Fatal(err)
		}
		if (i+1)%batch == 0 {
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// trafficFiles lists the traffic captures: testdata/traffic, and
// ../shared/traffic too when it is beside the checkout.
func trafficFiles(t testing.TB) []string {
	files := testpeers.CaptureFiles()
	if len(files) == 0 {
		t.Fatal("no captures in testdata/traffic")
	}
	return files
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
