package replay

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/rpctap/rpctap/cassette"
)

// sharedDir is ../shared beside the checkout.
func sharedDir(t testing.TB) string {
	t.Helper()
	d, _ := filepath.Abs(filepath.Join("..", "..", "shared"))
	if _, err := os.Stat(filepath.Join(d, "traffic")); err != nil {
		t.Skip("needs ../shared/traffic beside the checkout")
	}
	return d
}

func readLines(t testing.TB, path string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		out = append(out, append([]byte(nil), sc.Bytes()...))
	}
	return out
}

// idOf returns the raw id and whether the frame is a response (no method).
func idOf(line []byte) (id string, isResp bool, isReq bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(line, &m) != nil {
		return "", false, false
	}
	_, hasMethod := m["method"]
	_, hasResult := m["result"]
	_, hasError := m["error"]
	if raw, ok := m["id"]; ok {
		id = string(raw)
	}
	return id, id != "" && !hasMethod && (hasResult || hasError), id != "" && hasMethod
}

// builder makes records the way the recorder would, 1 ms apart.
type builder struct {
	recs []cassette.Record
	t    int64
}

func newBuilder(protocol string) *builder {
	b := &builder{}
	b.recs = append(b.recs, cassette.Record{N: 0, K: cassette.KindHeader, Header: &cassette.Header{
		Format: cassette.FormatName, Version: "1.0", Protocol: protocol, Created: "2026-11-21T00:00:00Z"}})
	return b
}

func (b *builder) add(r cassette.Record) {
	b.t += 1e6
	r.N = uint64(len(b.recs))
	r.T = b.t
	b.recs = append(b.recs, r)
}

func (b *builder) frame(d cassette.Dir, line []byte) {
	b.add(cassette.NewLineRecord(cassette.KindFrame, d, append([]byte(nil), line...), "\n"))
}

func (b *builder) stderr(line string) {
	b.add(cassette.NewLineRecord(cassette.KindStderr, cassette.DirErr, []byte(line), "\n"))
}

func (b *builder) event(ev string, exit *int) {
	b.add(cassette.Record{K: cassette.KindEvent, Ev: ev, Exit: exit})
}

func (b *builder) end() []cassette.Record {
	b.add(cassette.Record{K: cassette.KindEnd})
	return b.recs
}

// fromTrafficSequential interleaves a JSON-RPC capture pair the way a
// sequential parent produces it: each parent request is followed by the
// child's frames up to its response; a child request is followed at once by
// the parent's answer to it.
func fromTrafficSequential(t testing.TB, name, protocol string) *builder {
	dir := filepath.Join(sharedDir(t), "traffic")
	in := readLines(t, filepath.Join(dir, name+".in"))
	out := readLines(t, filepath.Join(dir, name+".out"))
	b := newBuilder(protocol)
	b.event(cassette.EventStart, nil)
	usedIn := make([]bool, len(in))
	j := 0
	emitAnswer := func(reqID string) {
		for k, l := range in {
			if usedIn[k] {
				continue
			}
			if id, resp, _ := idOf(l); resp && id == reqID {
				usedIn[k] = true
				b.frame(cassette.DirIn, l)
				return
			}
		}
	}
	for i, l := range in {
		if usedIn[i] {
			continue
		}
		usedIn[i] = true
		b.frame(cassette.DirIn, l)
		id, _, isReq := idOf(l)
		if !isReq {
			continue
		}
		for j < len(out) {
			o := out[j]
			j++
			b.frame(cassette.DirOut, o)
			oid, oresp, oreq := idOf(o)
			if oreq {
				emitAnswer(oid)
			}
			if oresp && oid == id {
				break
			}
		}
	}
	for ; j < len(out); j++ {
		b.frame(cassette.DirOut, out[j])
	}
	return b
}

// fromTrafficBatch records every parent line first, then every child line:
// a parent that writes everything and then reads (the pi-rpc capture).
func fromTrafficBatch(t testing.TB, name, protocol string) *builder {
	dir := filepath.Join(sharedDir(t), "traffic")
	b := newBuilder(protocol)
	b.event(cassette.EventStart, nil)
	for _, l := range readLines(t, filepath.Join(dir, name+".in")) {
		b.frame(cassette.DirIn, l)
	}
	for _, l := range readLines(t, filepath.Join(dir, name+".out")) {
		b.frame(cassette.DirOut, l)
	}
	return b
}

func intp(n int) *int { return &n }
