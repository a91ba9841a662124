package viewer

import (
	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/internal/filterexpr"
	"github.com/rpctap/rpctap/protocol"
)

// Flow is one row of the flows view, as mitmproxy shows an HTTP exchange: a
// request and its response, with the notifications that streamed its
// answer in between (an ACP prompt's session/update chunks, MCP progress
// for a tool call) folded in; or a frame that belongs to no request (a
// notification, an event) on its own.
type Flow struct {
	First     uint64 // the request's record (or the lone frame's)
	Response  uint64 // its response's record; 0 while unanswered or for a lone frame
	T         int64  // when the request was read
	Dir       cassette.Dir
	Kind      string // the first frame's kind
	Method    string
	ID        string
	Latency   int64    // ns from the request to its response; -1 without one
	Streamed  []uint64 // records of the first flowStreamedKept notifications folded into the flow
	StreamedN int      // how many notifications were folded into it
	Summary   string   // the request's summary, then " → " and the response's
	Error     bool     // the response reports an error
}

// flowStreamedKept is how many of a flow's streamed notifications it
// remembers (the detail lists them; a long answer streamed in 100 000
// chunks keeps a count, not 800 KB of record numbers).
const flowStreamedKept = 50

// Flows groups frames into flows. Feed it records in order with Add; it
// keeps one Flow per request and per lone frame (not the frames).
//
// A response joins the flow of the request the Store paired it with (Pair:
// the analysis's pairing per connection, direction and id, or by command
// in order for opi/pi commands without an id), so flows and the list's
// LATENCY never disagree and the viewer pairs in one place.
type Flows struct {
	List []Flow
	// Pair returns the record paired with record n (Store.Pair).
	Pair func(n uint64) (uint64, bool)
	// Protocol is the session's protocol: how its frames are summarised
	// and which notifications stream into which requests.
	Protocol string
	// open requests: by the request's record number, the index of its
	// flow and the request's bytes (for StreamsInto) while it is open.
	open map[uint64]openFlow
}

type openFlow struct {
	i     int
	frame []byte
}

// Add takes the next record (only frames count).
func (fl *Flows) Add(r *cassette.Record) {
	if r.K != cassette.KindFrame || r.Part {
		return
	}
	if fl.open == nil {
		fl.open = map[uint64]openFlow{}
	}
	// The frame's summary (Summarize) is made only for the rows kept: a
	// notification folded into a flow does not need one, and those are
	// most frames of a streamed session.
	id := string(r.ID)
	switch {
	case r.Kind == string(protocol.Request):
		fl.List = append(fl.List, Flow{First: r.N, T: r.T, Dir: r.D, Kind: r.Kind, Method: r.Method, ID: id,
			Latency: -1, Summary: Summarize(fl.Protocol, r, r.T).Summary})
		fl.open[r.N] = openFlow{i: len(fl.List) - 1, frame: append([]byte(nil), r.JSON...)}
		return
	case r.Kind == string(protocol.Response) && fl.Pair != nil:
		req, paired := fl.Pair(r.N)
		if o, ok := fl.open[req]; ok && paired && req < r.N {
			delete(fl.open, req)
			f := &fl.List[o.i]
			f.Response, f.Latency = r.N, r.T-f.T
			info := protocol.Info{Kind: protocol.Response, Method: f.Method, ID: id}
			dir := protocol.DirOf(string(r.D))
			if s := protocol.Summarize(fl.Protocol, dir, info, r.JSON); s != "" {
				if f.Summary != "" {
					f.Summary += " → " + s
				} else {
					f.Summary = "→ " + s
				}
			}
			f.Error = filterexpr.IsError(fl.Protocol, r)
			return
		}
	case r.Kind == string(protocol.Notification) || r.Kind == string(protocol.Event):
		for _, o := range fl.open {
			f := &fl.List[o.i]
			if protocol.StreamsInto(fl.Protocol, f.Method, o.frame, r.Method, r.JSON) {
				if f.StreamedN < flowStreamedKept {
					f.Streamed = append(f.Streamed, r.N)
				}
				f.StreamedN++
				return
			}
		}
	}
	fl.List = append(fl.List, Flow{First: r.N, T: r.T, Dir: r.D, Kind: r.Kind, Method: r.Method, ID: id,
		Latency: -1, Summary: Summarize(fl.Protocol, r, r.T).Summary, Error: filterexpr.IsError(fl.Protocol, r)})
}
