package main

// Workload data. Everything is generated from a seed so that the parent and
// the child (and a later replay of a recorded session) produce the same bytes
// without talking about them, and so that no content repeats within zstd's
// window: text is drawn from a pool that is consumed sequentially and is far
// larger than the window, so compression ratios are not flattered.

import (
	"fmt"
	"math/rand"
	"strconv"
	"strings"
)

// prose and code vocabularies; Zipf-distributed draws from them give text
// whose word frequencies look like English prose and source code.
const proseWords = `the of and to a in is that for it as with was on be by this are or at from
have an they which one you were her all she there would their we him been has when who will more
no if out so said what up its about into than them can only other new some could time these two
may then do first any my now such like our over man me even most made after also did many before
must through back years where much your way well down should because each just those people how
too little state good very make world still own see men work long get here between both life being
under never day same another know while last might us great old year off come since against go
came right used take three himself few house use during without again place around however home
small found thought went say part once general high upon school every does got united left number
course war until always away something fact though water less public put think almost hand enough
far took head yet government system better set told nothing night end why called didn find look
asked going point later knew city next program give group toward young days let room president side
social given present several order national possible rather second per face among form important
often things looking early white case large need big four within felt along children saw best
church ever least power development light thing seemed family interest want members mind country
area others done turned although open god service certain kind problem began different door thus
help sense means whole matter perhaps itself york times law human line above name example action
company hands local show whether five history gave today either act feet across taken past quite
anything seen having death week experience body word half really field am car words already
themselves information tell college shall money period held keep sure free seems real behind cannot
miss political air question making office brought whose special heard major problems ago became
federal moment study available known result street economic boy position reason change south board
individual job society areas west close turn love community true court force full seem am wife
agent client session prompt request response error tool call file read write update permission
model token stream buffer cache index record frame batch window latency throughput memory process
child parent pipe socket signal exit status config option flag command module package build test
function method value type field struct interface pointer slice map channel goroutine context
deadline timeout retry backoff queue worker server handler router middleware logger metric trace`

const codeWords = `err ctx req resp buf n i j k ok id key val opts cfg conf args res out in
data line lines path name size len cap msg text body head tail next prev node list tree item items
count total start end offset limit min max sum avg rate peak state mode kind tag seq ts t0 t1 dt
Reader Writer Close Flush Write Read Open Create Stat Seek Sync Lock Unlock Wait Done Run Stop
Start Next Reset Bytes String Error Len Cap Get Set Add Del Has Load Store Swap Parse Format
Encode Decode Marshal Unmarshal Handle Serve Dial Listen Accept Send Recv Observe Emit Apply`

type vocab struct {
	prose []string
	code  []string
}

func newVocab(r *rand.Rand) *vocab {
	base := strings.Fields(proseWords)
	var all []string
	suffixes := []string{"", "s", "ed", "ing", "er", "ly"}
	for _, w := range base {
		all = append(all, w)
		// A few derived forms make the vocabulary a few thousand words,
		// closer to real text than a few hundred.
		for k := 0; k < 2; k++ {
			if s := suffixes[r.Intn(len(suffixes))]; s != "" {
				all = append(all, w+s)
			}
		}
	}
	r.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	return &vocab{prose: all, code: strings.Fields(codeWords)}
}

// textGen appends JSON-string-safe text (already escaped: only \n, \t and \"
// escapes, never an escaped backslash) to a buffer.
type textGen struct {
	r  *rand.Rand
	v  *vocab
	zp *rand.Zipf
	zc *rand.Zipf
}

func newTextGen(seed int64) *textGen {
	r := rand.New(rand.NewSource(seed))
	v := newVocab(r)
	return &textGen{
		r:  r,
		v:  v,
		zp: rand.NewZipf(r, 1.1, 3, uint64(len(v.prose)-1)),
		zc: rand.NewZipf(r, 1.2, 2, uint64(len(v.code)-1)),
	}
}

func (g *textGen) word() string  { return g.v.prose[g.zp.Uint64()] }
func (g *textGen) cword() string { return g.v.code[g.zc.Uint64()] }

func (g *textGen) ident() string {
	a, b := g.cword(), g.word()
	if b == "" {
		return a
	}
	return a + strings.ToUpper(b[:1]) + b[1:]
}

func (g *textGen) sentence(b []byte) []byte {
	n := 5 + g.r.Intn(18)
	for i := 0; i < n; i++ {
		w := g.word()
		if i == 0 {
			b = append(b, strings.ToUpper(w[:1])...)
			b = append(b, w[1:]...)
		} else {
			b = append(b, ' ')
			b = append(b, w...)
		}
		if i > 0 && i < n-1 && g.r.Intn(12) == 0 {
			b = append(b, ',')
		}
	}
	return append(b, ". "...)
}

func (g *textGen) prose(b []byte) []byte {
	n := 2 + g.r.Intn(6)
	for i := 0; i < n; i++ {
		b = g.sentence(b)
	}
	return append(b, `\n\n`...)
}

func (g *textGen) code(b []byte) []byte {
	fn := g.ident()
	b = append(b, "func "...)
	b = append(b, fn...)
	b = append(b, '(')
	for i, n := 0, g.r.Intn(4); i < n; i++ {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, g.cword()...)
		b = append(b, ' ')
		b = append(b, g.ident()...)
	}
	b = append(b, `) error {\n`...)
	for i, n := 0, 3+g.r.Intn(12); i < n; i++ {
		b = append(b, `\t`...)
		switch g.r.Intn(6) {
		case 0:
			b = append(b, `if err := `...)
			b = append(b, g.ident()...)
			b = append(b, '(')
			b = append(b, g.cword()...)
			b = append(b, `); err != nil {\n\t\treturn fmt.Errorf(\"`...)
			b = append(b, g.word()...)
			b = append(b, ' ')
			b = append(b, g.word()...)
			b = append(b, `: %w\", err)\n\t}\n`...)
		case 1:
			b = append(b, `// `...)
			b = g.sentence(b)
			b = append(b, `\n`...)
		case 2:
			b = append(b, g.cword()...)
			b = append(b, ` := `...)
			b = append(b, g.cword()...)
			b = append(b, '.')
			b = append(b, g.ident()...)
			b = append(b, '(')
			b = strconv.AppendInt(b, int64(g.r.Intn(100000)), 10)
			b = append(b, `)\n`...)
		case 3:
			b = append(b, `for `...)
			b = append(b, g.cword()...)
			b = append(b, ` := range `...)
			b = append(b, g.ident()...)
			b = append(b, ` {\n\t\t`...)
			b = append(b, g.ident()...)
			b = append(b, `(`...)
			b = append(b, g.cword()...)
			b = append(b, `)\n\t}\n`...)
		case 4:
			b = append(b, `log.Printf(\"`...)
			b = append(b, g.word()...)
			b = append(b, ' ')
			b = append(b, g.word()...)
			b = append(b, ` %d\", `...)
			b = append(b, g.cword()...)
			b = append(b, `)\n`...)
		default:
			b = append(b, `return `...)
			b = append(b, g.cword()...)
			b = append(b, `, nil\n`...)
		}
	}
	return append(b, `}\n\n`...)
}

func (g *textGen) logs(b []byte) []byte {
	for i, n := 0, 3+g.r.Intn(10); i < n; i++ {
		b = fmt.Appendf(b, `2026-11-21T%02d:%02d:%02d.%03dZ %s %s/%s.go:%d `,
			g.r.Intn(24), g.r.Intn(60), g.r.Intn(60), g.r.Intn(1000),
			[]string{"INFO", "INFO", "DEBUG", "WARN", "ERROR"}[g.r.Intn(5)],
			g.word(), g.cword(), 10+g.r.Intn(900))
		for j, m := 0, 3+g.r.Intn(8); j < m; j++ {
			b = append(b, g.word()...)
			b = append(b, ' ')
		}
		b = fmt.Appendf(b, `%s=%x %s=%d\n`, g.cword(), g.r.Uint32(), g.cword(), g.r.Intn(1<<20))
	}
	return b
}

// words appends exactly n bytes of plain words (no escapes) to b.
func (g *textGen) words(b []byte, n int) []byte {
	start := len(b)
	for len(b)-start < n {
		if len(b) > start {
			b = append(b, ' ')
		}
		b = append(b, g.word()...)
	}
	return b[:start+n]
}

// newPool returns size bytes of escaped JSON string content: prose, code and
// log lines.
func newPool(seed int64, size int) []byte {
	g := newTextGen(seed)
	b := make([]byte, 0, size+64<<10)
	for len(b) < size {
		switch k := g.r.Intn(10); {
		case k < 3:
			b = g.prose(b)
		case k < 9:
			b = g.code(b)
		default:
			b = g.logs(b)
		}
	}
	b = b[:size]
	for len(b) > 0 && b[len(b)-1] == '\\' {
		b = b[:len(b)-1]
	}
	return b
}

// cursor hands out consecutive, never-overlapping (until the pool wraps)
// slices of the pool that are valid JSON string content.
type cursor struct {
	pool []byte
	off  int
}

func (c *cursor) take(n int) []byte {
	if n > len(c.pool)/2 {
		n = len(c.pool) / 2
	}
	if c.off+n+2 > len(c.pool) {
		c.off = 0
	}
	s := c.off
	if s > 0 && c.pool[s-1] == '\\' {
		s++ // do not start on the character after an escape's backslash
	}
	e := s + n
	if c.pool[e-1] == '\\' {
		e++ // do not cut an escape in half
	}
	c.off = e
	return c.pool[s:e]
}

// takeExact returns exactly n bytes of valid JSON string content.
func (c *cursor) takeExact(n int) []byte {
	t := c.take(n)
	if len(t) > n { // take extended the slice over an escape: drop it, pad
		t = append(append([]byte(nil), t[:n-1]...), ' ')
	}
	return t
}

// Frame builders. Each returns b with one complete line appended.

const jsonrpc = `{"jsonrpc":"2.0",`

func sessionID(seed int64) string {
	r := rand.New(rand.NewSource(seed ^ 0x5e55))
	return fmt.Sprintf("sess_%08x%08x%08x", r.Uint32(), r.Uint32(), r.Uint32())
}

func appendInitialize(b []byte) []byte {
	return append(b, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true,"writeTextFile":true},"terminal":true},"clientInfo":{"name":"wirebench","version":"1.0"}}}`+"\n"...)
}

func appendInitializeResult(b []byte) []byte {
	return append(b, `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{"loadSession":false,"promptCapabilities":{"embeddedContext":true}},"authMethods":[],"agentInfo":{"name":"wirebench-agent","version":"1.0"}}}`+"\n"...)
}

func appendSessionNew(b []byte) []byte {
	return append(b, `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/home/dev1/project","mcpServers":[]}}`+"\n"...)
}

func appendSessionNewResult(b []byte, sid string) []byte {
	b = append(b, `{"jsonrpc":"2.0","id":1,"result":{"sessionId":"`...)
	b = append(b, sid...)
	return append(b, `"}}`+"\n"...)
}

// appendPrompt appends a session/prompt request with text (escaped content).
func appendPrompt(b []byte, id int, sid string, text []byte) []byte {
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = strconv.AppendInt(b, int64(id), 10)
	b = append(b, `,"method":"session/prompt","params":{"sessionId":"`...)
	b = append(b, sid...)
	b = append(b, `","prompt":[{"type":"text","text":"`...)
	b = append(b, text...)
	return append(b, `"}]}}`+"\n"...)
}

// appendBigPrompt appends a prompt carrying an embedded resource (a file).
func appendBigPrompt(b []byte, id int, sid string, text, file []byte) []byte {
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = strconv.AppendInt(b, int64(id), 10)
	b = append(b, `,"method":"session/prompt","params":{"sessionId":"`...)
	b = append(b, sid...)
	b = append(b, `","prompt":[{"type":"text","text":"`...)
	b = append(b, text...)
	b = append(b, `"},{"type":"resource","resource":{"uri":"file:///home/dev1/project/big.go","mimeType":"text/x-go","text":"`...)
	b = append(b, file...)
	return append(b, `"}}]}}`+"\n"...)
}

func appendPromptResult(b []byte, id int) []byte {
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = strconv.AppendInt(b, int64(id), 10)
	return append(b, `,"result":{"stopReason":"end_turn"}}`+"\n"...)
}

func appendChunk(b []byte, sid string, text []byte) []byte {
	b = append(b, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"`...)
	b = append(b, sid...)
	b = append(b, `","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"`...)
	b = append(b, text...)
	return append(b, `"}}}}`+"\n"...)
}

func appendToolCall(b []byte, sid string, call int, title, path []byte) []byte {
	b = append(b, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"`...)
	b = append(b, sid...)
	b = append(b, `","update":{"sessionUpdate":"tool_call","toolCallId":"call_`...)
	b = strconv.AppendInt(b, int64(call), 10)
	b = append(b, `","title":"`...)
	b = append(b, title...)
	b = append(b, `","kind":"read","status":"pending","locations":[{"path":"/home/dev1/project/`...)
	b = append(b, path...)
	return append(b, `.go"}]}}}`+"\n"...)
}

func appendToolResult(b []byte, sid string, call int, content []byte) []byte {
	b = append(b, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"`...)
	b = append(b, sid...)
	b = append(b, `","update":{"sessionUpdate":"tool_call_update","toolCallId":"call_`...)
	b = strconv.AppendInt(b, int64(call), 10)
	b = append(b, `","status":"completed","content":[{"type":"content","content":{"type":"text","text":"`...)
	b = append(b, content...)
	return append(b, `"}}]}}}`+"\n"...)
}

func appendPermissionRequest(b []byte, sid string, perm, call int) []byte {
	b = append(b, `{"jsonrpc":"2.0","id":"perm-`...)
	b = strconv.AppendInt(b, int64(perm), 10)
	b = append(b, `","method":"session/request_permission","params":{"sessionId":"`...)
	b = append(b, sid...)
	b = append(b, `","toolCall":{"toolCallId":"call_`...)
	b = strconv.AppendInt(b, int64(call), 10)
	return append(b, `"},"options":[{"optionId":"allow","name":"Allow","kind":"allow_once"},{"optionId":"reject","name":"Reject","kind":"reject_once"}]}}`+"\n"...)
}

// appendPermissionResult answers the request line req (which starts with
// {"jsonrpc":"2.0","id":"perm-N").
func appendPermissionResult(b []byte, req []byte) []byte {
	id := req[len(jsonrpc)+len(`"id":`):]
	if i := indexByte(id, ','); i >= 0 {
		id = id[:i]
	}
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	return append(b, `,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}`+"\n"...)
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

// Ping frames are exactly pingSize bytes including the newline.
const pingSize = 200

func appendPing(b []byte, id int, sid string, g *textGen) []byte {
	start := len(b)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = strconv.AppendInt(b, int64(id), 10)
	b = append(b, `,"method":"session/prompt","params":{"sessionId":"`...)
	b = append(b, sid...)
	b = append(b, `","prompt":[{"type":"text","text":"`...)
	const tail = `"}]}}` + "\n"
	b = g.words(b, pingSize-(len(b)-start)-len(tail))
	return append(b, tail...)
}

func appendPong(b []byte, id []byte, g *textGen) []byte {
	start := len(b)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"result":{"stopReason":"end_turn","_meta":{"echo":"`...)
	const tail = `"}}}` + "\n"
	b = g.words(b, pingSize-(len(b)-start)-len(tail))
	return append(b, tail...)
}

// Stats exchange at the end of every session: the parent asks, the child
// answers with what it received and sent.
func appendStatsRequest(b []byte, id int) []byte {
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = strconv.AppendInt(b, int64(id), 10)
	return append(b, `,"method":"_wirebench/stats","params":{}}`+"\n"...)
}

type childStats struct {
	InBytes  int64  `json:"inBytes"`
	InCRC    uint32 `json:"inCRC"`
	InLines  int64  `json:"inLines"`
	OutBytes int64  `json:"outBytes"`
	OutCRC   uint32 `json:"outCRC"`
	OutLines int64  `json:"outLines"`
	CPUNs    int64  `json:"cpuNs"`
}
