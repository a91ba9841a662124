package recorder

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/protocol"
	"github.com/rpctap/rpctap/tap"
)

func newTestRecorder(t testing.TB, w Writer, opts ...Option) (*Recorder, *warnings) {
	ws := &warnings{}
	opts = append([]Option{WithWarn(ws.add)}, opts...)
	return New(w, opts...), ws
}

func TestRecorderExactStreams(t *testing.T) {
	mix := traffic(t)
	w := &memWriter{}
	r, ws := newTestRecorder(t, w)
	ft := &fakeTap{}
	rng := rand.New(rand.NewSource(2))
	in := mix["acp-go.in"]
	out := append(append([]byte(nil), mix["acp-go.out"]...), "\xff\xfe junk\r\nno newline at the end"...)
	errb := []byte("warn: starting\nsecond line without end")
	feed := func(s tap.Stream, data []byte) {
		for len(data) > 0 {
			n := 1 + rng.Intn(300)
			n = min(n, len(data))
			r.Observe(ft.chunk(s, data[:n]))
			data = data[n:]
		}
	}
	feed(tap.Stdin, in)
	feed(tap.Stdout, out)
	feed(tap.Stderr, errb)
	zero := 0
	r.Event(tap.Event{T: ft.t + 1, Kind: cassette.EventExit, Exit: &zero})
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	recs := w.records()
	if got := streamOf(recs, 0, cassette.DirIn); !bytes.Equal(got, in) {
		t.Errorf("in: got %q\nwant %q", got, in)
	}
	if got := streamOf(recs, 0, cassette.DirOut); !bytes.Equal(got, out) {
		t.Errorf("out: got %q\nwant %q", got, out)
	}
	if got := streamOf(recs, 0, cassette.DirErr); !bytes.Equal(got, errb) {
		t.Errorf("err: got %q\nwant %q", got, errb)
	}
	// After the exit event come only the lines that never got their
	// newline (they end when the streams do, at Close) and the session-end
	// violations.
	last := len(recs) - 1
	for last > 0 && (recs[last].K == cassette.KindViolation || recs[last].EOL == "" && recs[last].HasPayload()) {
		last--
	}
	if recs[last].K != cassette.KindEvent || recs[last].Ev != cassette.EventExit {
		t.Errorf("last record before the unfinished lines and the session-end violations is %+v, want the exit event", recs[last])
	}
	if !w.closed {
		t.Error("the Writer was not closed")
	}
	if len(ws.list()) != 0 {
		t.Errorf("warnings: %q", ws.list())
	}
	for i, rec := range recs {
		if rec.N != uint64(i+1) {
			t.Fatalf("record %d has N %d", i, rec.N)
		}
	}
}

// TestRecorderOrderingConcurrentPumps plays a parent and a child through
// two concurrent pumps that, like the tap, stamp a chunk when it is read,
// forward it, and only then call Observe, with a random delay in between.
// The child answers each request as soon as it was forwarded, so the reply
// often reaches Observe before its request. The recording must still show
// every request before its reply and every record in Seq order.
func TestRecorderOrderingConcurrentPumps(t *testing.T) {
	w := &memWriter{}
	r, ws := newTestRecorder(t, w)
	ft := &fakeTap{}
	const n = 400
	forwarded := make(chan int) // parent pump -> child
	replies := make(chan int)   // child -> child's stdout pump
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { // the parent's stdin pump
		defer wg.Done()
		rng := rand.New(rand.NewSource(3))
		for i := 1; i <= n; i++ {
			c := ft.chunk(tap.Stdin, []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`+"\n", i)))
			forwarded <- i // the child has it now
			if rng.Intn(3) == 0 {
				time.Sleep(time.Duration(rng.Intn(200)) * time.Microsecond)
			}
			r.Observe(c)
		}
		close(forwarded)
	}()
	go func() { // the child
		defer wg.Done()
		for i := range forwarded {
			replies <- i
		}
		close(replies)
	}()
	go func() { // the child's stdout pump
		defer wg.Done()
		for i := range replies {
			r.Observe(ft.chunk(tap.Stdout, []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{}}`+"\n", i))))
		}
	}()
	wg.Wait()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	recs := w.records()
	seen := map[string]bool{}
	frames := 0
	var lastT int64
	for _, rec := range recs {
		if rec.K != cassette.KindFrame {
			continue
		}
		frames++
		if rec.T < lastT {
			t.Fatalf("record %d (T %d) after T %d: not in read order", rec.N, rec.T, lastT)
		}
		lastT = rec.T
		s := string(rec.JSON)
		id := s[strings.Index(s, `"id":`)+5:]
		id = id[:strings.IndexByte(id, ',')]
		if rec.D == cassette.DirIn {
			seen[id] = true
		} else if !seen[id] {
			t.Fatalf("reply %s recorded before its request (record %d)", id, rec.N)
		}
	}
	if frames != 2*n {
		t.Fatalf("%d frames recorded, want %d", frames, 2*n)
	}
	if st := r.Stats(); st.Late != 0 {
		t.Errorf("%d chunks were written late", st.Late)
	}
	if len(ws.list()) != 0 {
		t.Errorf("warnings: %q", ws.list())
	}
}

// A chunk that never arrives (a hole in Seq) holds later chunks only up to
// the hold's bound; then they are written in Seq order anyway.
func TestRecorderHoldIsBounded(t *testing.T) {
	w := &memWriter{}
	r, _ := newTestRecorder(t, w)
	// Seq 1 is missing.
	for i := 2; i <= maxHoldChunks+2; i++ {
		r.Observe(tap.Chunk{Stream: tap.Stdout, Seq: uint64(i), T: int64(i), Data: []byte(strconv.Itoa(i) + "\n")})
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(w.records()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("held chunks were never written although the hold overflowed")
		}
		time.Sleep(time.Millisecond)
	}
	if got := string(w.records()[0].JSON); got != "2" {
		t.Errorf("first record %q, want 2", got)
	}
	// The missing chunk finally comes: written late, nothing lost.
	r.Observe(tap.Chunk{Stream: tap.Stdin, Seq: 1, T: 1, Data: []byte("1\n")})
	r.Close()
	recs := w.records()
	if len(streamOf(recs, 0, cassette.DirIn)) != 2 || r.Stats().Late != 1 {
		t.Errorf("late chunk: stats %+v", r.Stats())
	}
}

// Records reach the Writer and are flushed as soon as the queue is idle,
// with no further input and no timer.
func TestRecorderFlushesWhenIdle(t *testing.T) {
	w := &memWriter{}
	r, _ := newTestRecorder(t, w)
	defer r.Close()
	ft := &fakeTap{}
	for i := 0; i < 3; i++ {
		r.Observe(ft.chunk(tap.Stdout, []byte(fmt.Sprintf("{\"n\":%d}\n", i))))
		deadline := time.Now().Add(5 * time.Second)
		for len(w.records()) != i+1 {
			if time.Now().After(deadline) {
				t.Fatalf("record %d not flushed while the recorder was idle (%d flushed)", i, len(w.records()))
			}
			time.Sleep(50 * time.Microsecond)
		}
	}
}

func TestRecorderEventsFollowTheirChunks(t *testing.T) {
	w := &memWriter{}
	r, _ := newTestRecorder(t, w)
	ft := &fakeTap{}
	r.Event(tap.Event{T: 0, Kind: cassette.EventStart, Argv: []string{"agent"}, PID: 7})
	// Seq 2 is observed first; seq 1 arrives after the event: the event
	// must wait for seq 1 and 2 (both were read before it).
	c1 := ft.chunk(tap.Stdin, []byte("{\"a\":1}\npartial"))
	c2 := ft.chunk(tap.Stdout, []byte("{\"b\":2}\n"))
	r.Observe(c2)
	r.Observe(c1)
	r.Event(tap.Event{T: ft.t + 1, Kind: cassette.EventStdinEOF})
	r.Event(tap.Event{T: ft.t + 2, Kind: cassette.EventSignal, Signal: "SIGTERM"})
	r.Close()
	var got []string
	for _, rec := range w.records() {
		if rec.K == cassette.KindMeta {
			continue // the protocol guessed at the end
		}
		s := string(rec.K) + ":" + rec.Ev + string(rec.Payload())
		got = append(got, s)
	}
	want := `event:start frame:{"a":1} frame:{"b":2} frame:partial event:stdin-eof event:signal`
	if strings.Join(got, " ") != want {
		t.Errorf("order:\n got %s\nwant %s", strings.Join(got, " "), want)
	}
}

func TestRecorderWriterFailureDegradesOnce(t *testing.T) {
	for _, failAt := range []int{1, 5} {
		w := &memWriter{failAt: failAt, failErr: errors.New("write /x: no space left on device")}
		r, ws := newTestRecorder(t, w)
		ft := &fakeTap{}
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := 0; i < 5000; i++ { // far more than the queue holds
				r.Observe(ft.chunk(tap.Stdout, []byte(fmt.Sprintf("{\"i\":%d}\n", i))))
				r.Event(tap.Event{Kind: cassette.EventSignal, Signal: "SIGUSR1"})
			}
		}()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatal("Observe blocked after the cassette failed")
		}
		if err := r.Close(); err != nil {
			t.Errorf("Close after a warned failure returned %v", err)
		}
		msgs := ws.list()
		if len(msgs) != 1 || !strings.Contains(msgs[0], "no space left") || !strings.Contains(msgs[0], "forwarding continues") {
			t.Errorf("failAt %d: warnings %q, want exactly one about the disk", failAt, msgs)
		}
		if !r.Failed() {
			t.Error("Failed() is false")
		}
	}
}

func TestRecorderValidatorPanicDegrades(t *testing.T) {
	names := protocol.Names()
	w := &memWriter{}
	calls := 0
	r, ws := newTestRecorder(t, w, WithProtocol(names[0], true), func(o *Options) {
		o.validatorHook = func(conn int, n uint64, dir protocol.Dir, frame []byte) []protocol.Violation {
			calls++
			if calls == 2 {
				var m map[string]int
				m["boom"] = 1 // a validator bug: nil map write
			}
			return []protocol.Violation{{Code: "test.seen", Severity: protocol.SevInfo, Record: n}}
		}
	})
	ft := &fakeTap{}
	for i := 0; i < 10; i++ {
		r.Observe(ft.chunk(tap.Stdin, []byte(fmt.Sprintf("{\"i\":%d}\n", i))))
	}
	r.Close()
	recs := w.records()
	if got := streamOf(recs, 0, cassette.DirIn); strings.Count(string(got), "\n") != 10 {
		t.Errorf("frames after the panic were lost: %q", got)
	}
	msgs := ws.list()
	if len(msgs) != 1 || !strings.Contains(msgs[0], "validator") || !strings.Contains(msgs[0], "nil map") {
		t.Errorf("warnings %q, want one about the validator", msgs)
	}
	var seen, warnEv int
	for _, rec := range recs {
		if rec.K == cassette.KindViolation && rec.Code == "test.seen" {
			seen++
			if rec.Ref == 0 || recs[rec.Ref-1].K != cassette.KindFrame {
				t.Errorf("violation %+v does not point at a frame", rec)
			}
		}
		if rec.K == cassette.KindEvent && rec.Ev == cassette.EventWarning {
			warnEv++
		}
	}
	if seen != 1 || warnEv != 1 {
		t.Errorf("%d violations before the panic (want 1), %d warning events (want 1)", seen, warnEv)
	}
}

// Lossy mode never blocks Observe; what could not be queued becomes gap
// records and the rest is recorded exactly.
func TestRecorderLossyRecordsGaps(t *testing.T) {
	w := &memWriter{block: make(chan struct{})}
	r, _ := newTestRecorder(t, w, WithLossy())
	ft := &fakeTap{}
	var sent int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 2000; i++ {
			line := []byte(fmt.Sprintf("{\"i\":%d}\n", i))
			sent += int64(len(line))
			r.Observe(ft.chunk(tap.Stdout, line))
		}
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("lossy Observe blocked behind a stalled writer")
	}
	close(w.block)
	r.Close()
	recs := w.records()
	var gapBytes int64
	for _, rec := range recs {
		if rec.K == cassette.KindEvent && rec.Ev == cassette.EventGap {
			gapBytes += rec.Bytes
			if rec.D != cassette.DirOut {
				t.Errorf("gap %+v without direction", rec)
			}
		}
	}
	got := int64(len(streamOf(recs, 0, cassette.DirOut)))
	if gapBytes == 0 || got+gapBytes != sent {
		t.Errorf("recorded %d + gaps %d bytes, sent %d", got, gapBytes, sent)
	}
}

func TestRecorderDetectsProtocol(t *testing.T) {
	mix := traffic(t)
	w := &memWriter{}
	r, _ := newTestRecorder(t, w)
	ft := &fakeTap{}
	in, out := bytes.SplitAfter(mix["acp-go.in"], []byte("\n")), bytes.SplitAfter(mix["acp-go.out"], []byte("\n"))
	// Interleave: each parent line, then the child's lines up to the next.
	for i := 0; i < len(in) || i < len(out); i++ {
		if i < len(in) && len(in[i]) > 0 {
			r.Observe(ft.chunk(tap.Stdin, in[i]))
		}
		if i < len(out) && len(out[i]) > 0 {
			r.Observe(ft.chunk(tap.Stdout, out[i]))
		}
	}
	r.Close()
	recs := w.records()
	var meta string
	classified := 0
	for _, rec := range recs {
		if rec.K == cassette.KindMeta {
			meta = rec.Protocol
		}
		if rec.K == cassette.KindFrame && rec.Kind != "" {
			classified++
		}
	}
	if meta != "acp" {
		t.Errorf("meta protocol %q, want acp", meta)
	}
	if classified == 0 {
		t.Error("no frame was classified")
	}
	if recs[0].K == cassette.KindFrame && recs[0].Method != "initialize" {
		t.Errorf("first frame %+v: method not classified", recs[0])
	}
}

// switchWriter writes to a real file for the first n bytes and then to
// /dev/full, so that the cassette's writes fail with ENOSPC mid-session.
type switchWriter struct {
	n    int
	file *os.File
	full *os.File
}

func (w *switchWriter) Write(p []byte) (int, error) {
	if w.n > 0 {
		w.n -= len(p)
		return w.file.Write(p)
	}
	return w.full.Write(p)
}

func TestRecorderDiskFullWithCassetteWriter(t *testing.T) {
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skip("no /dev/full:", err)
	}
	defer full.Close()
	f, err := os.Create(filepath.Join(t.TempDir(), "x.cassette"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cw, err := cassette.NewWriter(&switchWriter{n: 100 << 10, file: f, full: full}, cassette.Header{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, ws := newTestRecorder(t, cw)
	s := makeSession(t, 2<<20)
	done := make(chan struct{})
	go func() { s.feed(r); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Observe blocked after the disk filled up")
	}
	if err := r.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	w := ws.list()
	if len(w) != 1 || !strings.Contains(w[0], "no space left on device") {
		t.Errorf("warnings %q, want one about the full disk", w)
	}
}

func TestRecorderRedacts(t *testing.T) {
	secretFrame := `{"jsonrpc":"2.0","id":1,"method":"authenticate","params":{"methodId":"key","token":"sk-live-123"}}`
	plain := `{"jsonrpc":"2.0","id":2,"method":"session/new","params":{}}`
	for _, off := range []bool{false, true} {
		w := &memWriter{}
		var opts []Option
		if off {
			opts = append(opts, WithRedact(RedactOptions{Off: true}))
		}
		r, _ := newTestRecorder(t, w, opts...)
		ft := &fakeTap{}
		r.Observe(ft.chunk(tap.Stdin, []byte(secretFrame+"\n"+plain+"\n")))
		r.Observe(ft.chunk(tap.Stderr, []byte("Authorization: Bearer abc.def\n")))
		r.Close()
		recs := w.records()
		in := string(streamOf(recs, 0, cassette.DirIn))
		errs := string(streamOf(recs, 0, cassette.DirErr))
		if off {
			if in != secretFrame+"\n"+plain+"\n" || !strings.Contains(errs, "abc.def") {
				t.Errorf("--no-redact changed the recording: %q %q", in, errs)
			}
			continue
		}
		if strings.Contains(in, "sk-live-123") || !strings.Contains(in, plain) {
			t.Errorf("secret kept or plain frame changed: %q", in)
		}
		if strings.Contains(errs, "abc.def") {
			t.Errorf("bearer token kept on stderr: %q", errs)
		}
		redacted := 0
		for _, rec := range recs {
			if rec.Redacted {
				redacted++
			}
		}
		if redacted != 2 {
			t.Errorf("%d records marked redacted, want 2", redacted)
		}
		var at []string
		for _, rec := range recs {
			if rec.Redacted {
				at = append(at, fmt.Sprintf("%s%q", rec.D, rec.RedactedAt))
			}
		}
		if got := strings.Join(at, " "); got != `in["/params/token"] err[""]` {
			t.Errorf("redactedAt: %s", got)
		}
	}
	if !Redacting(RedactOptions{}) || Redacting(RedactOptions{Off: true}) {
		t.Error("Redacting disagrees with the options")
	}
}

// TestRecorderKeepsNotSecretFields: once the session is detected as LSP,
// its progress tokens (protocol.NotSecret) are recorded as they were; a
// token under another method is still replaced, and the record says where.
func TestRecorderKeepsNotSecretFields(t *testing.T) {
	msg := func(body string) string { return fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body) }
	initialize := msg(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"processId":1,"rootUri":"file:///w","capabilities":{}}}`)
	in := initialize + msg(`{"jsonrpc":"2.0","id":2,"method":"acme/signIn","params":{"token":"ghp_s3cret"}}`)
	out := msg(`{"jsonrpc":"2.0","id":1,"result":{"capabilities":{}}}`) +
		msg(`{"jsonrpc":"2.0","method":"$/progress","params":{"token":"tok-1","value":{"kind":"begin","title":"x"}}}`)
	w := &memWriter{}
	r, _ := newTestRecorder(t, w)
	ft := &fakeTap{}
	cut := len(initialize) + 30 // the sign-in request arrives in two reads, after the answers
	r.Observe(ft.chunk(tap.Stdin, []byte(in[:cut])))
	r.Observe(ft.chunk(tap.Stdout, []byte(out)))
	r.Observe(ft.chunk(tap.Stdin, []byte(in[cut:])))
	r.Close()
	recs := w.records()
	if got := string(streamOf(recs, 0, cassette.DirOut)); got != out {
		t.Errorf("stdout recorded as\n%q\nthe child wrote\n%q", got, out)
	}
	gotIn := string(streamOf(recs, 0, cassette.DirIn))
	if strings.Contains(gotIn, "ghp_s3cret") || !strings.Contains(gotIn, `"params":{"token":"[REDACTED]"}`) {
		t.Errorf("the sign-in token was not redacted: %q", gotIn)
	}
	for _, rec := range recs {
		if rec.Redacted && (rec.Method != "acme/signIn" || fmt.Sprint(rec.RedactedAt) != "[/params/token]") {
			t.Errorf("record %d (%s) redacted at %q", rec.N, rec.Method, rec.RedactedAt)
		}
	}
}

// Socket mode: each connection is its own stream pair and session; a
// closed connection gets its last line and its session-end checks at once.
func TestRecorderConnections(t *testing.T) {
	w := &memWriter{}
	r, _ := newTestRecorder(t, w, WithProtocol("acp", true))
	ft := &fakeTap{}
	req := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`
	for conn := 1; conn <= 2; conn++ {
		r.Event(tap.Event{Conn: conn, Kind: cassette.EventConnOpen})
		c := ft.chunk(tap.Stdin, []byte(req+"\n"+"tail"))
		c.Conn = conn
		r.Observe(c)
	}
	r.Event(tap.Event{Conn: 1, Kind: cassette.EventConnClose, T: ft.t + 1})
	// Wait until conn 1's close is written, before conn 2 closes.
	deadline := time.Now().Add(5 * time.Second)
	closedAt := -1
	for closedAt < 0 && time.Now().Before(deadline) {
		for i, rec := range w.records() {
			if rec.K == cassette.KindEvent && rec.Ev == cassette.EventConnClose {
				closedAt = i
			}
		}
		time.Sleep(time.Millisecond)
	}
	r.Event(tap.Event{Conn: 2, Kind: cassette.EventConnClose, T: ft.t + 2})
	r.Close()
	recs := w.records()
	for conn := 1; conn <= 2; conn++ {
		if got := string(streamOf(recs, conn, cassette.DirIn)); got != req+"\ntail" {
			t.Errorf("conn %d: %q", conn, got)
		}
	}
	if closedAt < 0 {
		t.Fatal("conn 1's close was not written")
	}
	// conn 1's tail line comes before its close event.
	tailAt := -1
	for i, rec := range recs {
		if rec.Conn == 1 && rec.K == cassette.KindFrame && rec.Text == "tail" {
			tailAt = i
		}
	}
	if tailAt < 0 || tailAt > closedAt {
		t.Errorf("conn 1's last line at %d, its close at %d", tailAt, closedAt)
	}
}

// A forced protocol gets a meta record unless the header already names it.
func TestRecorderForcedProtocolMeta(t *testing.T) {
	for _, inHeader := range []bool{false, true} {
		w := &memWriter{}
		r, _ := newTestRecorder(t, w, WithProtocol("mcp", inHeader))
		ft := &fakeTap{}
		r.Observe(ft.chunk(tap.Stdin, []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`+"\n")))
		r.Close()
		recs := w.records()
		metas := 0
		for _, rec := range recs {
			if rec.K == cassette.KindMeta {
				metas++
				if rec.Protocol != "mcp" || rec.N != 1 {
					t.Errorf("meta record %+v", rec)
				}
			}
		}
		if want := map[bool]int{false: 1, true: 0}[inHeader]; metas != want {
			t.Errorf("header names it: %v; %d meta records, want %d", inHeader, metas, want)
		}
		frames := 0
		for _, f := range recs {
			if f.K == cassette.KindFrame {
				frames++
				if f.Method != "initialize" || f.Kind != "request" {
					t.Errorf("frame not classified by the forced protocol: %+v", f)
				}
			}
		}
		if frames != 1 {
			t.Errorf("%d frames, want 1", frames)
		}
	}
}

// A user's JSON Schema judges the frames (rpctap record --schema).
func TestRecorderSchema(t *testing.T) {
	schema := filepath.Join(t.TempDir(), "s.json")
	os.WriteFile(schema, []byte(`{"type":"object","required":["type"],"properties":{"type":{"type":"string"}}}`), 0o600)
	w := &memWriter{}
	r, ws := newTestRecorder(t, w, WithSchema(schema))
	ft := &fakeTap{}
	r.Observe(ft.chunk(tap.Stdin, []byte("{\"type\":\"ping\"}\n{\"kind\":1}\n")))
	r.Close()
	if len(ws.list()) != 0 {
		t.Fatalf("warnings %q", ws.list())
	}
	var bad []uint64
	for _, rec := range w.records() {
		if rec.K == cassette.KindViolation && rec.Code == protocol.CodeSchemaInvalid {
			bad = append(bad, rec.Ref)
		}
	}
	if len(bad) != 1 || string(w.records()[bad[0]-1].JSON) != `{"kind":1}` {
		t.Errorf("schema violations about records %v, want one about {\"kind\":1}", bad)
	}
	// A schema that does not compile is one warning, and recording goes on.
	os.WriteFile(schema, []byte(`{"type":`), 0o600)
	w = &memWriter{}
	r, ws = newTestRecorder(t, w, WithSchema(schema))
	r.Observe(ft.chunk(tap.Stdin, []byte("{}\n")))
	r.Close()
	if len(ws.list()) != 1 || len(streamOf(w.records(), 0, cassette.DirIn)) != 3 {
		t.Errorf("broken schema: warnings %q, records %+v", ws.list(), w.records())
	}
}

// In the sink (yieldSmall) the writer goroutine yields the CPU after each
// small chunk and never after a large one; elsewhere it never yields.
func TestYieldAfterSmallChunks(t *testing.T) {
	var yields atomic.Int64
	old := yieldCPU
	yieldCPU = func() { yields.Add(1) }
	defer func() { yieldCPU = old }()
	for _, sink := range []bool{false, true} {
		yields.Store(0)
		w := &memWriter{}
		r, _ := newTestRecorder(t, w, func(o *Options) { o.yieldSmall = sink })
		ft := &fakeTap{}
		small := []byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n")
		large := append(bytes.Repeat([]byte(" "), yieldBelow), "\n"...)
		for range 3 {
			r.Observe(ft.chunk(tap.Stdin, small))
			r.Observe(ft.chunk(tap.Stdout, large))
		}
		r.Close()
		want := int64(0)
		if sink {
			want = 3
		}
		if got := yields.Load(); got != want {
			t.Errorf("yieldSmall %v: %d yields for 3 small and 3 large chunks, want %d", sink, got, want)
		}
	}
}
