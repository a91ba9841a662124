package export

import (
	"bufio"
	_ "embed"
	"fmt"
	"html"
	"io"
	"strings"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/viewer"
)

//go:embed report.html.tmpl
var reportTemplate string

// reportCSS and reportJS are inlined into the report: it loads nothing.
//
//go:embed report.css
var reportCSS string

//go:embed report.js
var reportJS string

// HTML writes a self-contained HTML report (docs/export.md "HTML"): one
// file with inline CSS and script and no URL to load, holding the frames
// as data the script renders into a list, a detail pane and, for sessions
// with prompts, the transcript (folded by the viewer's Transcript, as `rpctap
// view` shows it). The data is one JSON array inside a script element,
// streamed exchange by exchange; json.Marshal escapes <, > and &, so no
// payload can close the element. A Content-Security-Policy forbids every
// fetch, so even a payload the script mishandled could not reach the
// network.
type HTML struct {
	w  *bufio.Writer
	js *jsonStream
	tr *viewer.Transcript
}

// NewHTML writes to w.
func NewHTML(w io.Writer) *HTML {
	js := newJSONStream(w)
	return &HTML{w: js.w, js: js, tr: &viewer.Transcript{}}
}

// templateParts splits the template at its data slot.
func templateParts(s Session) (head, tail string) {
	r := strings.NewReplacer(
		"{{TITLE}}", html.EscapeString("rpctap · "+s.File),
		"{{CSS}}", reportCSS,
		"{{JS}}", reportJS,
	)
	t := r.Replace(reportTemplate)
	i := strings.Index(t, "{{DATA}}")
	return t[:i], t[i+len("{{DATA}}"):]
}

func (h *HTML) Begin(s Session) error {
	head, tail := templateParts(s)
	h.js.tail = "\n]" + tail
	if _, err := io.WriteString(h.w, head+"[\n"); err != nil {
		return err
	}
	return h.js.entry(map[string]any{"session": map[string]any{
		"file": s.File, "protocol": orRaw(s.Protocol), "created": s.Created.UTC().Format("2006-01-02 15:04:05.000 MST"),
	}})
}

// htmlFrame is one frame as the report's script reads it.
type htmlFrame struct {
	N       uint64 `json:"n"`
	T       int64  `json:"t"`
	Dir     string `json:"d"`
	Kind    string `json:"k"`
	Method  string `json:"m,omitempty"`
	ID      string `json:"id,omitempty"`
	Pair    uint64 `json:"pair,omitempty"` // the request's answer, or the answer's request
	Latency *int64 `json:"lat,omitempty"`  // ns from the request to its answer
	Error   string `json:"err,omitempty"`
	Payload string `json:"p"`
}

func (h *HTML) Exchange(x *Exchange) error {
	req := &htmlFrame{N: x.Request.Record, T: x.Request.T, Dir: x.Request.Dir, Kind: x.Request.Kind, Method: x.Request.Method, ID: x.Request.ID, Payload: string(x.Request.Payload)}
	frames := []*htmlFrame{req}
	if r := x.Response; r != nil {
		lat := r.T - x.Request.T
		res := &htmlFrame{N: r.Record, T: r.T, Dir: r.Dir, Kind: r.Kind, Method: x.Request.Method, ID: r.ID, Pair: req.N, Latency: &lat, Payload: string(r.Payload)}
		req.Pair, req.Latency = r.Record, &lat
		if code, msg, ok := errorOf(r.Payload); ok {
			res.Error = fmt.Sprintf("%d %s", code, msg)
			req.Error = res.Error
		}
		frames = append(frames, res)
	} else if !x.Notification {
		req.Error = "never answered"
	}
	for _, f := range frames {
		if err := h.js.entry(map[string]any{"f": f}); err != nil {
			return err
		}
	}
	return nil
}

// Record feeds the transcript (RecordSeer) and writes the turns that are
// over: only the turn in progress is held.
func (h *HTML) Record(r *cassette.Record) error {
	h.tr.Add(r)
	if len(h.tr.Turns) > 1 {
		done := h.tr.Turns[:len(h.tr.Turns)-1]
		h.tr.Turns = append([]*viewer.Turn(nil), h.tr.Turns[len(h.tr.Turns)-1])
		return h.writeTurns(done)
	}
	return nil
}

// htmlTurn is one transcript turn as the report's script reads it.
type htmlTurn struct {
	N       int         `json:"n"`
	Rec     uint64      `json:"rec"`
	T       int64       `json:"t"`
	Method  string      `json:"m,omitempty"`
	Done    int64       `json:"done"`
	Entries []htmlEntry `json:"e"`
}

type htmlEntry struct {
	Kind string `json:"k"`
	Rec  uint64 `json:"rec"`
	Text string `json:"text"`
}

var entryKinds = map[viewer.EntryKind]string{
	viewer.EntryText: "text", viewer.EntryThought: "thought", viewer.EntryUser: "user", viewer.EntryTool: "tool",
	viewer.EntryPermission: "permission", viewer.EntryProgress: "progress", viewer.EntryNote: "note", viewer.EntryPlan: "plan",
}

func (h *HTML) writeTurns(turns []*viewer.Turn) error {
	for _, t := range turns {
		if len(t.Entries) == 0 && t.N == 0 {
			continue
		}
		ht := htmlTurn{N: t.N, Rec: t.Rec, T: t.T, Method: t.Method, Done: t.Done}
		for _, e := range t.Entries {
			ht.Entries = append(ht.Entries, htmlEntry{Kind: entryKinds[e.Kind], Rec: e.Rec, Text: e.Text})
		}
		if err := h.js.entry(map[string]any{"turn": ht}); err != nil {
			return err
		}
	}
	return nil
}

func (h *HTML) End() error {
	if err := h.writeTurns(h.tr.Turns); err != nil {
		return err
	}
	h.tr.Turns = nil
	return h.js.end()
}
