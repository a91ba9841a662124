package main

// The parent side of each workload.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// result is what one session measured on the parent's side.
type result struct {
	Lat     []int64 // ping: round-trip ns; mix: big-frame round trip ns
	Elapsed time.Duration
	Payload int64 // bytes moved (both directions) during the timed part
	Raw     int64 // bytes moved in the whole session (for CPU/GiB and cassette ratio)
	Child   childStats
	// Startup is the time from launching the set-up to the answer to
	// initialize.
	Startup time.Duration
	// StatsFile: where the child writes its CPU time when the session has
	// no stats exchange (traffic); read after the child exits.
	StatsFile string
	// StallRSS is rpctap's (main+sink) resident KiB at the end of a stall.
	StallMainRSS, StallSinkRSS int64
}

type parentConn struct {
	in      *lineWriter
	out     *lineReader
	l       *launched
	started time.Time     // when the set-up was launched
	startup time.Duration // launch -> initialize answered
}

// handshake runs initialize and session/new (untimed).
func (c *parentConn) handshake() error {
	for _, f := range [][]byte{appendInitialize(nil), appendSessionNew(nil)} {
		if err := c.in.write(f); err != nil {
			return err
		}
		if _, err := c.out.next(); err != nil {
			return fmt.Errorf("handshake: %v", err)
		}
		if c.startup == 0 {
			c.startup = time.Since(c.started)
		}
	}
	return nil
}

// stats asks the child for its counts and checks them against ours.
func (c *parentConn) stats(id int, res *result) error {
	sentN, sentCRC, sentLines := c.in.n, c.in.crc, c.in.lines
	gotN, gotCRC, gotLines := c.out.n, c.out.crc, c.out.lines
	if err := c.in.write(appendStatsRequest(nil, id)); err != nil {
		return err
	}
	line, err := c.out.next()
	if err != nil {
		return fmt.Errorf("stats: %v", err)
	}
	var resp struct {
		Result childStats `json:"result"`
	}
	if err := json.Unmarshal(line, &resp); err != nil {
		return fmt.Errorf("stats reply %.80q: %v", line, err)
	}
	st := resp.Result
	if st.InBytes != sentN || st.InCRC != sentCRC || st.InLines != sentLines {
		return fmt.Errorf("child received %d bytes/%d lines crc %08x, parent sent %d/%d crc %08x",
			st.InBytes, st.InLines, st.InCRC, sentN, sentLines, sentCRC)
	}
	if st.OutBytes != gotN || st.OutCRC != gotCRC || st.OutLines != gotLines {
		return fmt.Errorf("child sent %d bytes/%d lines crc %08x, parent received %d/%d crc %08x",
			st.OutBytes, st.OutLines, st.OutCRC, gotN, gotLines, gotCRC)
	}
	res.Child = st
	res.Raw = c.in.n + c.out.n
	res.Startup = c.startup
	return nil
}

func (c *parentConn) moved() int64 { return c.in.n + c.out.n }

func runPing(c *parentConn, p params) (*result, error) {
	pg, err := newPinger(c, p)
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	for i := 0; i < p.N; i++ {
		if err := pg.roundTrip(i); err != nil {
			return nil, err
		}
	}
	pg.res.Elapsed = time.Since(t0)
	return pg.done()
}

// pinger drives the ping workload one round trip at a time.
type pinger struct {
	c      *parentConn
	p      params
	frames []byte
	res    *result
	m0     int64
}

func newPinger(c *parentConn, p params) (*pinger, error) {
	sid := sessionID(p.Seed)
	g := newTextGen(p.Seed*104729 + 3)
	frames := make([]byte, 0, p.N*pingSize)
	for i := 0; i < p.N; i++ {
		frames = appendPing(frames, 2+i, sid, g)
	}
	if err := c.handshake(); err != nil {
		return nil, err
	}
	return &pinger{c: c, p: p, frames: frames, res: &result{Lat: make([]int64, 0, p.N)}, m0: c.moved()}, nil
}

func (pg *pinger) roundTrip(i int) error {
	f := pg.frames[i*pingSize : (i+1)*pingSize]
	s := time.Now()
	if err := pg.c.in.write(f); err != nil {
		return err
	}
	line, err := pg.c.out.next()
	if err != nil {
		return fmt.Errorf("ping %d: %v", i, err)
	}
	pg.res.Lat = append(pg.res.Lat, int64(time.Since(s)))
	if len(line) != pingSize || atoi(frameID(line)) != 2+i {
		return fmt.Errorf("ping %d: bad reply %.60q", i, line)
	}
	return nil
}

func (pg *pinger) done() (*result, error) {
	pg.res.Payload = pg.c.moved() - pg.m0
	if pg.res.Elapsed == 0 { // interleaved: the time spent in this session's round trips
		for _, ns := range pg.res.Lat {
			pg.res.Elapsed += time.Duration(ns)
		}
	}
	return pg.res, pg.c.stats(2+pg.p.N, pg.res)
}

var prefixPerm = []byte(`{"jsonrpc":"2.0","id":"perm-`)

func runMix(c *parentConn, p params, pool []byte) (*result, error) {
	sid := sessionID(p.Seed)
	cur := &cursor{pool: pool, off: len(pool) / 2}
	res := &result{}
	if err := c.handshake(); err != nil {
		return nil, err
	}
	var buf []byte
	m0 := c.moved()
	t0 := time.Now()
	for t := 0; t < p.N; t++ {
		id := 2 + t
		tp := planTurn(p, t)
		text := cur.take(50 + (t*131)%1900)
		if tp.big {
			buf = appendBigPrompt(buf[:0], id, sid, text, cur.take(bigFrame))
		} else {
			buf = appendPrompt(buf[:0], id, sid, text)
		}
		s := time.Now()
		if err := c.in.write(buf); err != nil {
			return nil, err
		}
		for {
			line, err := c.out.next()
			if err != nil {
				return nil, fmt.Errorf("turn %d: %v", t, err)
			}
			if tp.big && len(line) >= bigFrame {
				res.Lat = append(res.Lat, int64(time.Since(s)))
			}
			if bytes.HasPrefix(line, prefixPerm) {
				if err := c.in.write(appendPermissionResult(buf[:0], line)); err != nil {
					return nil, err
				}
				continue
			}
			if rid := frameID(line); rid != nil {
				if atoi(rid) != id {
					return nil, fmt.Errorf("turn %d: unexpected reply %.120q", t, line)
				}
				break
			}
		}
	}
	res.Elapsed = time.Since(t0)
	res.Payload = c.moved() - m0
	return res, c.stats(2+p.N, res)
}

// runStream sends one prompt and reads what the child streams (mixstream,
// mb). With stall > 0 the parent stops reading for that long after the first
// 4 MiB and samples rpctap's memory at the end of the stall.
func runStream(c *parentConn, p params, stall time.Duration) (*result, error) {
	sid := sessionID(p.Seed)
	res := &result{}
	if err := c.handshake(); err != nil {
		return nil, err
	}
	m0 := c.moved()
	t0 := time.Now()
	if err := c.in.write(appendPrompt(nil, 2, sid, []byte("stream"))); err != nil {
		return nil, err
	}
	stalled := stall == 0
	for {
		line, err := c.out.next()
		if err != nil {
			return nil, fmt.Errorf("stream: %v", err)
		}
		if !stalled && c.out.n > 4<<20 {
			stalled = true
			time.Sleep(stall)
			c.l.sample()
			_, _, res.StallMainRSS, res.StallSinkRSS = c.l.mem()
		}
		if rid := frameID(line); rid != nil {
			break
		}
	}
	res.Elapsed = time.Since(t0)
	res.Payload = c.moved() - m0
	return res, c.stats(3, res)
}
