package cassette

import (
	"bytes"
	"container/list"
	"encoding/json"
	"errors"
	"fmt"
)

// cacheEntry is one decoded data frame: its content and where each complete
// record line ends.
type cacheEntry struct {
	raw           []byte
	ends          []uint32 // index in raw of each record's newline
	firstT, lastT int64
	end           bool // the last record is the end record
}

// newCacheEntry splits a frame's decoded content into record lines. A
// complete frame must end at a record boundary; the decoded blocks of an
// open frame may end inside a record, which is left out.
func newCacheEntry(raw []byte, complete bool) (*cacheEntry, error) {
	if len(raw) >= 1<<32 {
		return nil, errors.New("frame too large")
	}
	e := &cacheEntry{raw: raw}
	for pos := 0; pos < len(raw); {
		i := bytes.IndexByte(raw[pos:], '\n')
		if i < 0 {
			if complete {
				return nil, errors.New("a zstd frame does not end at a record boundary")
			}
			break
		}
		pos += i + 1
		e.ends = append(e.ends, uint32(pos-1))
	}
	if n := len(e.ends); n > 0 {
		var first, last Record
		if err := first.UnmarshalJSON(e.line(0)); err != nil {
			return nil, err
		}
		if err := last.UnmarshalJSON(e.line(n - 1)); err != nil {
			return nil, err
		}
		e.firstT, e.lastT, e.end = first.T, last.T, last.K == KindEnd
	}
	return e, nil
}

// check verifies that the frame's records are numbered from first on.
func (e *cacheEntry) check(first uint64) error {
	n := len(e.ends)
	if n == 0 {
		return nil
	}
	for _, j := range []int{0, n - 1} {
		var r struct {
			N *uint64 `json:"n"`
		}
		if err := json.Unmarshal(e.line(j), &r); err != nil || r.N == nil {
			return fmt.Errorf("record %d: no record number", first+uint64(j))
		}
		if *r.N != first+uint64(j) {
			return fmt.Errorf("record number %d where %d was expected", *r.N, first+uint64(j))
		}
	}
	return nil
}

func (e *cacheEntry) line(j int) []byte {
	start := 0
	if j > 0 {
		start = int(e.ends[j-1]) + 1
	}
	return e.raw[start:e.ends[j]]
}

func (e *cacheEntry) rawLen() int {
	if len(e.ends) == 0 {
		return 0
	}
	return int(e.ends[len(e.ends)-1]) + 1
}

// t returns the time of record j (math.MinInt64 if it does not parse, which
// only a corrupt frame can cause).
func (e *cacheEntry) t(j int) int64 {
	var r struct {
		T int64 `json:"t"`
	}
	if json.Unmarshal(e.line(j), &r) != nil {
		return -1 << 63
	}
	return r.T
}

func (e *cacheEntry) size() int { return cap(e.raw) + 4*cap(e.ends) + 64 }

type cacheKey struct {
	off int64
	len int64 // compressed bytes decoded: an open frame that grew is another entry
}

type cacheItem struct {
	key cacheKey
	ent *cacheEntry
}

// frameCache is a least-recently-used cache of decoded frames bounded by
// their size. The most recent entry is always kept, so one frame larger than
// the bound still works.
type frameCache struct {
	max   int
	bytes int
	ll    list.List
	items map[cacheKey]*list.Element
}

func (c *frameCache) get(k cacheKey) *cacheEntry {
	if el, ok := c.items[k]; ok {
		c.ll.MoveToFront(el)
		return el.Value.(*cacheItem).ent
	}
	return nil
}

func (c *frameCache) put(k cacheKey, e *cacheEntry) {
	if c.items == nil {
		c.items = map[cacheKey]*list.Element{}
	}
	if el, ok := c.items[k]; ok {
		c.ll.MoveToFront(el)
		return
	}
	c.items[k] = c.ll.PushFront(&cacheItem{k, e})
	c.bytes += e.size()
	for c.bytes > c.max && c.ll.Len() > 1 {
		el := c.ll.Back()
		it := el.Value.(*cacheItem)
		c.ll.Remove(el)
		delete(c.items, it.key)
		c.bytes -= it.ent.size()
	}
}
