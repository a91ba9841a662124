package viewer

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/rpctap/rpctap/cassette"
)

func analyse(recs []cassette.Record) *Analysis {
	a := NewAnalysis(nil)
	for i := range recs {
		a.Add(&recs[i])
	}
	return a
}

func TestPairingACP(t *testing.T) {
	recs := acpSession()
	a := analyse(recs)
	find := func(dir cassette.Dir, kind, id string) uint64 {
		t.Helper()
		for _, r := range recs {
			if r.K == cassette.KindFrame && r.D == dir && r.Kind == kind && string(r.ID) == id {
				return r.N
			}
		}
		t.Fatalf("no %s %s id %s", dir, kind, id)
		return 0
	}
	cases := []struct {
		name      string
		req, resp uint64
	}{
		{"initialize (client id 1)", find(cassette.DirIn, "request", "1"), find(cassette.DirOut, "response", "1")},
		{"request_permission (agent id 1)", find(cassette.DirOut, "request", "1"), find(cassette.DirIn, "response", "1")},
		{"session/prompt", find(cassette.DirIn, "request", "3"), find(cassette.DirOut, "response", "3")},
	}
	for _, c := range cases {
		p, lat, ok := a.Pair(c.resp)
		if !ok || p != c.req {
			t.Errorf("%s: response #%d paired with #%d (ok=%v), want #%d", c.name, c.resp, p, ok, c.req)
		}
		if want := recs[c.resp].T - recs[c.req].T; lat != want {
			t.Errorf("%s: latency %d, want %d", c.name, lat, want)
		}
		if p, _, ok := a.Pair(c.req); !ok || p != c.resp {
			t.Errorf("%s: request #%d paired with #%d (ok=%v), want #%d", c.name, c.req, p, ok, c.resp)
		}
	}
	st := a.Stats()
	if len(st.Unanswered) != 1 || st.Unanswered[0].Method != "session/prompt" || st.Unanswered[0].N != find(cassette.DirIn, "request", "4") {
		t.Errorf("unanswered = %+v, want the second session/prompt", st.Unanswered)
	}
	if !st.Ended {
		t.Error("stats: end record not seen")
	}
	if got := st.Methods["initialize"]; got == nil || got.In != 1 || got.Out != 1 || got.Latency.Count() != 1 {
		t.Errorf("initialize stats = %+v, want 1 in, 1 out (the response counted under its request's method), 1 latency", got)
	}
	if st.Methods["session/update"].Out != 8 {
		t.Errorf("session/update out = %d, want 8", st.Methods["session/update"].Out)
	}
	// The violation record marks the bogus session/update.
	var bogus uint64
	for _, r := range recs {
		if r.K == cassette.KindViolation {
			bogus = r.Ref
		}
	}
	if v := a.Violations(bogus); len(v) != 1 {
		t.Errorf("violations of #%d = %v, want one", bogus, v)
	}
	if got := a.ViolationRefs(); !slices.Equal(got, []uint64{bogus}) {
		t.Errorf("ViolationRefs = %v", got)
	}
}

func TestPairingWithoutIDsIsFIFOByCommand(t *testing.T) {
	// opi commands may carry no id: responses match by command, in order.
	b := newRB("opi")
	b.at(ms).in(`{"type":"get_state"}`).at(ms).in(`{"type":"get_state"}`)
	b.at(5 * ms).out(`{"type":"response","command":"get_state","success":true}`)
	b.at(7 * ms).out(`{"type":"response","command":"get_state","success":true}`)
	b.at(ms).out(`{"type":"response","command":"parse","success":false,"error":"bad"}`)
	a := analyse(b.recs)
	if p, lat, ok := a.Pair(3); !ok || p != 1 || lat != 6*ms {
		t.Errorf("first response: pair %d lat %d ok %v, want #1 6ms", p, lat, ok)
	}
	if p, lat, ok := a.Pair(4); !ok || p != 2 || lat != 12*ms {
		t.Errorf("second response: pair %d lat %d ok %v, want #2 12ms", p, lat, ok)
	}
	if _, _, ok := a.Pair(5); ok {
		t.Error("the parse error answers no request but was paired")
	}
	if st := a.Stats(); st.Orphans != 1 || len(st.Unanswered) != 0 {
		t.Errorf("orphans %d unanswered %v, want 1 and none", st.Orphans, st.Unanswered)
	}
}

func TestPairingOnRealTraffic(t *testing.T) {
	for _, name := range []string{"acp-go", "mcp-go-everything", "mcp-go-session", "mcp-progress", "pi-session"} {
		t.Run(name, func(t *testing.T) {
			recs := trafficRecords(t, name)
			a := analyse(recs)
			reqs, paired := 0, 0
			for _, r := range recs {
				if r.Kind != "response" || len(r.ID) == 0 {
					continue
				}
				reqs++
				p, _, ok := a.Pair(r.N)
				if !ok {
					continue
				}
				paired++
				q := recs[p]
				if q.Kind != "request" || string(q.ID) != string(r.ID) || q.D == r.D || q.N >= r.N {
					t.Errorf("#%d (%s id %s) paired with #%d (%s %s id %s)", r.N, r.D, r.ID, q.N, q.D, q.Kind, q.ID)
				}
			}
			if paired == 0 {
				t.Fatalf("no response with an id was paired (of %d)", reqs)
			}
		})
	}
}

func TestLatencyPercentilesExact(t *testing.T) {
	var l Latency
	for _, v := range []int64{50, 10, 40, 20, 30, 60, 70, 80, 90, 100} {
		l.Add(v)
	}
	for _, c := range []struct {
		p    float64
		want int64
	}{{50, 50}, {90, 90}, {99, 100}, {100, 100}, {10, 10}, {11, 20}} {
		if got := l.Percentile(c.p); got != c.want {
			t.Errorf("p%g = %d, want %d", c.p, got, c.want)
		}
	}
	if l.Max() != 100 || l.Count() != 10 {
		t.Errorf("max %d count %d", l.Max(), l.Count())
	}
	var empty Latency
	if empty.Percentile(50) != 0 {
		t.Error("empty percentile not 0")
	}
}

func TestLatencyPercentilesHistogram(t *testing.T) {
	// Past exactSamples the histogram answers within its 2% bucket width.
	rng := rand.New(rand.NewPCG(1, 2))
	var l Latency
	var all []int64
	for range 50000 {
		v := int64(math.Exp(rng.NormFloat64()*1.5 + 13)) // log-normal around ~0.4ms
		l.Add(v)
		all = append(all, v)
	}
	slices.Sort(all)
	for _, p := range []float64{50, 90, 99, 99.9} {
		rank := int(math.Ceil(p / 100 * float64(len(all))))
		want := all[rank-1]
		got := l.Percentile(p)
		if rel := math.Abs(float64(got-want)) / float64(want); rel > 0.021 {
			t.Errorf("p%g = %d, exact %d: off by %.1f%%", p, got, want, rel*100)
		}
	}
	if l.Max() != all[len(all)-1] {
		t.Errorf("max %d, want %d", l.Max(), all[len(all)-1])
	}
	if len(l.exact) != 0 || len(l.buckets) > 2000 {
		t.Errorf("memory not bounded: %d exact samples, %d buckets", len(l.exact), len(l.buckets))
	}
}

func TestTranscriptACP(t *testing.T) {
	tr := FoldTranscript(acpSession())
	if len(tr.Turns) != 2 {
		t.Fatalf("%d turns, want 2: %s", len(tr.Turns), RenderTranscript(tr, false))
	}
	t1 := tr.Turns[0]
	var kinds []EntryKind
	var texts []string
	for _, e := range t1.Entries {
		kinds = append(kinds, e.Kind)
		texts = append(texts, e.Text)
	}
	wantKinds := []EntryKind{EntryUser, EntryThought, EntryText, EntryTool, EntryPermission, EntryPermission, EntryTool, EntryText, EntryNote}
	if !slices.Equal(kinds, wantKinds) {
		t.Fatalf("turn 1 entry kinds %v, want %v; texts %q", kinds, wantKinds, texts)
	}
	wantTexts := []string{"Fix the bug", "Looking at the code.", "I will edit main.go.", "tool Edit main.go (edit) pending",
		"permission? Edit main.go [allow / reject]", "permission → selected allow", "tool Edit main.go completed", "Done [really].", "stop: end_turn"}
	if !slices.Equal(texts, wantTexts) {
		t.Errorf("turn 1 texts\n%q\nwant\n%q", texts, wantTexts)
	}
	if t1.FirstChunk != 40*ms {
		t.Errorf("time to first chunk %s, want 40ms", FormatDuration(t1.FirstChunk))
	}
	if t1.Done != 390*ms { // prompt at +0, response at +40+5+5+5+5+2+300+20+5+3
		t.Errorf("turn took %s", FormatDuration(t1.Done))
	}
	t2 := tr.Turns[1]
	if t2.N != 2 || t2.Done != -1 || t2.FirstChunk != -1 {
		t.Errorf("turn 2 = %+v, want open with no chunk", t2)
	}
	out := RenderTranscript(tr, true)
	if !strings.Contains(out, "Done [really[].") {
		t.Errorf("coloured transcript does not escape brackets: %q", out)
	}
}

// TestTranscriptSynapsOpiPiMCP: each protocol's session folds its own way
// (a session is of one protocol: the header names it).
func TestTranscriptSynapsOpiPiMCP(t *testing.T) {
	synaps := newRB("synaps")
	synaps.at(ms).in(`{"type":"prompt","id":"p1","message":"hello"}`)
	synaps.at(30 * ms).out(`{"type":"message_update","event":{"type":"thinking_delta","delta":"hmm"}}`)
	synaps.at(ms).out(`{"type":"message_update","event":{"type":"text_delta","delta":"Hi "}}`)
	synaps.at(ms).out(`{"type":"message_update","event":{"type":"text_delta","delta":"there"}}`)
	synaps.at(ms).out(`{"type":"message_update","event":{"type":"toolcall_start","tool_id":"t1","tool_name":"bash"}}`)
	synaps.at(ms).out(`{"type":"agent_end","usage":{"input_tokens":1,"output_tokens":2}}`)
	synaps.at(ms).out(`{"type":"response","id":"p1","command":"prompt","ok":true}`)
	opi := newRB("opi")
	opi.at(ms).in(`{"type":"prompt","message":"second"}`)
	opi.at(10 * ms).out(`{"type":"MessageUpdate","message":{},"assistant_event":{"type":"text_delta","content_index":0,"delta":"opi says"}}`)
	opi.at(ms).out(`{"type":"ToolExecutionStart","tool_call_id":"c","tool_name":"read","args":{}}`)
	opi.at(ms).out(`{"type":"AgentEnd","messages":[]}`)
	// pi, with a rejected prompt
	pi := newRB("pi")
	pi.at(ms).in(`{"type":"prompt","id":"p3","message":"third"}`)
	pi.at(2 * ms).out(`{"id":"p3","type":"response","command":"prompt","success":false,"error":"No API key"}`)
	// MCP progress folds per token
	mcp := newRB("mcp")
	mcp.at(ms).in(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"longRunningOperation","arguments":{"steps":3},"_meta":{"progressToken":7}}}`)
	for i := 1; i <= 3; i++ {
		mcp.at(ms).out(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":` + string(rune('0'+i)) + `,"total":3,"progressToken":7}}`)
	}
	for _, c := range []struct {
		b    *rb
		want string
	}{
		{synaps, "── turn 1 · prompt · #1 at 0:00.001 · first chunk 30.0ms · took 34.0ms ──\n> hello\n(thinking) hmm\nHi there\n⚙ tool bash\n"},
		{opi, "── turn 1 · prompt · #1 at 0:00.001 · first chunk 10.0ms · took 12.0ms ──\n> second\nopi says\n⚙ run read\n"},
		{pi, "── turn 1 · prompt · #1 at 0:00.001 · no chunk · took 2.00ms ──\n> third\n! error: No API key\n"},
		{mcp, "⚙ tool call longRunningOperation {\"steps\":3}\n· progress 3/3\n"},
	} {
		got := RenderTranscript(FoldTranscript(c.b.recs), false)
		if !strings.Contains(got, c.want) {
			t.Errorf("%s transcript lacks\n%s\ngot:\n%s", c.b.recs[0].Header.Protocol, c.want, got)
		}
	}
	// The same frames in a session of another protocol fold to nothing of
	// theirs: a generic JSON-RPC session has no transcript.
	generic := newRB("jsonrpc")
	generic.recs = append(generic.recs, mcp.recs[1:]...)
	if got := RenderTranscript(FoldTranscript(generic.recs), false); strings.Contains(got, "progress") {
		t.Errorf("a jsonrpc session folded MCP progress:\n%s", got)
	}
}

func TestPrettyJSON(t *testing.T) {
	in := `{"b":1,"a":[],"c":{"x":"y\"[z]","n":null,"t":true,"f":1.50e3},"d":[1,{}]}`
	want := `{
  "b": 1,
  "a": [],
  "c": {
    "x": "y\"[z]",
    "n": null,
    "t": true,
    "f": 1.50e3
  },
  "d": [
    1,
    {}
  ]
}`
	if got := PrettyJSON([]byte(in), false); got != want {
		t.Errorf("PrettyJSON:\n%s\nwant\n%s", got, want)
	}
	col := PrettyJSON([]byte(in), true)
	if !strings.Contains(col, tagKey+`"b"`+tagReset) || !strings.Contains(col, tagString+`"y\"[z[]"`+tagReset) {
		t.Errorf("coloured output lacks tagged key or escaped string: %s", col)
	}
	if got := PrettyJSON([]byte("not json [x]"), true); got != "not json [x[]" {
		t.Errorf("invalid JSON: %q", got)
	}
}

func TestFormat(t *testing.T) {
	for _, c := range []struct {
		ns   int64
		want string
	}{{850, "850ns"}, {12345, "12.3µs"}, {4560000, "4.56ms"}, {1200000000, "1.20s"}, {123e9, "2m03s"}, {7300e9, "2h01m"}} {
		if got := FormatDuration(c.ns); got != c.want {
			t.Errorf("FormatDuration(%d) = %q, want %q", c.ns, got, c.want)
		}
	}
	if got := FormatClock(3723004e6); got != "1:02:03.004" {
		t.Errorf("FormatClock = %q", got)
	}
	if got := FormatSize(1536); got != "1.5K" {
		t.Errorf("FormatSize = %q", got)
	}
}

func TestIsChunk(t *testing.T) {
	recs := acpSession()
	var chunks []uint64
	for i := range recs {
		if IsChunk("acp", &recs[i]) {
			chunks = append(chunks, recs[i].N)
		}
	}
	// the 2 thought chunks, 2 message chunks and the last message chunk;
	// tool_call, tool_call_update and bogus_update are not chunks.
	if len(chunks) != 5 {
		t.Errorf("chunks %v, want 5", chunks)
	}
}

func TestPairNearbyBeforeTheAnalysis(t *testing.T) {
	// A store whose analysis has not run: rows still get their pairs from
	// the records around them, the same ones the analysis finds later.
	recs := acpSession()
	s := NewStore(NewMemSource(recs...))
	var pos []int
	for i := range recs {
		pos = append(pos, i)
	}
	before := s.RowsAt(pos)
	for !s.Scan(1 << 20) {
	}
	after := s.RowsAt(pos)
	paired := 0
	for i := range before {
		b, a := before[i], after[i]
		if b.Paired != a.Paired || b.Pair != a.Pair || b.Latency != a.Latency {
			t.Errorf("#%d: nearby pairing %v #%d %d, analysis %v #%d %d", i, b.Paired, b.Pair, b.Latency, a.Paired, a.Pair, a.Latency)
		}
		if b.Paired {
			paired++
		}
	}
	if paired != 8 {
		t.Errorf("%d rows paired nearby, want 8 (4 requests and their responses)", paired)
	}
}

func TestPairTableChunks(t *testing.T) {
	var tab pairTable
	for i := range 3*pairChunk + 5 {
		if got := tab.add(pairEntry{N: uint64(2 * i)}); got != i {
			t.Fatalf("add returned %d, want %d", got, i)
		}
	}
	tab.at(pairChunk + 1).Partner = 99
	if e := tab.at(pairChunk + 1); e.N != 2*(pairChunk+1) || e.Partner != 99 {
		t.Errorf("entry %d = %+v", pairChunk+1, *e)
	}
	for _, c := range tab.chunks[:3] {
		if cap(c) != pairChunk {
			t.Errorf("a full chunk grew to %d", cap(c))
		}
	}
}

// TestParseSize: --dump's WxH, strictly, and an error that says what is
// wrong with a size out of range.
func TestParseSize(t *testing.T) {
	if w, h, err := ParseSize("120x40"); w != 120 || h != 40 || err != nil {
		t.Errorf("120x40: %d %d %v", w, h, err)
	}
	for _, s := range []string{"120x40x", "120x40abc", "12", "x40", "120x", "+120x40 ", "120 x 40"} {
		if _, _, err := ParseSize(s); err == nil || !strings.Contains(err.Error(), "want WIDTHxHEIGHT") {
			t.Errorf("%q: %v", s, err)
		}
	}
	for _, s := range []string{"100x4", "19x40", "1001x40", "120x1001", "-5x40"} {
		if _, _, err := ParseSize(s); err == nil || !strings.Contains(err.Error(), "from 20x5 to 1000x1000") {
			t.Errorf("%q: %v", s, err)
		}
	}
}
