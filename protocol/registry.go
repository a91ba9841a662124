package protocol

import (
	"fmt"
	"sort"
	"strings"
)

// entry is one registered protocol. Each protocol's file registers itself
// from init so that adding one never edits a shared list.
type entry struct {
	p Protocol
	// sniff scores how sure it is that frame (one of the first frames of a
	// session) belongs to p: 0 = no idea or no, 100 = certain. Detection
	// picks the highest score; ties go to the more specific protocol (the
	// one with the higher priority).
	sniff    func(dir Dir, frame []byte) int
	priority int
}

var registry = map[string]entry{}

func register(p Protocol, priority int, sniff func(dir Dir, frame []byte) int) {
	if _, dup := registry[p.Name()]; dup {
		panic("protocol registered twice: " + p.Name())
	}
	registry[p.Name()] = entry{p: p, sniff: sniff, priority: priority}
	if c, ok := p.(Cataloguer); ok {
		cataloguers = append(cataloguers, c)
	}
}

// Register adds a protocol defined outside this package (a test's toy
// protocol, a program that embeds rpctap with a protocol of its own), with
// a sniff and priority as the protocols here register theirs. Call it from
// init: the registry is not locked. It panics on a name registered twice.
func Register(p Protocol, priority int, sniff func(dir Dir, frame []byte) int) {
	register(p, priority, sniff)
}

// Lookup returns the protocol with the given name.
func Lookup(name string) (Protocol, error) {
	if e, ok := registry[name]; ok {
		return e.p, nil
	}
	return nil, fmt.Errorf("unknown protocol %q (known: %s)", name, strings.Join(Names(), ", "))
}

// Names lists the registered protocols, sorted.
func Names() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
