package shrink

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/rpctap/rpctap/cassette"
)

func TestDDMinFindsTheTwoUnitsThatMatter(t *testing.T) {
	units := make([]int, 100)
	for i := range units {
		units[i] = i
	}
	calls := 0
	fails := func(set []int) (bool, error) {
		calls++
		return slices.Contains(set, 3) && slices.Contains(set, 71), nil
	}
	got, st, err := DDMin(units, fails, 0)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[3 71]" {
		t.Fatalf("got %v, want [3 71]", got)
	}
	if st.Runs != calls || calls > 200 {
		t.Errorf("%d runs (%d calls): ddmin should need well under n log n here", st.Runs, calls)
	}
}

func TestDDMinEmptyWhenOnlyThePinnedMatter(t *testing.T) {
	got, st, err := DDMin([]int{0, 1, 2}, func([]int) (bool, error) { return true, nil }, 0)
	if err != nil || len(got) != 0 || st.Runs != 1 {
		t.Fatalf("got %v runs %d err %v", got, st.Runs, err)
	}
}

func TestDDMinStopsAtMaxRuns(t *testing.T) {
	units := make([]int, 64)
	for i := range units {
		units[i] = i
	}
	got, st, err := DDMin(units, func(set []int) (bool, error) { return slices.Contains(set, 40), nil }, 3)
	if err != nil {
		t.Fatal(err)
	}
	if st.Runs > 4 || !slices.Contains(got, 40) {
		t.Fatalf("runs %d, got %v", st.Runs, got)
	}
}

func TestDDMinPassesPredicateErrors(t *testing.T) {
	_, _, err := DDMin([]int{1, 2}, func([]int) (bool, error) { return false, fmt.Errorf("boom") }, 0)
	if err == nil || err.Error() != "boom" {
		t.Fatalf("err %v", err)
	}
}

func frame(n uint64, d cassette.Dir, kind, method, id string) cassette.Record {
	r := cassette.Record{N: n, K: cassette.KindFrame, D: d, Kind: kind, Method: method, JSON: json.RawMessage(`{}`)}
	if id != "" {
		r.ID = json.RawMessage(id)
	}
	return r
}

func TestPlanGroupsRequestsWithTheirResponses(t *testing.T) {
	h := cassette.Header{Protocol: "acp"}
	recs := []cassette.Record{
		{N: 0, K: cassette.KindHeader, Header: &h},
		{N: 1, K: cassette.KindEvent, Ev: cassette.EventStart},
		frame(2, cassette.DirIn, "request", "initialize", "1"),
		frame(3, cassette.DirOut, "response", "initialize", "1"),
		frame(4, cassette.DirIn, "request", "session/prompt", "2"),
		frame(5, cassette.DirOut, "request", "session/request_permission", "1"), // same id, other side
		frame(6, cassette.DirOut, "notification", "session/update", ""),
		frame(7, cassette.DirIn, "response", "session/request_permission", "1"),
		{N: 8, K: cassette.KindStderr, D: cassette.DirErr, Text: "log", HasText: true},
		frame(9, cassette.DirOut, "response", "session/prompt", "2"),
		{N: 10, K: cassette.KindViolation, Code: "x"},
		frame(11, cassette.DirIn, "request", "session/cancel", "3"), // never answered
		{N: 12, K: cassette.KindEvent, Ev: cassette.EventExit},
		{N: 13, K: cassette.KindEnd},
	}
	p := NewPlan(recs)
	var got []string
	for _, u := range p.Units {
		var ns []uint64
		for _, i := range u.Records {
			ns = append(ns, recs[i].N)
		}
		got = append(got, fmt.Sprintf("%v%v", ns, map[bool]string{true: "*", false: ""}[u.Pinned]))
	}
	want := "[[2 3]* [4 9] [5 7] [6] [8] [11]]"
	if fmt.Sprint(got) != want {
		t.Fatalf("units %v, want %s", got, want)
	}
	if fmt.Sprint(p.Free()) != "[1 2 3 4 5]" {
		t.Errorf("free %v", p.Free())
	}
	var ns []uint64
	for _, r := range p.Candidate([]int{2}) {
		ns = append(ns, r.N)
	}
	if fmt.Sprint(ns) != "[0 1 2 3 5 7 12]" {
		t.Errorf("candidate with unit 2: records %v", ns)
	}
}

func TestPlanKeepsPartsOfALongLineTogether(t *testing.T) {
	h := cassette.Header{}
	p1 := frame(2, cassette.DirOut, "", "", "")
	p1.Part = true
	p2 := frame(3, cassette.DirOut, "", "", "")
	p2.Part = true
	recs := []cassette.Record{
		{N: 0, K: cassette.KindHeader, Header: &h},
		frame(1, cassette.DirIn, "request", "a", "1"),
		p1, p2,
		frame(4, cassette.DirOut, "response", "a", "1"),
		frame(5, cassette.DirIn, "notification", "b", ""),
	}
	p := NewPlan(recs)
	if len(p.Units) != 3 {
		t.Fatalf("%d units: %+v", len(p.Units), p.Units)
	}
	if fmt.Sprint(p.Units[1].Records) != "[2 3 4]" {
		t.Errorf("the parts and the line they end: %v", p.Units[1].Records)
	}
}
