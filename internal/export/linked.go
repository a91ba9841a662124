package export

import (
	"errors"
	"path/filepath"

	"github.com/rpctap/rpctap/internal/linked"
)

// spanLink says where the spans of a linked cassette hang in the parent's
// trace (RunLinked).
type spanLink struct {
	salt   string // the cassette's file name: its span ids differ from the parent's
	server string
	m      *linked.Map
	link   linked.Link
}

// parentAt is the parent span of a linked cassette's span that starts at
// t (its own time) with a frame toward the server or from it: the span of the parent's tool call (execute_tool) that
// encloses it, else the span of the session/new or session/load request
// that spawned the cassette (its session's root), else none.
func (l *spanLink) parentAt(t int64, toServer bool) string {
	if tc := l.m.Enclosing(l.link.Session, t+l.link.Offset, toServer); tc != nil {
		return toolSpanID(tc.ID, tc.StartRecord)
	}
	if l.link.Spawned {
		return frameSpanID("", l.link.SpawnRecord, "in")
	}
	return ""
}

// LinkedReport is what RunLinked found wrong with one linked cassette.
type LinkedReport struct {
	Path string
	Report
	Err error // the cassette could not be read at all (its spans are missing)
}

// RunLinked exports the cassette at path to w, an OTLP writer, then each
// cassette linked to it (record --deep: the MCP servers an ACP agent
// spawned) into the same trace: each a resource of its own, its spans
// children of the parent's execute_tool span whose tool call encloses
// them in time, else of the span of the request that spawned it. With no
// linked cassette it is RunReport. A linked cassette that cannot be read
// is reported in its LinkedReport and skipped; an error of w stops all.
func RunLinked(path string, w *OTLP, o Options, progress func(Progress)) (Report, []LinkedReport, error) {
	kids, err := linked.Children(path, nil)
	if err != nil || len(kids) == 0 {
		rep, err := RunReport(path, w, o, progress)
		return rep, nil, err
	}
	// The parent's sessions and tool calls are learnt in the pass that
	// exports it: the linked spans come after.
	h, err := linked.ReadHeader(path)
	if err != nil {
		return Report{}, nil, err
	}
	m := linked.NewMap(h)
	po := o
	po.observe = m.Add
	w.more = true
	rep, err := RunReport(path, w, po, progress)
	if err != nil {
		w.more = false
		return rep, nil, err
	}
	var reps []LinkedReport
	for _, k := range kids {
		w.link = &spanLink{salt: filepath.Base(k.Path), server: k.Server(), m: m, link: m.Link(k)}
		r, err := RunReport(k.Path, w, o, nil)
		w.link = nil
		var we *WriteError
		if errors.As(err, &we) {
			w.more = false
			return rep, reps, err
		}
		reps = append(reps, LinkedReport{Path: k.Path, Report: r, Err: err})
	}
	w.more = false
	return rep, reps, wrapWrite(w.finish())
}
